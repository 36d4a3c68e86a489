package dev.ubuf.trace;

import org.junit.jupiter.api.Test;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The trace's values (no GPU): what they accept, what they keep. */
class TraceModelTest {
    @Test
    void aSpanKeepsItsDetailInOrderAndRefusesTimesThatAreNotFinite() {
        Map<String, Object> args = new LinkedHashMap<>();
        args.put("src", "UBUF[1]");
        args.put("dst", "UBUF[0]");
        args.put("bytes", 4096L);
        Span s = new Span("comm 1", "Copy", SpanKind.COPY, 1.5, 4, args);
        args.put("later", 1);
        assertEquals(List.of("src", "dst", "bytes"), List.copyOf(s.args().keySet()), "a copy, in order");
        assertEquals(2.5, s.durationUs());
        assertEquals(Map.of(), new Span("caller", "x", SpanKind.KERNEL, 0, 1, null).args());
        assertThrows(IllegalArgumentException.class, () -> new Span("c", "x", SpanKind.GEMM, Double.NaN, 1, null));
        assertThrows(IllegalArgumentException.class,
                () -> new Span("c", "x", SpanKind.GEMM, 0, Double.POSITIVE_INFINITY, null));
    }

    @Test
    void aRankTraceRefusesASpanOnAStreamItDoesNotList() {
        Span s = new Span("fc1_fprop: comm 1", "Copy", SpanKind.COPY, 0, 1, null);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new RankTrace(0, List.of("caller"), List.of(s)));
        assertTrue(e.getMessage().contains("fc1_fprop: comm 1"), e.getMessage());
        RankTrace r = new RankTrace(1, List.of("caller", "fc1_fprop: comm 1"), List.of(s,
                new Span("caller", "gelu", SpanKind.KERNEL, 2, 7, null)));
        assertEquals(7, r.endUs());
        StepTrace t = new StepTrace("t", Map.of(), List.of(r, new RankTrace(0, List.of(), List.of())));
        assertEquals(7, t.endUs());
        RankTrace withHost = new RankTrace(1, List.of("caller", "host"), List.of(
                new Span("caller", "gelu", SpanKind.KERNEL, 2, 7, null),
                new Span("host", "gelu", SpanKind.HOST, 1, 9, null)));
        assertEquals(9, withHost.endUs(), "the timeline shows the host too");
        assertEquals(7, withHost.gpuEndUs(), "the GPU's work ends at 7");
        assertEquals(0, new RankTrace(0, List.of(), List.of()).gpuEndUs());
    }

    @Test
    void kindsHaveTheLowerCaseIdsTraceFilesUse() {
        assertEquals("gemm", SpanKind.GEMM.id());
        assertEquals("nccl", SpanKind.NCCL.id());
        assertEquals("host", SpanKind.HOST.id());
    }
}

package dev.ubuf.bench;

import dev.ubuf.trace.RankTrace;
import dev.ubuf.trace.Span;
import dev.ubuf.trace.SpanKind;
import dev.ubuf.trace.StepTrace;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The breakdown of a traced step: busy times as unions over streams, communication under GEMMs, per collective. */
class TraceBreakdownTest {
    @Test
    void busyTimesAreUnionsAndHiddenCommunicationIsTheIntersectionWithTheGemms() {
        TraceBreakdown b = TraceBreakdown.of(TraceSamples.twoRanks().ranks().get(0));
        assertEquals(150, b.stepUs(), 1e-9);
        assertEquals(48 + 50, b.gemmUs(), 1e-9, "[10,58] and [60,110]");
        assertEquals(8, b.kernelUs(), 1e-9);
        assertEquals(28 + 30, b.commUs(), 1e-9, "the copy and the NCCL call; the signal is bookkeeping");
        assertEquals(28, b.commUnderGemmUs(), 1e-9, "the copy ran under the first GEMM, NCCL under none");
        assertEquals(28 / 58.0, b.hiddenShare(), 1e-12);
        assertEquals(List.of(new TraceBreakdown.Collective("fc1_fprop", 28, 28),
                new TraceBreakdown.Collective("caller", 30, 0)), b.collectives());
        assertEquals(1.0, b.collectives().get(0).hiddenShare(), 1e-12);
        TraceBreakdown.Work gemm = b.work().get(0);
        assertEquals(SpanKind.GEMM, gemm.kind());
        assertEquals("64x128x256", gemm.name(), "both chunk GEMMs under one name");
        assertEquals(2, gemm.count());
        assertEquals(98, gemm.us(), 1e-9);
        assertEquals(28, gemm.underCommUs(), 1e-9);
        assertEquals(new TraceBreakdown.Work(SpanKind.KERNEL, "gelu", 1, 8, 0), b.work().get(1));
        List<String> text = b.describe(1);
        assertTrue(text.getFirst().contains("hidden 0.48"), text::toString);
        assertEquals(1 + 1 + 2 + 1 + 1, text.size(), "summary, collectives header and 2 rows, work header and 1 row");
    }

    @Test
    void theHostsSpansTellWhereTheCallersStreamWaitedForTheHost() {
        List<Span> spans = List.of(
                new Span("caller", "ln", SpanKind.KERNEL, 2, 30, null),
                new Span("caller", "fc1 (ring)", SpanKind.OP, 400, 1400, null),
                new Span("fc1: compute 0", "g", SpanKind.GEMM, 410, 1390, null),
                new Span("caller", "bias", SpanKind.KERNEL, 1400, 1450, null),
                new Span("caller", "bias", SpanKind.KERNEL, 1600, 1650, null),
                new Span("host", "ln", SpanKind.HOST, 1, 5, java.util.Map.of("stream", "caller")),
                // the op issued long after the LayerNorm ended: the stream sat idle from 30 to 395
                new Span("host", "fc1 (ring)", SpanKind.HOST, 395, 700, java.util.Map.of("stream", "caller")),
                // issued while the op still ran: no wait
                new Span("host", "bias", SpanKind.HOST, 710, 720, java.util.Map.of("stream", "caller")),
                // the second bias: issued at 1590, after the first ended at 1450
                new Span("host", "bias", SpanKind.HOST, 1590, 1700, java.util.Map.of("stream", "caller")),
                // a forked stream's op, issued at 720 and begun at 1500 when its fork came: it waited for the caller's
                // stream, not for the host
                new Span("side", "wgrad (bulk)", SpanKind.OP, 1500, 1640, null),
                new Span("host", "wgrad (bulk)", SpanKind.HOST, 720, 730, java.util.Map.of("stream", "side")));
        TraceBreakdown b = TraceBreakdown.of(new RankTrace(0, List.of("caller", "fc1: compute 0", "side", "host"),
                spans));
        assertEquals(1650, b.stepUs(), 1e-9, "the GPU's last span; the host's ends later");
        TraceBreakdown.HostWait h = b.host();
        assertEquals(1700, h.issuedUs(), 1e-9);
        assertEquals(1 + (395 - 30) + (1590 - 1450), h.waitedUs(), 1e-9);
        assertEquals(List.of(new TraceBreakdown.Waited("caller", "fc1 (ring)", 365),
                new TraceBreakdown.Waited("caller", "bias", 140), new TraceBreakdown.Waited("caller", "ln", 1)),
                h.longest());
        assertEquals(1030 - 0, b.gemmUs() + 50, 1e-9, "HOST spans are no GPU work");
        assertTrue(b.describe(1).get(1).contains("waited 506 us for the host (longest before: fc1 (ring) 365 us"),
                b.describe(1)::toString);
        assertEquals(null, TraceBreakdown.of(TraceSamples.twoRanks().ranks().get(0)).host(), "no host spans: none");
    }

    @Test
    void overlappingSpansOfOneKindCountOnce() {
        List<Span> spans = List.of(
                new Span("a: compute 0", "g1", SpanKind.GEMM, 0, 100, null),
                new Span("a: compute 1", "g2", SpanKind.GEMM, 50, 150, null),
                new Span("a: comm 0", "c1", SpanKind.COPY, 90, 200, null),
                new Span("b: comm 0", "c2", SpanKind.REDUCE, 95, 120, null));
        TraceBreakdown b = TraceBreakdown.of(new RankTrace(3, List.of("a: compute 0", "a: compute 1", "a: comm 0",
                "b: comm 0"), spans));
        assertEquals(150, b.gemmUs(), 1e-9);
        assertEquals(110, b.commUs(), 1e-9);
        assertEquals(60, b.commUnderGemmUs(), 1e-9, "[90,150]");
        assertEquals(List.of(new TraceBreakdown.Collective("a", 110, 60), new TraceBreakdown.Collective("b", 25, 25)),
                b.collectives());
    }

    @Test
    void aKernelSpanAroundACollectiveCountsOnlyItsOwnTime() {
        List<Span> spans = List.of(
                new Span("caller", "fp8 amax reduction and scale update", SpanKind.KERNEL, 0, 100, null),
                new Span("caller", "NCCL AllReduce", SpanKind.NCCL, 10, 70, null));
        TraceBreakdown b = TraceBreakdown.of(new RankTrace(0, List.of("caller"), spans));
        assertEquals(40, b.kernelUs(), 1e-9);
        assertEquals(60, b.commUs(), 1e-9);
    }

    @Test
    void aTraceFileReadsBackAsTheStepItWasWrittenFrom(@TempDir Path dir) throws Exception {
        StepTrace t = TraceSamples.twoRanks();
        Path file = dir.resolve("t.json");
        ChromeTrace.write(t, file);
        StepTrace back = ChromeTrace.read(file);
        assertEquals(t.title(), back.title());
        assertEquals(t.ranks().size(), back.ranks().size());
        for (int r = 0; r < t.ranks().size(); r++) {
            RankTrace a = t.ranks().get(r);
            RankTrace b = back.ranks().get(r);
            assertEquals(a.rank(), b.rank());
            assertEquals(a.streams(), b.streams());
            assertEquals(a.spans().size(), b.spans().size());
            for (Span s : a.spans()) {
                assertTrue(b.spans().stream().anyMatch(x -> x.name().equals(s.name()) && x.kind() == s.kind()
                        && x.stream().equals(s.stream()) && Math.abs(x.startUs() - s.startUs()) < 1e-3
                        && Math.abs(x.endUs() - s.endUs()) < 1e-3
                        && x.args().toString().equals(s.args().toString())), () -> s + " not read back: " + b);
            }
            assertEquals(TraceBreakdown.of(a), TraceBreakdown.of(b));
        }
        Files.writeString(dir.resolve("no.json"), "{\"traceEvents\": 3}");
        assertThrows(IllegalArgumentException.class, () -> ChromeTrace.read(dir.resolve("no.json")));
    }

    /** A step traced on 4 H100s (committed under results/): every rank's numbers are consistent with each other. */
    @Test
    void aRealTracedStepBreaksDownConsistently() throws Exception {
        Path file = Path.of("results/2026-11-27-h100x4-demo-ff65685/demo-tp4-70b-trace.trace.json");
        StepTrace t = ChromeTrace.read(file);
        assertEquals(4, t.ranks().size());
        for (RankTrace r : t.ranks()) {
            TraceBreakdown b = TraceBreakdown.of(r);
            assertTrue(b.gemmUs() > 0 && b.gemmUs() <= b.stepUs(), b::toString);
            assertTrue(b.commUnderGemmUs() <= b.commUs() + 1e-6, b::toString);
            assertEquals(b.commUs(), b.collectives().stream().mapToDouble(TraceBreakdown.Collective::commUs).sum(),
                    1e-6 * b.commUs() + 1e-6 * b.collectives().size() + 50,
                    "collectives rarely overlap each other in time; their sum is close to the union");
            assertTrue(b.collectives().stream().map(TraceBreakdown.Collective::name).toList()
                    .containsAll(List.of("fc1_fprop", "fc2_fprop", "fc2_dgrad")), b::toString);
            for (TraceBreakdown.Collective c : b.collectives()) {
                assertTrue(c.underGemmUs() <= c.commUs() + 1e-6, c::toString);
            }
        }
    }
}

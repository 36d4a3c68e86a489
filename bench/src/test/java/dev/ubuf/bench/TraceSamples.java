package dev.ubuf.bench;

import dev.ubuf.trace.RankTrace;
import dev.ubuf.trace.Span;
import dev.ubuf.trace.SpanKind;
import dev.ubuf.trace.StepTrace;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** A made-up traced step in the shape the demo produces: an AG ring op whose copies run under its GEMMs. */
final class TraceSamples {
    static final List<String> STREAMS = List.of("caller", "side", "fc1_fprop: compute 0", "fc1_fprop: comm 1");

    private TraceSamples() {
    }

    static StepTrace twoRanks() {
        List<RankTrace> ranks = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            double o = 3 * r; // rank 1 a little later
            List<Span> spans = new ArrayList<>();
            // Deliberately not in time order: the writer sorts.
            spans.add(new Span("fc1_fprop: compute 0", "Gemm OUTPUT[1] = 64x128x256", SpanKind.GEMM, o + 60, o + 110,
                    Map.of("m", 64, "n", 128, "k", 256)));
            spans.add(new Span("fc1_fprop: compute 0", "Gemm OUTPUT[0] = 64x128x256", SpanKind.GEMM, o + 10, o + 58,
                    Map.of("m", 64, "n", 128, "k", 256)));
            spans.add(new Span("fc1_fprop: comm 1", "Copy UBUF[1] -> UBUF[0]", SpanKind.COPY, o + 12, o + 40,
                    Map.of("bytes", 32768L, "src", "UBUF[1]", "dst", "UBUF[0]")));
            spans.add(new Span("fc1_fprop: comm 1", "Signal peer 1 flag 0", SpanKind.SIGNAL, o + 40, o + 41, null));
            spans.add(new Span("fc1_fprop: compute 0", "WaitSignal flag 0 count 1", SpanKind.WAIT, o + 58, o + 60,
                    Map.of("flag", 0, "from", 1 - r)));
            spans.add(new Span("caller", "fc1_fprop (ring)", SpanKind.OP, o + 8, o + 112, Map.of()));
            spans.add(new Span("caller", "gelu", SpanKind.KERNEL, o + 112, o + 120, null));
            spans.add(new Span("side", "NCCL AllReduce 2x64", SpanKind.NCCL, o + 120, o + 150,
                    Map.of("bytes", 512L)));
            ranks.add(new RankTrace(r, STREAMS, spans));
        }
        return new StepTrace("test step", Map.of("tp", 2, "clock_alignment", "step-start event after a barrier"),
                ranks);
    }
}

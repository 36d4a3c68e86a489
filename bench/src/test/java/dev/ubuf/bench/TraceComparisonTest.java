package dev.ubuf.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ubuf.trace.RankTrace;
import dev.ubuf.trace.Span;
import dev.ubuf.trace.SpanKind;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The overlap step against the compute alone, span by span on the caller's stream. */
class TraceComparisonTest {
    @Test
    void pairsTheCallerSpansByNameAndAccountsForTheWholeDifference() {
        RankTrace overlap = new RankTrace(0, List.of("caller", "fc1_fprop: compute 0", "side", "host"), List.of(
                new Span("caller", "fc1.ln forward", SpanKind.KERNEL, 5, 40, null),
                new Span("caller", "fc1_fprop (ring)", SpanKind.OP, 60, 1460, null),
                new Span("fc1_fprop: compute 0", "Gemm", SpanKind.GEMM, 70, 1450, null),
                new Span("caller", "swiglu", SpanKind.KERNEL, 1460, 1600, null),
                new Span("caller", "swiglu", SpanKind.KERNEL, 1600, 1700, null),
                new Span("side", "fc1_dgrad (bulk)", SpanKind.OP, 1500, 1650, null),
                new Span("caller", "NCCL AllReduce 2x4096", SpanKind.NCCL, 1700, 1780, null),
                new Span("host", "swiglu", SpanKind.HOST, 1000, 1100, null)));
        RankTrace alone = new RankTrace(0, List.of("caller"), List.of(
                new Span("caller", "fc1.ln forward", SpanKind.KERNEL, 5, 40, null),
                new Span("caller", "fc1_fprop GEMMs only", SpanKind.GEMM, 45, 1345, null),
                new Span("caller", "swiglu", SpanKind.KERNEL, 1345, 1485, null),
                new Span("caller", "swiglu", SpanKind.KERNEL, 1485, 1575, null),
                new Span("caller", "sgd", SpanKind.KERNEL, 1575, 1600, null)));
        TraceComparison c = TraceComparison.of(overlap, alone);
        assertEquals(1780, c.overlapUs(), 1e-9);
        assertEquals(1600, c.computeUs(), 1e-9);
        assertEquals(5 + 20, c.overlapIdleUs(), 1e-9, "[0,5) and [40,60)");
        assertEquals(5 + 5, c.computeIdleUs(), 1e-9);
        assertEquals(List.of(new TraceComparison.Pair("fc1.ln forward", 35, 35),
                new TraceComparison.Pair("fc1_fprop", 1400, 1300), new TraceComparison.Pair("swiglu", 140, 140),
                new TraceComparison.Pair("swiglu", 100, 90)), c.pairs());
        assertEquals(List.of("NCCL AllReduce 2x4096"), c.overlapOnly().stream().map(Span::name).toList());
        assertEquals(List.of("sgd"), c.computeOnly().stream().map(Span::name).toList());
        double pairs = c.pairs().stream().mapToDouble(TraceComparison.Pair::differenceUs).sum();
        assertEquals(c.overlapUs() - c.computeUs(), pairs + 80 - 25 + (c.overlapIdleUs() - c.computeIdleUs()), 1e-9,
                "the step's difference is the pairs', the unpaired spans' and the idle time's");
        List<String> text = c.describe(1, "overlap");
        assertTrue(text.getFirst().contains("overlap step 1780 us against the compute alone 1600 us (+180 us)"),
                text::toString);
        assertTrue(text.get(2).contains("fc1_fprop") && text.get(2).contains("+100"), text::toString);
        assertEquals(2 + 1 + 1 + 1, text.size(), "summary, header, top pair, one span each side alone");
    }

    @Test
    void namesLoseTheirMethodAndTheComputeAlonesSuffix() {
        assertEquals("fc2_fprop", TraceComparison.key("fc2_fprop (ring:sub=2,lowp=1)"));
        assertEquals("fc2_fprop", TraceComparison.key("fc2_fprop GEMMs only"));
        assertEquals("fc1 bias", TraceComparison.key("fc1 bias"));
        assertEquals("(x)", TraceComparison.key("(x)"));
    }

    private static RankTrace step(int rank, double lnUs, double opUs, String opName, double tailUs) {
        return new RankTrace(rank, List.of("caller"), List.of(
                new Span("caller", "fc1.ln forward", SpanKind.KERNEL, 0, lnUs, null),
                new Span("caller", opName, SpanKind.OP, lnUs, lnUs + opUs, null),
                new Span("caller", "swiglu", SpanKind.KERNEL, lnUs + opUs, lnUs + opUs + tailUs, null)));
    }

    @Test
    void everyRanksDifferencesSideBySideTheLargestFirst() {
        // rank 1's op waits 100 us longer than rank 0's for its peer; rank 0's LayerNorm is 10 us slower than alone;
        // rank 1 has an extra span the compute alone lacks (counted whole), and rank 2 has no overlap trace.
        RankTrace o0 = step(0, 40, 1100, "fc2_dgrad (aggregate:cs=1)", 50);
        RankTrace o1 = new RankTrace(1, List.of("caller"), List.of(
                new Span("caller", "fc1.ln forward", SpanKind.KERNEL, 0, 30, null),
                new Span("caller", "fc2_dgrad (aggregate:cs=1)", SpanKind.OP, 30, 1230, null),
                new Span("caller", "swiglu", SpanKind.KERNEL, 1230, 1280, null),
                new Span("caller", "NCCL AllReduce", SpanKind.NCCL, 1280, 1300, null)));
        List<RankTrace> alone = List.of(step(0, 30, 1000, "fc2_dgrad GEMMs only", 50),
                step(1, 30, 1000, "fc2_dgrad GEMMs only", 50), step(2, 30, 1000, "fc2_dgrad GEMMs only", 50));
        List<String> t = TraceComparison.acrossRanks(List.of(o0, o1), alone, 2, "overlap");
        assertEquals(5, t.size(), t::toString);
        assertTrue(t.get(0).matches("\\s+overlap us over alone\\s+rank 0\\s+rank 1"), t.get(0));
        assertTrue(t.get(1).matches("\\s+step\\s+\\+110\\s+\\+220"), t.get(1));
        assertTrue(t.get(2).matches("\\s+caller idle\\s+\\+0\\s+\\+0"), t.get(2));
        assertTrue(t.get(3).matches("\\s+fc2_dgrad\\s+\\+100\\s+\\+200"), t.get(3));
        assertTrue(t.get(4).matches("\\s+NCCL AllReduce\\s+\\+0\\s+\\+20"), t.get(4));
        assertTrue(TraceComparison.acrossRanks(List.of(o0), List.of(alone.get(2)), 2, "overlap").isEmpty(),
                "no rank in both: nothing to compare");
    }
}

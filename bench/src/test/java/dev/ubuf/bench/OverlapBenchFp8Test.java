package dev.ubuf.bench;

import dev.ubuf.ag.AgShape;
import dev.ubuf.op.Collective;
import dev.ubuf.op.Fp8Operands;
import dev.ubuf.op.MethodRegistry;
import dev.ubuf.op.OverlapShape;
import dev.ubuf.rs.RsShape;
import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** `ubuf bench ag|rs --fp8`: the shapes and variants the benchmark checks before any GPU work. */
class OverlapBenchFp8Test {
    @Test
    void fp8ShapesPassTheBenchmarksChecksAndTimeTheRightCommunication() {
        OverlapShape ag = new AgShape(2, 1024, 256, 512, DType.BF16).withFp8(Fp8Operands.E4M3);
        OverlapShape rs = new RsShape(2, 1024, 256, 512, DType.BF16, true).withFp8(Fp8Operands.E4M3);
        OverlapBench.check(MethodRegistry.load(), List.of(ag, rs), Map.of(
                Collective.ALL_GATHER, List.of("ring", "aggregate", "oneshot", "auto"),
                Collective.REDUCE_SCATTER, List.of("ring", "pipeline", "oneshot", "auto")));
        assertEquals(ag, OverlapBench.commShape(ag), "an FP8 AG gathers FP8 bytes");
        OverlapShape rsComm = OverlapBench.commShape(rs);
        assertTrue(rsComm.fp8().isEmpty(), "an FP8 RS reduce-scatters partials of the output's type");
        assertEquals(DType.BF16, rsComm.dtype());
        assertEquals(List.of("bulk"), OverlapBench.commVariants(ag));
        assertEquals(List.of("bulk", "bulk:stage=1"), OverlapBench.commVariants(rs),
                "a reduce-scatter's communication alone is the faster of the pull-reduce kernel and the staged copies");
        OverlapShape rs4 = new RsShape(4, 1024, 256, 512, DType.BF16, true);
        assertEquals(List.of("bulk", "bulk:stage=1", "bulk:serial=1,stage=1"), OverlapBench.commVariants(rs4),
                "from tp 3 on also the staged copies one peer at a time, as scatter:serial=1 pushes");
        OverlapBench.check(MethodRegistry.load(), List.of(rs4), Map.of(Collective.REDUCE_SCATTER,
                List.of("scatter:serial=1", "auto")));
    }
}

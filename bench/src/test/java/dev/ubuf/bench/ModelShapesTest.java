package dev.ubuf.bench;

import dev.ubuf.op.Collective;
import dev.ubuf.op.OverlapShape;
import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The sweep's GEMMs are the tensor-parallel GEMMs of the named layers, split over tp as Megatron splits them. */
class ModelShapesTest {
    @Test
    void llama3_8bAtTp2HasTheFourGemmsOfItsLayer() {
        List<ModelShapes.Gemm> g = ModelShapes.SWEEP.getFirst().gemms(2, 8192, DType.BF16);
        assertEquals(List.of("qkv_fprop", "proj_fprop", "fc1_fprop", "fc2_fprop"),
                g.stream().map(ModelShapes.Gemm::name).toList());
        // QKV: 32 query + 2 x 8 KV heads of 128 = 6144 columns, 3072 per rank
        assertShape(g.get(0).shape(), Collective.ALL_GATHER, 8192, 4096, 3072);
        // proj: K = 32 x 128 / 2 per rank, N = hidden
        assertShape(g.get(1).shape(), Collective.REDUCE_SCATTER, 8192, 2048, 4096);
        // SwiGLU FC1 = 2 x 14336, half per rank
        assertShape(g.get(2).shape(), Collective.ALL_GATHER, 8192, 4096, 14336);
        assertShape(g.get(3).shape(), Collective.REDUCE_SCATTER, 8192, 7168, 4096);
    }

    @Test
    void anExpertMlpHasNoAttentionAndGpt3HasAPlainGeluMlp() {
        ModelShapes mixtral = ModelShapes.SWEEP.get(3);
        assertEquals(2, mixtral.gemms(2, 1024, DType.BF16).size());
        List<ModelShapes.Gemm> gpt3 = ModelShapes.SWEEP.get(4).gemms(2, 1024, DType.BF16);
        assertShape(gpt3.get(0).shape(), Collective.ALL_GATHER, 1024, 12288, 3 * 12288 / 2);
        assertShape(gpt3.get(2).shape(), Collective.ALL_GATHER, 1024, 12288, 49152 / 2);
    }

    @Test
    void theSweepCoversEveryModelAtEveryTokenCountAndTheSmallOnesOnce() {
        List<ModelShapes.Gemm> all = ModelShapes.sweep(2, DType.BF16, ModelShapes.TOKENS);
        assertEquals((4 + 4 + 4 + 2 + 4) * 5 + 4 * 2, all.size());
    }

    private static void assertShape(OverlapShape s, Collective c, long m, long k, long n) {
        assertEquals(c, s.collective());
        assertEquals(List.of(m, k, n), List.of(s.m(), s.k(), s.n()), s.key());
    }
}

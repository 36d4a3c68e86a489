package dev.ubuf.gemm;

import static dev.ubuf.tensor.DType.BF16;
import static dev.ubuf.tensor.DType.FP16;
import static dev.ubuf.tensor.DType.FP32;
import static dev.ubuf.tensor.DType.FP8_E4M3;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The bias epilogue as cuBLASLt sees it (through the fake libcublasLt, which records the descriptor's attributes and
 * refuses the bias types cuBLAS documents as unsupported): the epilogue, the bias type and pointer set before the
 * heuristic and at every run, its own plan, its own tuning key, and bad biases refused before any cuBLASLt call.
 */
class BiasEpilogueTest {
    static final long A = 0x7f00_0000_0000L;
    static final long B = 0x7f00_0010_0000L;
    static final long C = 0x7f00_0020_0000L;
    static final long BIAS = 0x7f00_0030_0000L;
    static final long WORKSPACE = 0x7f00_0100_0000L;
    static final long STREAM = 0x5000;

    @RegisterExtension
    static final FakeGemmRunner gemm = FakeGemmRunner.plain(WORKSPACE);

    @Test
    void aBiasReachesCublasLtAsTheBiasEpilogueInTheResultsTypeBeforeTheHeuristicAndAtEveryRun() {
        GemmSpec spec = GemmSpec.of(BF16, BF16, 64, 32, 48, false, false);
        gemm.runner().run(spec, A, B, C, C, 1f, 1f, null, BIAS, STREAM, CandidateBench.NONE);
        String bias = "epilogue=4 bias=0x" + Long.toHexString(BIAS) + "/14"; // CUBLASLT_EPILOGUE_BIAS, CUDA_R_16BF
        assertTrue(gemm.lastCall().contains(bias), gemm.lastCall());
        assertTrue(gemm.lastHeuristic().contains(bias),
                "the heuristic chose with the epilogue set: " + gemm.lastHeuristic());
        // Another bias vector for the same kind: the cached plan is pointed at it.
        gemm.runner().run(spec, A, B, C, C, 1f, 1f, null, BIAS + 256, STREAM, CandidateBench.NONE);
        assertTrue(gemm.lastCall().contains("bias=0x" + Long.toHexString(BIAS + 256) + "/14"), gemm.lastCall());
        assertEquals(1, gemm.runner().planCount());
        // Without a bias: another kind (another descriptor), whose epilogue is the default.
        gemm.runner().run(spec, A, B, C, 1f, 1f, STREAM);
        assertTrue(gemm.lastCall().contains("epilogue=1 bias=(nil)/-1"), gemm.lastCall());
        assertEquals(2, gemm.runner().planCount());
        // An fp16 result takes an fp16 bias (CUDA_R_16F = 2); an FP8 GEMM writing bf16 a bf16 one.
        gemm.runner().run(GemmSpec.of(FP16, FP16, 64, 32, 48, false, false), A, B, C, C, 1f, 0f, null, BIAS, STREAM,
                CandidateBench.NONE);
        assertTrue(gemm.lastCall().contains("epilogue=4 bias=0x" + Long.toHexString(BIAS) + "/2"), gemm.lastCall());
        gemm.runner().run(GemmSpec.fp8(FP8_E4M3, FP8_E4M3, BF16, 64, 32, 48), A, B, C, C, 1f, 0f,
                Gemm.Fp8Scales.of(0x7e00_0000_0010L, 0x7e00_0000_0020L), BIAS, STREAM, CandidateBench.NONE);
        assertTrue(gemm.lastCall().contains("epilogue=4 bias=0x" + Long.toHexString(BIAS) + "/14"), gemm.lastCall());
    }

    @Test
    void aBiasThatCannotBeAddedIsRefusedBeforeCublasLt() {
        GemmSpec fp32 = GemmSpec.of(BF16, FP32, 64, 32, 48, false, false);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> gemm.runner().run(fp32, A, B, C, C, 1f, 0f, null, BIAS, STREAM, CandidateBench.NONE));
        assertTrue(e.getMessage().contains("needs a bf16 or fp16 result"), e.getMessage());
        GemmSpec bf16 = GemmSpec.of(BF16, BF16, 64, 32, 48, false, false);
        e = assertThrows(IllegalArgumentException.class,
                () -> gemm.runner().prepare(bf16, A, B, C, C, 0f, null, BIAS + 1, CandidateBench.NONE));
        assertTrue(e.getMessage().contains("bias at 0x"), e.getMessage());
        assertEquals(0, gemm.runner().planCount(), "nothing reached cuBLASLt");
    }

    @Test
    void theFakeRefusesABiasTypeCublasDocumentsAsUnsupported() {
        // An FP8 GEMM writing fp32 takes a 16-bit bias, not one in D's type.
        GemmSpec spec = GemmSpec.fp8(FP8_E4M3, FP8_E4M3, FP32, 64, 32, 48);
        MatmulPlan.Key key = new MatmulPlan.Key(spec, 256, 256, 256, false, false, false, 256);
        GemmException e = assertThrows(GemmException.class, () -> MatmulPlan.choose(gemm.library(),
                gemm.handle().address(), key, Gemm.Fp8Scales.of(0x7e00_0000_0010L, 0x7e00_0000_0020L), BIAS,
                GemmRunner.RECOMMENDED_WORKSPACE_BYTES, (d, candidates) -> GemmTuner.Choice.FIRST));
        assertTrue(e.getMessage().contains("has no algorithm") && e.getMessage().contains("a bias epilogue"),
                e.getMessage());
        // A key and a call that disagree on the bias are a bug of the caller.
        MatmulPlan.Key none = new MatmulPlan.Key(GemmSpec.of(BF16, BF16, 64, 32, 48, false, false), 256, 256, 256);
        assertThrows(IllegalArgumentException.class, () -> MatmulPlan.choose(gemm.library(), gemm.handle().address(),
                none, null, BIAS, GemmRunner.RECOMMENDED_WORKSPACE_BYTES, (d, candidates) -> GemmTuner.Choice.FIRST));
    }

    @Test
    void aBiasIsAWordOfTheTuningKeyOnlyWhereThereIsOne() {
        GemmSpec spec = GemmSpec.of(BF16, BF16, 64, 32, 48, false, true);
        MatmulPlan.Key with = new MatmulPlan.Key(spec, 256, 256, 16, true, false, false, 64);
        String text = TuningFile.formatKey(with);
        assertTrue(text.endsWith(" bias=64"), text);
        assertEquals(with, TuningFile.parseKey(text));
        MatmulPlan.Key without = new MatmulPlan.Key(spec, 256, 256, 16, true);
        assertFalse(TuningFile.formatKey(without).contains("bias"), "other GEMMs' keys are as before");
        assertEquals(without, TuningFile.parseKey(TuningFile.formatKey(without)));
    }
}

package dev.ubuf.gemm;

import static dev.ubuf.tensor.DType.BF16;
import static dev.ubuf.tensor.DType.FP16;
import static dev.ubuf.tensor.DType.FP32;
import static dev.ubuf.tensor.DType.FP8_E4M3;
import static dev.ubuf.tensor.DType.FP8_E5M2;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ubuf.tensor.DType;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * FP8 GEMMs as cuBLASLt receives them, against the C stand-in fake_cublaslt.c, which records the layouts' types and
 * the matmul descriptor's attributes: the caller's row-major {@code C = A * B^T} arrives as column-major TN with the
 * operands (and their scales) swapped, compute type 32F and scale type 32F; an FP8 output is D of fp8 with C described
 * as bf16 and never read; each call's scale pointers reach cuBLASLt; and every combination cuBLASLt does not run is
 * rejected before any cuBLASLt call, with a message that says what to change.
 */
class Fp8GemmRunnerTest {
    static final long A = 0x7f00_0000_0000L;
    static final long B = 0x7f00_0010_0000L;
    static final long C = 0x7f00_0020_0000L;
    static final long WORKSPACE = 0x7f00_0100_0000L;
    static final long STREAM = 0x5000;
    static final long SCALE_A = 0x7e00_0000_0010L;
    static final long SCALE_B = 0x7e00_0000_0020L;
    static final long SCALE_D = 0x7e00_0000_0030L;
    static final long AMAX_D = 0x7e00_0000_0040L;
    static final Gemm.Fp8Scales AB = Gemm.Fp8Scales.of(SCALE_A, SCALE_B);

    @RegisterExtension
    static final FakeGemmRunner gemm = FakeGemmRunner.plain(WORKSPACE);

    static String heuristic() throws Throwable {
        return gemm.lastHeuristic();
    }

    static String hex(long address) {
        return address == 0 ? "(nil)" : "0x" + Long.toHexString(address);
    }

    /** What the fake prints for the types, compute/scale type, transposes, fast accumulation and scale pointers. */
    static String seen(int typeA, int typeB, int typeC, int typeD, int fastAcc, long sa, long sb, long sd, long amax) {
        return "types=" + typeA + "/" + typeB + "/" + typeC + "/" + typeD + " compute=68 scale=0 trans=1/0 fastacc="
                + fastAcc + " scales=" + hex(sa) + "/" + hex(sb) + "/" + hex(sd) + "/" + hex(amax);
    }

    @Test
    void aRowMajorFp8GemmReachesCublasLtAsColumnMajorTnWithOperandsAndScalesSwapped() throws Throwable {
        GemmSpec spec = GemmSpec.fp8(FP8_E4M3, FP8_E4M3, BF16, 64, 32, 48);
        gemm.runner().run(spec, A, B, C, 1f, 0f, new Gemm.Fp8Scales(SCALE_A, SCALE_B, 0, 0), STREAM);
        String call = gemm.lastCall();
        // cuBLASLt's A is the caller's B (E4M3 = 28) with the caller's B scale; C and D are bf16 (14), in place.
        assertTrue(call.contains(seen(28, 28, 14, 14, 0, SCALE_B, SCALE_A, 0, 0)), call);
        assertTrue(call.contains("a=" + hex(B) + " b=" + hex(A) + " c=" + hex(C) + " d=" + hex(C)), call);
        assertTrue(heuristic().contains(seen(28, 28, 14, 14, 0, SCALE_B, SCALE_A, 0, 0)),
                "the heuristic chose with the scale pointers set: " + heuristic());
        // amax_d exists for fp8 outputs only (cuBLASLt 13.1 rejects it for bf16): refused before cuBLASLt sees it.
        var e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> gemm.runner().run(spec, A, B, C, 1f, 0f, new Gemm.Fp8Scales(SCALE_A, SCALE_B, 0, AMAX_D),
                        STREAM));
        assertTrue(e.getMessage().contains("amax_d is computed only for an fp8 output"), e.getMessage());
        assertEquals(call, gemm.lastCall(), "nothing more reached cuBLASLt");
    }

    @Test
    void scalePointersOffSixteenBytesAreRefusedBeforeCublasLt() throws Throwable {
        GemmSpec spec = GemmSpec.fp8(FP8_E4M3, FP8_E4M3, BF16, 64, 32, 48);
        gemm.runner().run(spec, A, B, C, 1f, 0f, AB, STREAM);
        String call = gemm.lastCall();
        // Scales packed 4 bytes apart in one table, as the FP8 layers first kept them: cuBLASLt refused every matmul.
        for (long[] scales : new long[][]{{SCALE_A + 4, SCALE_B}, {SCALE_A, SCALE_B + 8}}) {
            var e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                    () -> gemm.runner().run(spec, A, B, C, 1f, 0f, Gemm.Fp8Scales.of(scales[0], scales[1]), STREAM));
            assertTrue(e.getMessage().contains("16-byte aligned (cuBLASLt refuses others)"), e.getMessage());
            org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class, () -> gemm.runner().prepare(
                    spec, A, B, C, 0f, Gemm.Fp8Scales.of(scales[0], scales[1]), CandidateBench.NONE));
        }
        assertEquals(call, gemm.lastCall(), "nothing more reached cuBLASLt");
    }

    @Test
    void theFakeRefusesAMisalignedScaleAsCublasLtDoes() {
        GemmSpec spec = GemmSpec.fp8(FP8_E4M3, FP8_E4M3, BF16, 64, 32, 48);
        MatmulPlan.Key key = new MatmulPlan.Key(spec, 256, 256, 256);
        try (MatmulPlan plan = MatmulPlan.choose(gemm.library(), gemm.handle().address(), key,
                Gemm.Fp8Scales.of(SCALE_A + 4, SCALE_B), GemmRunner.RECOMMENDED_WORKSPACE_BYTES,
                (d, candidates) -> GemmTuner.Choice.FIRST);
             java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
            MemorySegment one = arena.allocateFrom(java.lang.foreign.ValueLayout.JAVA_FLOAT, 1f);
            MatmulDescriptors d = plan.descriptors();
            GemmException e = org.junit.jupiter.api.Assertions.assertThrows(GemmException.class,
                    () -> gemm.library().matmul(gemm.handle().address(), d.matmulDesc(), one, B, d.aLayout(), A,
                            d.bLayout(), one, C, d.cLayout(), C, d.dLayout(), plan.algo(), WORKSPACE,
                            GemmRunner.RECOMMENDED_WORKSPACE_BYTES, STREAM));
            assertTrue(e.getMessage().contains("CUBLAS_STATUS_NOT_SUPPORTED"), e.getMessage());
        }
    }

    @Test
    void gradientsInE5m2TimesE4m3KeepEachOperandsOwnTypeAndScale() {
        gemm.runner().run(GemmSpec.fp8(FP8_E5M2, FP8_E4M3, BF16, 64, 32, 48), A, B, C, 1f, 0f, AB, STREAM);
        assertTrue(gemm.lastCall().contains(seen(28, 29, 14, 14, 0, SCALE_B, SCALE_A, 0, 0)), gemm.lastCall());
        gemm.runner().run(GemmSpec.fp8(FP8_E4M3, FP8_E5M2, FP32, 64, 32, 48), A, B, C, 1f, 1f, AB, STREAM);
        assertTrue(gemm.lastCall().contains(seen(29, 28, 0, 0, 0, SCALE_B, SCALE_A, 0, 0)), gemm.lastCall());
    }

    @Test
    void anFp8OutputIsDInFp8WithCDescribedAsBf16AndNotPassed() {
        gemm.runner().run(GemmSpec.fp8(FP8_E4M3, FP8_E4M3, FP8_E4M3, 64, 32, 48), A, B, C, 1f, 0f,
                new Gemm.Fp8Scales(SCALE_A, SCALE_B, SCALE_D, AMAX_D), STREAM);
        String call = gemm.lastCall();
        assertTrue(call.contains(seen(28, 28, 14, 28, 0, SCALE_B, SCALE_A, SCALE_D, AMAX_D)), call);
        assertTrue(call.contains(" c=(nil) d=" + hex(C)), call);
    }

    @Test
    void fastAccumulationIsAskedForOnlyWhenTheSpecSaysSo() {
        GemmSpec spec = GemmSpec.fp8(FP8_E4M3, FP8_E4M3, BF16, 64, 32, 48);
        gemm.runner().run(spec.withFp8FastAccumulation(true), A, B, C, 1f, 0f, AB, STREAM);
        assertTrue(gemm.lastCall().contains(" fastacc=1 "), gemm.lastCall());
        gemm.runner().run(GemmSpec.of(BF16, BF16, 64, 32, 48, false, true), A, B, C, 1f, 0f, STREAM);
        assertTrue(gemm.lastCall().contains(" fastacc=-1 scales=(nil)/(nil)/(nil)/(nil)"),
                "a bf16 GEMM sets no FP8 attribute: " + gemm.lastCall());
    }

    @Test
    void aCachedPlanTakesEachCallsScalesButAmaxOrScaleDMakeAnotherPlan() {
        GemmSpec spec = GemmSpec.fp8(FP8_E4M3, FP8_E4M3, FP8_E4M3, 64, 32, 48);
        gemm.runner().run(spec, A, B, C, 1f, 0f, AB, STREAM);
        Gemm.Fp8Scales other = Gemm.Fp8Scales.of(SCALE_A + 0x100, SCALE_B + 0x100);
        gemm.runner().run(spec, A, B, C, 1f, 0f, other, STREAM);
        assertEquals(1, gemm.runner().planCount());
        assertTrue(gemm.lastCall().contains(seen(28, 28, 14, 28, 0, SCALE_B + 0x100, SCALE_A + 0x100, 0, 0)),
                gemm.lastCall());
        gemm.runner().run(spec, A, B, C, 1f, 0f, new Gemm.Fp8Scales(SCALE_A, SCALE_B, 0, AMAX_D), STREAM);
        gemm.runner().run(spec, A, B, C, 1f, 0f, new Gemm.Fp8Scales(SCALE_A, SCALE_B, SCALE_D, AMAX_D), STREAM);
        assertEquals(3, gemm.runner().planCount(), "amax_d and scale_d change which kernels cuBLASLt may pick");
    }

    @Test
    void theTuningKeyOfAnFp8GemmSaysSoAndReadsBack() {
        GemmSpec spec = GemmSpec.fp8(FP8_E5M2, FP8_E4M3, FP8_E5M2, 64, 32, 48).withFp8FastAccumulation(true);
        MatmulPlan.Key key = new MatmulPlan.Key(spec, 256, 256, 16, false, true, true);
        String text = TuningFile.formatKey(key);
        assertEquals("ab=FP8_E5M2/FP8_E4M3 c=FP8_E5M2 m=64 n=32 k=48 transA=0 transB=1 lda=48 ldb=48 ldc=32 sms=0 "
                + "tf32=0 accumulate=0 align=256/256/16 fp8acc=1 scaleD=1 amaxD=1", text);
        assertEquals(key, TuningFile.parseKey(text));
        MatmulPlan.Key bf16 = new MatmulPlan.Key(GemmSpec.of(BF16, BF16, 64, 32, 48, false, true), 256, 256, 16);
        assertEquals(bf16, TuningFile.parseKey(TuningFile.formatKey(bf16)));
        assertTrue(!TuningFile.formatKey(bf16).contains("fp8"), "other GEMMs' keys are as before");
    }

    static void assertRejected(String expected, Executable call) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
        assertTrue(e.getMessage().contains(expected), "expected '" + expected + "' in: " + e.getMessage());
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "FP8_E4M3|FP8_E4M3|BF16|64|32|40|false|true|an fp8 GEMM needs K to be a multiple of 16, got 40",
            "FP8_E4M3|FP8_E4M3|BF16|64|32|48|false|false|must be C = A * B^T",
            "FP8_E4M3|FP8_E4M3|BF16|64|32|48|true|true|transA=true, transB=true",
            "FP8_E5M2|FP8_E5M2|BF16|64|32|48|false|true|no E5M2 x E5M2 GEMM",
            "FP8_E4M3|BF16|BF16|64|32|48|false|true|needs both operands in fp8",
            "FP8_E4M3|FP8_E4M3|FP8_E5M2|64|32|48|false|true|fp8e5m2 only when an input is E5M2",
            "FP8_E4M3|FP8_E4M3|BF16|64|36|48|false|true|N to be a multiple of 8 for a bf16 output",
            "FP8_E4M3|FP8_E4M3|FP32|64|34|48|false|true|N to be a multiple of 4 for a fp32 output",
            "FP8_E4M3|FP8_E4M3|FP8_E4M3|64|40|48|false|true|N to be a multiple of 16 for a fp8e4m3 output",
    })
    void layoutsAndTypesCublasLtDoesNotRunAreRejected(DType a, DType b, DType c, int m, int n, int k, boolean transA,
                                                      boolean transB, String message) {
        assertRejected(message, () -> GemmSpec.of(a, b, c, m, n, k, transA, transB));
    }

    @Test
    void leadingDimensionsMustKeepEveryRowSixteenByteAligned() {
        GemmSpec spec = GemmSpec.fp8(FP8_E4M3, FP8_E4M3, BF16, 64, 32, 48);
        assertRejected("lda and ldb to be multiples of 16, got lda=56", () -> spec.withLeadingDimensions(56, 48, 32));
        assertRejected("lda and ldb to be multiples of 16, got lda=48, ldb=50",
                () -> spec.withLeadingDimensions(48, 50, 32));
        assertRejected("ldc to be a multiple of 8 for a bf16 output (16-byte rows), got 36",
                () -> spec.withLeadingDimensions(48, 48, 36));
        assertEquals(4096, spec.withLeadingDimensions(4096, 64, 40).lda(), "chunks of wider matrices are fine");
        assertRejected("allowTf32 applies to FP32 inputs only", () -> spec.withAllowTf32(true));
        assertRejected("fp8FastAccumulation applies to fp8 inputs only",
                () -> GemmSpec.of(FP16, FP16, 16, 16, 16, false, true).withFp8FastAccumulation(true));
    }

    @Test
    void scalesAndPointersAreCheckedBeforeCublasLtIsCalled() {
        GemmSpec bf16Out = GemmSpec.fp8(FP8_E4M3, FP8_E4M3, BF16, 64, 32, 48);
        GemmSpec fp8Out = GemmSpec.fp8(FP8_E4M3, FP8_E4M3, FP8_E4M3, 64, 32, 48);
        String before = gemm.lastCall();
        assertRejected("an fp8 GEMM needs Fp8Scales", () -> gemm.runner().run(bf16Out, A, B, C, 1f, 0f, STREAM));
        assertRejected("scale_d scales an fp8 output into range; this GEMM writes bf16",
                () -> gemm.runner().run(bf16Out, A, B, C, 1f, 0f, new Gemm.Fp8Scales(SCALE_A, SCALE_B, SCALE_D, 0),
                        STREAM));
        assertRejected("an fp8 output cannot be accumulated into (beta must be 0, got 1.0)",
                () -> gemm.runner().run(fp8Out, A, B, C, 1f, 1f, AB, STREAM));
        assertRejected("an fp8 GEMM needs 16-byte aligned matrices, B is at 0x7f0000100008",
                () -> gemm.runner().run(bf16Out, A, B + 8, C, 1f, 0f, AB, STREAM));
        assertRejected("fp8 scales were given for a GEMM whose inputs are bf16",
                () -> gemm.runner().run(GemmSpec.of(BF16, BF16, 64, 32, 48, false, true), A, B, C, 1f, 0f, AB, STREAM));
        assertRejected("scaleA is a null device pointer", () -> Gemm.Fp8Scales.of(0, SCALE_B));
        assertRejected("amaxD at 0x7e00000000a2 is not aligned", () -> new Gemm.Fp8Scales(SCALE_A, SCALE_B, 0,
                0x7e00_0000_00a2L));
        assertEquals(before, gemm.lastCall(), "nothing reached cuBLASLt");
        assertEquals(0, gemm.runner().planCount());
    }
}

package dev.ubuf.gemm;

import static dev.ubuf.tensor.DType.BF16;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The runner's side of tuning, against a C stand-in for libcublasLt whose heuristic proposes algorithms 100..103
 * (fake_cublaslt.c): candidates are timed on scratch memory, the fastest is what the real GEMM then runs, once per
 * kind of GEMM; untimed runs take the heuristic's first. Addresses are never dereferenced by the stand-in.
 */
class GemmRunnerTuningTest {
    static final GemmSpec SPEC = GemmSpec.of(BF16, BF16, 256, 128, 64, false, true);
    static final TuningDevice DEVICE = new TuningDevice("Fake GPU", 90, 130101);
    static final long A = 0x7f00_0000_0000L;
    static final long B = 0x7f00_0010_0000L;
    static final long C = 0x7f00_0020_0010L; // 16-byte aligned, like a chunk of a larger output
    static final long WORKSPACE = 0x7f00_0100_0000L;
    static final long STREAM = 0x5000;

    @RegisterExtension
    static final FakeGemmRunner gemm = FakeGemmRunner.tuned(WORKSPACE,
            () -> new GemmTuner(new GemmTuning(true, null, null)), DEVICE);

    /** A bench that launches every candidate once on its scratch C and answers the given times. */
    static final class RecordingBench implements CandidateBench {
        final double[] millis;
        final List<String> launches = new ArrayList<>();
        int calls;

        RecordingBench(double... millis) {
            this.millis = millis;
        }

        @Override
        public double[] time(int count, long cBytes, long cAddress, long workspaceBytes, Launch launch) {
            calls++;
            assertEquals(SPEC.cBytes(), cBytes);
            assertEquals(C, cAddress, "the real C is named only for its alignment");
            assertEquals(3 * 1024, workspaceBytes, "the largest workspace any candidate needs");
            for (int i = 0; i < count; i++) {
                launch.enqueue(i, 0x9000_0010L, 0x9100_0000L, workspaceBytes, 0x6000);
                launches.add(gemm.lastCall());
            }
            return millis.clone();
        }
    }

    @Test
    void theCandidatesRunOnScratchAndTheFastestRunsTheRealGemm() {
        RecordingBench bench = new RecordingBench(4.0, 3.0, 1.0, 2.0);
        gemm.runner().run(SPEC, A, B, C, 1f, 0f, STREAM, bench);
        assertEquals(4, bench.launches.size());
        for (int i = 0; i < 4; i++) {
            String launch = bench.launches.get(i);
            assertTrue(launch.startsWith("matmul algo=" + (100 + i) + " "), launch);
            assertTrue(launch.contains("c=0x90000010 d=0x90000010 ws=0x91000000/3072 stream=0x6000"), launch);
        }
        String real = gemm.lastCall();
        assertTrue(real.startsWith("matmul algo=102 "), "the fastest candidate runs the GEMM: " + real);
        assertTrue(real.contains("c=0x7f0000200010 d=0x7f0000200010 ws=0x7f0001000000/33554432 stream=0x5000"), real);
        assertEquals(1, gemm.tuner().timedCount());
        assertEquals(java.util.OptionalInt.of(2), gemm.runner().heuristicRank(SPEC, A, B, C, false),
                "the report names the candidate tuning kept");
        assertEquals(java.util.OptionalInt.empty(), gemm.runner().heuristicRank(SPEC, A, B, C, true),
                "an accumulating GEMM is another kind, not run yet");
    }

    @Test
    void aKindOfGemmIsTimedOnlyOnItsFirstRun() {
        RecordingBench bench = new RecordingBench(4.0, 3.0, 1.0, 2.0);
        gemm.runner().run(SPEC, A, B, C, 1f, 0f, STREAM, bench);
        gemm.runner().run(SPEC, A, B, C, 1f, 0f, STREAM, (count, cBytes, c, ws, launch) -> fail("timed twice"));
        assertTrue(gemm.lastCall().startsWith("matmul algo=102 "), gemm.lastCall());
        assertEquals(1, gemm.runner().planCount());
    }

    @Test
    void anAddendIsReadAsCAndTheResultWrittenAsD() {
        long addend = 0x7f00_0030_0000L;
        gemm.runner().prepare(SPEC, A, B, C, addend, 1f, null, new RecordingBench(4.0, 1.0, 3.0, 2.0));
        gemm.runner().run(SPEC, A, B, C, addend, 1f, 1f, null, STREAM,
                (count, cBytes, c, ws, launch) -> fail("prepare chose already"));
        String call = gemm.lastCall();
        assertTrue(call.startsWith("matmul algo=101 ") && call.endsWith("beta=1"), call);
        assertTrue(call.contains(" c=0x7f0000300000 ") && call.contains(" d=0x7f0000200010 "),
                "C is the addend, D the result: " + call);
        assertEquals(1, gemm.runner().planCount(), "the result's 16-byte alignment keys the plan, as prepare's did");
        assertThrows(IllegalArgumentException.class, () -> gemm.runner().run(SPEC, A, B, C, 0, 1f, 1f, null, STREAM,
                CandidateBench.NONE), "a null addend");
    }

    @Test
    void accumulatingIsAnotherKindOfGemm() {
        gemm.runner().run(SPEC, A, B, C, 1f, 0f, STREAM, new RecordingBench(4.0, 3.0, 1.0, 2.0));
        RecordingBench accumulating = new RecordingBench(1.0, 3.0, 4.0, 2.0);
        gemm.runner().run(SPEC, A, B, C, 1f, 1f, STREAM, accumulating);
        assertEquals(1, accumulating.calls);
        assertTrue(gemm.lastCall().startsWith("matmul algo=100 ") && gemm.lastCall().endsWith("beta=1"),
                gemm.lastCall());
        assertEquals(2, gemm.runner().planCount());
    }

    @Test
    void whileTimingIsImpossibleTheFirstRunsAndTheChoiceIsMadeLater() {
        gemm.runner().run(SPEC, A, B, C, 1f, 0f, STREAM, CandidateBench.NONE);
        assertTrue(gemm.lastCall().startsWith("matmul algo=100 "), gemm.lastCall());
        assertEquals(0, gemm.runner().planCount(), "a provisional plan is used once, not kept");
        RecordingBench bench = new RecordingBench(4.0, 1.0, 3.0, 2.0);
        gemm.runner().run(SPEC, A, B, C, 1f, 0f, STREAM, bench);
        assertEquals(1, bench.calls);
        assertTrue(gemm.lastCall().startsWith("matmul algo=101 "), gemm.lastCall());
    }

    @Test
    void retuningReplacesTheKindsPlanSoLaterRunsUseTheNewChoiceUntimed() {
        gemm.runner().run(SPEC, A, B, C, 1f, 0f, STREAM, new RecordingBench(4.0, 3.0, 1.0, 2.0));
        assertTrue(gemm.lastCall().startsWith("matmul algo=102 "), gemm.lastCall());
        RecordingBench graphs = new RecordingBench(1.0, 3.0, 4.0, 2.0);
        GemmTuner.Retuned r = gemm.runner().retune(SPEC, A, B, C, 0f, null, graphs, 0.01);
        assertEquals(1, graphs.calls);
        assertEquals(0, r.chosen());
        gemm.runner().run(SPEC, A, B, C, 1f, 0f, STREAM, (count, cBytes, c, ws, launch) -> fail("timed again"));
        assertTrue(gemm.lastCall().startsWith("matmul algo=100 "), "the retuned choice runs: " + gemm.lastCall());
        assertEquals(1, gemm.runner().planCount(), "the replaced plan was destroyed (the live-object check follows)");
        assertEquals(java.util.OptionalInt.of(0), gemm.runner().heuristicRank(SPEC, A, B, C, false));
    }

    @Test
    void anUntunedRunnerRefusesToRetune() {
        try (GemmRunner plain = new GemmRunner(gemm.handle(), WORKSPACE, GemmRunner.RECOMMENDED_WORKSPACE_BYTES)) {
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> plain.retune(SPEC, A, B, C, 0f, null, new RecordingBench(1.0), 0.01));
            assertTrue(e.getMessage().contains("UB_GEMM_TUNING=0"), e.getMessage());
        }
    }

    @Test
    void anUntunedRunnerRunsTheHeuristicsFirstWithoutTiming() {
        try (GemmRunner plain = new GemmRunner(gemm.handle(), WORKSPACE, GemmRunner.RECOMMENDED_WORKSPACE_BYTES)) {
            plain.run(SPEC, A, B, C, 1f, 0f, STREAM);
            assertTrue(gemm.lastCall().startsWith("matmul algo=100 "), gemm.lastCall());
        }
    }
}

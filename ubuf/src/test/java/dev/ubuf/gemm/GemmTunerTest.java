package dev.ubuf.gemm;

import static dev.ubuf.tensor.DType.BF16;
import static dev.ubuf.tensor.DType.FP32;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Choosing a GEMM's algorithm among cuBLASLt's candidates, with the GPU replaced by given timings: the fastest wins,
 * a choice is timed once and then remembered (in memory and on disk), and tuning off means cuBLASLt's first choice.
 */
class GemmTunerTest {
    static final TuningDevice H200 = new TuningDevice("NVIDIA H200", 90, 130101);
    static final MatmulPlan.Key KEY = new MatmulPlan.Key(GemmSpec.of(BF16, BF16, 4096, 1024, 8192, false, true),
            256, 256, 256, false);
    static final GemmTuner.Timer NEVER = count -> fail("must not time");

    @TempDir
    Path dir;

    /** Candidates whose 64 algorithm bytes are all {@code id}: distinct, as cuBLASLt's are. */
    static List<MemorySegment> candidates(int... ids) {
        List<MemorySegment> list = new ArrayList<>();
        for (int id : ids) {
            byte[] algo = new byte[64];
            java.util.Arrays.fill(algo, (byte) id);
            list.add(MemorySegment.ofArray(algo));
        }
        return list;
    }

    /** A timer that answers {@code millis} and counts how often it was asked. */
    static final class FixedTimer implements GemmTuner.Timer {
        final double[] millis;
        int calls;

        FixedTimer(double... millis) {
            this.millis = millis;
        }

        @Override
        public double[] time(int candidates) {
            assertEquals(millis.length, candidates);
            calls++;
            return millis.clone();
        }
    }

    GemmTuner inMemory() {
        return new GemmTuner(new GemmTuning(true, null, null));
    }

    @Test
    void theFastestCandidateWins() {
        GemmTuner tuner = inMemory();
        GemmTuner.Choice choice = tuner.choose(H200, KEY, candidates(1, 2, 3), new FixedTimer(3.0, 1.5, 2.0));
        assertEquals(new GemmTuner.Choice(1, true), choice);
        assertEquals(1, tuner.timedCount());
    }

    @Test
    void aKindOfGemmIsTimedOnceAndItsChoiceReusedAfterwards() {
        GemmTuner tuner = inMemory();
        FixedTimer timer = new FixedTimer(3.0, 1.5, 2.0);
        tuner.choose(H200, KEY, candidates(1, 2, 3), timer);
        assertEquals(new GemmTuner.Choice(1, true), tuner.choose(H200, KEY, candidates(1, 2, 3), NEVER));
        assertEquals(1, timer.calls);
        assertEquals(1, tuner.reusedCount());
    }

    @Test
    void theChoiceFollowsTheAlgorithmNotItsPlaceInTheList() {
        GemmTuner tuner = inMemory();
        tuner.choose(H200, KEY, candidates(1, 2, 3), new FixedTimer(3.0, 1.5, 2.0)); // algorithm 2 wins
        assertEquals(new GemmTuner.Choice(0, true), tuner.choose(H200, KEY, candidates(2, 3, 1), NEVER));
    }

    @Test
    void aRememberedAlgorithmThatIsNoLongerProposedIsTimedAgain() {
        GemmTuner tuner = inMemory();
        tuner.choose(H200, KEY, candidates(1, 2, 3), new FixedTimer(3.0, 1.5, 2.0));
        FixedTimer again = new FixedTimer(1.0, 2.0);
        assertEquals(new GemmTuner.Choice(0, true), tuner.choose(H200, KEY, candidates(4, 5), again));
        assertEquals(1, again.calls);
    }

    @Test
    void differentGemmsDevicesAndCublasVersionsAreTunedSeparately() {
        GemmTuner tuner = inMemory();
        tuner.choose(H200, KEY, candidates(1, 2), new FixedTimer(2.0, 1.0));
        MatmulPlan.Key accumulating = new MatmulPlan.Key(KEY.spec(), 256, 256, 256, true);
        MatmulPlan.Key budgeted = new MatmulPlan.Key(KEY.spec().withSmCountTarget(100), 256, 256, 256, false);
        MatmulPlan.Key chunk = new MatmulPlan.Key(KEY.spec(), 256, 256, 16, false);
        TuningDevice h100 = new TuningDevice("NVIDIA H100 80GB HBM3", 90, 130101);
        TuningDevice olderCublas = new TuningDevice("NVIDIA H200", 90, 120804);
        FixedTimer timer = new FixedTimer(1.0, 2.0);
        tuner.choose(H200, accumulating, candidates(1, 2), timer);
        tuner.choose(H200, budgeted, candidates(1, 2), timer);
        tuner.choose(H200, chunk, candidates(1, 2), timer);
        tuner.choose(h100, KEY, candidates(1, 2), timer);
        tuner.choose(olderCublas, KEY, candidates(1, 2), timer);
        assertEquals(5, timer.calls);
    }

    @Test
    void tuningOffTakesTheHeuristicsFirstWithoutTiming() {
        GemmTuner off = GemmTuner.disabled();
        assertEquals(GemmTuner.Choice.FIRST, off.choose(H200, KEY, candidates(1, 2, 3), NEVER));
        assertEquals(0, off.timedCount());
    }

    @Test
    void aSingleCandidateNeedsNoTiming() {
        assertEquals(GemmTuner.Choice.FIRST, inMemory().choose(H200, KEY, candidates(7), NEVER));
    }

    @Test
    void whenTimingIsImpossibleTheFirstIsUsedForNowAndNothingIsRemembered() {
        GemmTuner tuner = inMemory();
        GemmTuner.Choice capturing = tuner.choose(H200, KEY, candidates(1, 2), GemmTuner.Timer.UNAVAILABLE);
        assertEquals(new GemmTuner.Choice(0, false), capturing);
        FixedTimer later = new FixedTimer(2.0, 1.0);
        assertEquals(new GemmTuner.Choice(1, true), tuner.choose(H200, KEY, candidates(1, 2), later));
        assertEquals(1, later.calls);
    }

    @Test
    void retuningTimesAgainAndReplacesTheRememberedChoiceInMemoryAndFile() throws IOException {
        GemmTuning settings = new GemmTuning(true, dir.resolve("tuning.tsv"), null);
        GemmTuner tuner = new GemmTuner(settings);
        tuner.choose(H200, KEY, candidates(1, 2, 3), new FixedTimer(3.0, 1.5, 2.0)); // algorithm 2 kept
        FixedTimer graphs = new FixedTimer(2.0, 2.1, 1.9);
        GemmTuner.Retuned r = tuner.retune(H200, KEY, candidates(1, 2, 3), graphs, 0.01);
        assertEquals(1, graphs.calls, "timed although a choice was remembered");
        assertEquals(2, r.chosen(), "1.9 beats the heuristic's first (2.0) by more than 1%");
        assertEquals(List.of(2.0, 2.1, 1.9), r.millis());
        assertEquals(new GemmTuner.Choice(2, true), tuner.choose(H200, KEY, candidates(1, 2, 3), NEVER));
        assertEquals(new GemmTuner.Choice(2, true), new GemmTuner(settings).choose(H200, KEY, candidates(1, 2, 3),
                NEVER), "the file holds the retuned choice");
    }

    @Test
    void retuningKeepsTheHeuristicsFirstWithinItsMargin() {
        GemmTuner tuner = inMemory();
        assertEquals(0, tuner.retune(H200, KEY, candidates(1, 2), new FixedTimer(1.005, 1.0), 0.01).chosen());
        assertEquals(1, tuner.retune(H200, KEY, candidates(1, 2), new FixedTimer(1.005, 1.0), 0.0).chosen(),
                "margin 0: the fastest");
        assertEquals(new GemmTuner.Choice(1, true), tuner.choose(H200, KEY, candidates(1, 2), NEVER));
    }

    @Test
    void retuningNeedsTuningOnAMarginBelowOneAndATimerThatCanTime() {
        IllegalStateException off = assertThrows(IllegalStateException.class,
                () -> GemmTuner.disabled().retune(H200, KEY, candidates(1, 2), NEVER, 0.01));
        assertTrue(off.getMessage().contains("UB_GEMM_TUNING=0"), off.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> inMemory().retune(H200, KEY, candidates(1, 2), NEVER, 1.0));
        assertThrows(IllegalArgumentException.class,
                () -> inMemory().retune(H200, KEY, candidates(1, 2), NEVER, Double.NaN));
        IllegalStateException capturing = assertThrows(IllegalStateException.class,
                () -> inMemory().retune(H200, KEY, candidates(1, 2), GemmTuner.Timer.UNAVAILABLE, 0.01));
        assertTrue(capturing.getMessage().contains("capturing"), capturing.getMessage());
    }

    @Test
    void theMinimumIsTakenTiesGoToTheEarlierAndFailuresAreSkipped() {
        assertEquals(2, GemmTuner.fastest(new double[] {3.0, 2.5, 0.75, 1.0}));
        assertEquals(1, GemmTuner.fastest(new double[] {2.0, 1.0, 1.0}));
        assertEquals(0, GemmTuner.fastest(new double[] {1.0 + GemmTuner.MARGIN / 2, 1.0, 1.2}),
                "within the margin the heuristic's first stays");
        assertEquals(1, GemmTuner.fastest(new double[] {1.0 + 2 * GemmTuner.MARGIN, 1.0, 1.2}),
                "beyond the margin the faster one wins");
        assertEquals(2, GemmTuner.fastest(new double[] {Double.NaN, 5.0, 4.0}));
        assertEquals(1, GemmTuner.fastest(new double[] {Double.POSITIVE_INFINITY, 9.0}));
        assertEquals(-1, GemmTuner.fastest(new double[] {Double.NaN, Double.NaN}));
    }

    @Test
    void whenEveryCandidateFailsTheErrorSaysHowToGoOnWithoutTuning() {
        GemmException e = assertThrows(GemmException.class, () -> inMemory().choose(H200, KEY, candidates(1, 2),
                new FixedTimer(Double.NaN, Double.NaN)));
        assertTrue(e.getMessage().contains("UB_GEMM_TUNING=0"), e.getMessage());
        assertTrue(e.getMessage().contains("m=4096 n=1024 k=8192"), e.getMessage());
    }

    @Test
    void aChoiceSavedByOneTunerIsReusedByANewOneWithoutTiming() throws IOException {
        GemmTuning settings = new GemmTuning(true, null, dir);
        new GemmTuner(settings).choose(H200, KEY, candidates(1, 2, 3), new FixedTimer(3.0, 1.5, 2.0));
        Path file = dir.resolve("gemm-tuning-nvidia-h200-sm90-cublasLt130101.tsv");
        assertTrue(Files.exists(file), "the per-device file in the cache directory");

        GemmTuner nextRun = new GemmTuner(settings);
        assertEquals(new GemmTuner.Choice(1, true), nextRun.choose(H200, KEY, candidates(1, 2, 3), NEVER));
        assertEquals(1, nextRun.reusedCount());
        assertEquals(0, nextRun.timedCount());
    }

    @Test
    void anExplicitFileServesEveryDevice() throws IOException {
        Path file = dir.resolve("tuning.tsv");
        GemmTuning settings = new GemmTuning(true, file, dir.resolve("unused"));
        TuningDevice h100 = new TuningDevice("NVIDIA H100 80GB HBM3", 90, 130101);
        GemmTuner tuner = new GemmTuner(settings);
        tuner.choose(H200, KEY, candidates(1, 2), new FixedTimer(2.0, 1.0));
        tuner.choose(h100, KEY, candidates(1, 2), new FixedTimer(1.0, 2.0));
        assertEquals(2, TuningFile.read(file).size());
        assertFalse(Files.exists(dir.resolve("unused")));
        GemmTuner nextRun = new GemmTuner(settings);
        assertEquals(new GemmTuner.Choice(1, true), nextRun.choose(H200, KEY, candidates(1, 2), NEVER));
        assertEquals(new GemmTuner.Choice(0, true), nextRun.choose(h100, KEY, candidates(1, 2), NEVER));
    }

    @Test
    void aCacheThatCannotBeReadOrWrittenCostsOnlyTheNextRunsTiming() throws IOException {
        Path notADirectory = Files.writeString(dir.resolve("plain-file"), "x");
        try (dev.ubuf.testutil.CapturedLog log = dev.ubuf.testutil.CapturedLog.of(GemmTuner.class.getName())) {
            GemmTuner tuner = new GemmTuner(new GemmTuning(true, notADirectory.resolve("tuning.tsv"), null));
            assertEquals(new GemmTuner.Choice(1, true),
                    tuner.choose(H200, KEY, candidates(1, 2), new FixedTimer(2.0, 1.0)));
            assertEquals(new GemmTuner.Choice(1, true), tuner.choose(H200, KEY, candidates(1, 2), NEVER));
            assertTrue(log.messages().stream().anyMatch(m -> m.startsWith("WARNING: ubuf: GEMM tuning cannot read")),
                    "one warning says the choices stay in memory: " + log.messages());
        }
    }

    @Test
    void aDamagedCacheIsReportedWithItsLineAndTheWayOut() throws IOException {
        Path file = Files.writeString(dir.resolve("tuning.tsv"), TuningFile.VERSION_LINE + "\nnot a tuning line\n");
        GemmException e = assertThrows(GemmException.class, () -> new GemmTuner(new GemmTuning(true, file, null))
                .choose(H200, KEY, candidates(1, 2), NEVER));
        assertTrue(e.getMessage().startsWith("the GEMM tuning cache " + file + " is damaged at line 2"),
                e.getMessage());
        assertTrue(e.getMessage().contains("UB_GEMM_TUNING_FILE"), e.getMessage());
    }

    @Test
    void theDefaultFileIsNamedAfterTheDeviceAndTheCublasVersion() {
        GemmTuning settings = new GemmTuning(true, null, Path.of("/cache/ubuf"));
        assertEquals(Path.of("/cache/ubuf/gemm-tuning-nvidia-h100-80gb-hbm3-sm90-cublasLt130101.tsv"),
                settings.fileFor(new TuningDevice("NVIDIA H100 80GB HBM3", 90, 130101)));
        assertEquals(null, new GemmTuning(true, null, null).fileFor(H200), "no file: memory only");
        assertNotEquals(settings.fileFor(H200), settings.fileFor(new TuningDevice("NVIDIA H200", 90, 120804)));
    }

    GemmTuner domain(GemmTuning settings) {
        return new GemmTuner(settings, GemmTuner.Policy.AT_INITIALISATION);
    }

    @Test
    void aDomainTunerNeverTimesOutsideAWindowAndSaysSoOnce() {
        GemmTuner tuner = domain(new GemmTuning(true, null, null));
        try (dev.ubuf.testutil.CapturedLog log = dev.ubuf.testutil.CapturedLog.of(GemmTuner.class.getName())) {
            assertEquals(GemmTuner.Choice.FIRST, tuner.choose(H200, KEY, candidates(1, 2, 3), NEVER));
            assertEquals(GemmTuner.Choice.FIRST, tuner.choose(H200, KEY, candidates(1, 2, 3), NEVER));
            assertEquals(2, tuner.untunedCount());
            assertEquals(0, tuner.timedCount());
            assertEquals(List.of(TuningFile.formatKey(KEY) + ": never tuned"), tuner.untunedKinds());
            List<String> warnings = log.messages().stream().filter(m -> m.startsWith("WARNING:")).toList();
            assertEquals(1, warnings.size(), "one warning: " + log.messages());
            assertTrue(warnings.get(0).contains("was not tuned at initialisation"), warnings.get(0));
        }
    }

    @Test
    void insideAWindowAKindIsTimedOnceAndStaysProvisionalUntilTheWindowCloses() {
        GemmTuner tuner = domain(new GemmTuning(true, null, null));
        FixedTimer timer = new FixedTimer(3.0, 1.5, 2.0);
        try (GemmTuner.Window w = tuner.openWindow()) {
            assertEquals(new GemmTuner.Choice(1, false), tuner.choose(H200, KEY, candidates(1, 2, 3), timer));
            assertEquals(new GemmTuner.Choice(1, false), tuner.choose(H200, KEY, candidates(1, 2, 3), NEVER),
                    "asked again in the window: the same answer, untimed");
            assertEquals(1, w.choices().size());
            assertThrows(IllegalStateException.class, tuner::openWindow, "one window at a time");
        }
        assertEquals(1, timer.calls);
        assertEquals(new GemmTuner.Choice(1, true), tuner.choose(H200, KEY, candidates(1, 2, 3), NEVER));
        assertEquals(0, tuner.untunedCount());
        tuner.openWindow().close(); // the window closed: another may open
    }

    @Test
    void aTunedAlgorithmThatCublasLtNoLongerProposesNorAcceptsCountsAsUntunedAndSaysWhy() {
        GemmTuner tuner = domain(new GemmTuning(true, null, null));
        try (GemmTuner.Window w = tuner.openWindow()) {
            tuner.choose(H200, KEY, candidates(1, 2, 3), new FixedTimer(3.0, 1.0, 2.0));
        }
        List<MemorySegment> checked = new ArrayList<>();
        GemmTuner.Check refuses = algo -> {
            checked.add(algo);
            return -1;
        };
        assertEquals(GemmTuner.Choice.FIRST, tuner.choose(H200, KEY, candidates(1, 3, 4), NEVER, refuses));
        assertEquals(1, checked.size(), "cuBLASLt was asked about the tuned algorithm");
        assertTrue(candidates(2).get(0).mismatch(checked.get(0)) < 0, "the tuned algorithm's bytes were checked");
        assertEquals(1, tuner.untunedCount());
        assertEquals(List.of(TuningFile.formatKey(KEY) + ": its tuned algorithm (heuristic rank 1) is not among the 3"
                + " candidates cuBLASLt proposes now, and cuBLASLt refuses it here"), tuner.untunedKinds());
    }

    @Test
    void aTunedAlgorithmThatTheHeuristicNoLongerListsButCublasLtAcceptsIsStillUsed() {
        GemmTuner tuner = domain(new GemmTuning(true, null, null));
        try (GemmTuner.Window w = tuner.openWindow()) {
            tuner.choose(H200, KEY, candidates(1, 2, 3), new FixedTimer(3.0, 1.0, 2.0));
        }
        GemmTuner.Choice choice = tuner.choose(H200, KEY, candidates(1, 3, 4), NEVER, algo -> 4096);
        assertEquals(-1, choice.index());
        assertTrue(choice.settled());
        assertEquals(-1, candidates(2).get(0).mismatch(choice.outside().algo()), "the tuned algorithm itself");
        assertEquals(4096, choice.outside().workspaceBytes(), "with the workspace cuBLASLt says it needs");
        assertEquals(1, choice.outside().heuristicRank());
        assertEquals(0, tuner.untunedCount());
        assertEquals(1, tuner.reusedCount());
    }

    @Test
    void settlingKeepsTheAgreedChoiceNotTheRanksOwn() throws IOException {
        Path file = dir.resolve("tuning.tsv");
        GemmTuner rank0 = domain(new GemmTuning(true, null, null));
        GemmTuner rank1 = domain(new GemmTuning(true, file, null));
        List<String> mine0;
        try (GemmTuner.Window w = rank0.openWindow()) {
            rank0.choose(H200, KEY, candidates(1, 2, 3), new FixedTimer(3.0, 1.0, 2.0));
            mine0 = w.choices();
        }
        try (GemmTuner.Window w = rank1.openWindow()) {
            rank1.choose(H200, KEY, candidates(1, 2, 3), new FixedTimer(3.0, 2.0, 1.0));
            List<String> agreed = GemmTuner.agree(List.of(mine0, w.choices()));
            assertEquals(mine0, agreed, "the lowest rank's choice wins");
            w.settle(agreed);
        }
        assertEquals(new GemmTuner.Choice(1, true), rank1.choose(H200, KEY, candidates(1, 2, 3), NEVER),
                "rank 1 runs rank 0's algorithm");
        assertEquals(new GemmTuner.Choice(1, true), domain(new GemmTuning(true, file, null))
                .choose(H200, KEY, candidates(1, 2, 3), NEVER), "and keeps it in its file");
    }

    @Test
    void agreementTakesEachKindFromTheLowestRankThatTunedIt() {
        MatmulPlan.Key other = new MatmulPlan.Key(GemmSpec.of(BF16, BF16, 512, 1024, 8192, false, true),
                256, 256, 256, false);
        String a0 = TuningFile.formatLine(new TuningFile.Entry(H200, KEY), new TunedAlgorithm("01".repeat(64), 1,
                1.0, 2.0));
        String a1 = TuningFile.formatLine(new TuningFile.Entry(H200, KEY), new TunedAlgorithm("02".repeat(64), 2,
                1.0, 2.0));
        String b1 = TuningFile.formatLine(new TuningFile.Entry(H200, other), new TunedAlgorithm("03".repeat(64), 3,
                1.0, 2.0));
        assertEquals(List.of(a0, b1), GemmTuner.agree(List.of(List.of(a0), List.of(a1, b1))));
        assertEquals(List.of(a1, b1), GemmTuner.agree(List.of(List.of(), List.of(a1, b1))));
    }
}

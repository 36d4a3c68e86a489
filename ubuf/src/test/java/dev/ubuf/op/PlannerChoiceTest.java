package dev.ubuf.op;

import dev.ubuf.tensor.DType;
import dev.ubuf.timing.InterleavedRounds;
import dev.ubuf.timing.RoundBudget;
import dev.ubuf.timing.TimingStats;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * How the planner decides from a measurement, with a fake timer: ranks as threads run the shared rounds
 * ({@link InterleavedRounds}) over an in-memory bootstrap, each rank's sampler returning made-up times, and the
 * planner's choice ({@link Planner#choose}) is the fastest by each round's maximum over ranks, deterministic on
 * near-ties; the printed table shows every candidate's ms and % of the fastest.
 */
class PlannerChoiceTest {
    private static final PlannerTest.Shape SHAPE =
            new PlannerTest.Shape(Collective.ALL_GATHER, 4, 64, 8, 8, DType.BF16, false);
    private final Planner planner = new Planner(MethodRegistry.of(List.of(
            new PlannerTest.FakeMethod("ring", Collective.ALL_GATHER, true))), PlannerSettings.inMemory());

    /** Candidates nccl, ring, ring:x=2; {@code ms[rank][candidate]} is what that rank's timer reads. */
    private Planner.Decision decide(double[][] ms, RoundBudget budget) throws Exception {
        List<Candidate> candidates = planner.candidates(SHAPE);
        assertEquals(List.of("nccl", "ring", "ring:x=2"), candidates.stream().map(Candidate::label).toList());
        int tp = ms.length;
        ExecutorService pool = Executors.newFixedThreadPool(tp);
        try (var g = dev.ubuf.bootstrap.InMemoryBootstrap.group(tp, Duration.ofSeconds(60))) {
            List<Future<Planner.Decision>> f = new ArrayList<>();
            for (int r = 0; r < tp; r++) {
                int rank = r;
                f.add(pool.submit(() -> {
                    Map<String, Runnable> work = new LinkedHashMap<>();
                    candidates.forEach(c -> work.put(c.label(), () -> { }));
                    var res = InterleavedRounds.run(g.rank(rank), (name, w) -> ms[rank][labels().indexOf(name)],
                            work, budget, 7);
                    return Planner.choose(SHAPE, candidates, res.stats(), res.rounds());
                }));
            }
            List<Planner.Decision> ds = new ArrayList<>();
            for (var x : f) {
                ds.add(x.get());
            }
            ds.forEach(d -> assertEquals(ds.getFirst().chosen(), d.chosen(), "every rank decides alike"));
            return ds.getFirst();
        } finally {
            pool.shutdownNow();
        }
    }

    private static List<String> labels() {
        return List.of("nccl", "ring", "ring:x=2");
    }

    @Test
    void theFastestByTheMaximumOverRanksWins() throws Exception {
        // ring is fastest on ranks 0..2 but its rank 3 is slow: by the max over ranks ring:x=2 wins.
        double[][] ms = {{1.0, 0.40, 0.60}, {1.0, 0.40, 0.60}, {1.0, 0.40, 0.61}, {1.0, 0.90, 0.62}};
        Planner.Decision d = decide(ms, RoundBudget.fixed(1, 5));
        assertEquals("ring:x=2", d.chosen().label());
        assertEquals(0.62, d.measured().medianMs().get("ring:x=2"));
        assertEquals(0.90, d.measured().medianMs().get("ring"));
        String table = d.describe();
        assertTrue(table.contains("% fastest"), table);
        assertTrue(table.matches("(?s).*ring:x=2\\s+0\\.6200\\s+100\\.0%  <- chosen.*"), table);
        assertTrue(table.matches("(?s).*nccl\\s+1\\.0000\\s+161\\.3%.*"), table);
        assertTrue(table.contains("5 interleaved rounds"), table);
    }

    @Test
    void roundsScaleWithTheSizeOfTheOps() throws Exception {
        RoundBudget budget = new RoundBudget(2, 10, 200, 25);
        int small = decide(new double[][] {{0.2, 0.1, 0.15}, {0.2, 0.1, 0.15}}, budget).measured().rounds();
        int large = decide(new double[][] {{8, 5, 6}, {8, 5, 6}}, budget).measured().rounds();
        assertEquals(167, small, "25 ms / 0.15 ms mean");
        assertEquals(10, large, "the minimum");
    }

    @Test
    void nearTiesGoToTheEarliestCandidateWhateverTheirOrder() throws Exception {
        // ring:x=2 is 0.5% faster than ring, within noise: the earlier candidate, ring, is chosen.
        Planner.Decision d = decide(new double[][] {{1.0, 0.500, 0.4975}, {1.0, 0.500, 0.4975}}, RoundBudget.fixed(1, 3));
        assertEquals("ring", d.chosen().label());
        // the NCCL reference is first: a tie with it keeps it
        d = decide(new double[][] {{0.5, 0.499, 0.6}, {0.5, 0.499, 0.6}}, RoundBudget.fixed(1, 3));
        assertEquals("nccl", d.chosen().label());
        // beyond the tie band the faster one wins
        d = decide(new double[][] {{1.0, 0.500, 0.49}, {1.0, 0.500, 0.49}}, RoundBudget.fixed(1, 3));
        assertEquals("ring:x=2", d.chosen().label());
    }

    @Test
    void aChoiceNeedsEveryCandidatesTimes() {
        Map<String, TimingStats> partial = new LinkedHashMap<>();
        partial.put("nccl", TimingStats.of(1));
        var e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> Planner.choose(SHAPE, planner.candidates(SHAPE), partial, 1));
        assertTrue(e.getMessage().contains("no times for candidate ring"), e.getMessage());
    }

    @Test
    void theTimeBudgetComesFromTheEnvironment() {
        assertEquals(new RoundBudget(PlannerSettings.WARMUP, 10, PlannerSettings.MAX_ROUNDS, 25),
                PlannerSettings.from(Map.of()).rounds());
        PlannerSettings fixed = PlannerSettings.from(Map.of("UB_TUNE_MS", "0", "UB_TUNE_ITERS", "30"));
        assertEquals(30, fixed.rounds().rounds(0.001), "no budget: exactly UB_TUNE_ITERS");
        assertEquals(500, PlannerSettings.from(Map.of("UB_TUNE_ITERS", "500")).rounds().rounds(0.001),
                "a minimum above the usual cap raises the cap");
        var e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> PlannerSettings.from(Map.of("UB_TUNE_MS", "fast")));
        assertTrue(e.getMessage().contains("UB_TUNE_MS"), e.getMessage());
        e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> PlannerSettings.from(Map.of("UB_TUNE_MS", "-1")));
        assertTrue(e.getMessage().contains("UB_TUNE_MS"), e.getMessage());
    }

    @Test
    void callsPerSampleComeFromTheEnvironment() {
        assertEquals(1, PlannerSettings.from(Map.of()).callsPerSample());
        assertEquals(4, PlannerSettings.from(Map.of("UB_TUNE_CALLS", " 4 ")).callsPerSample());
        for (String bad : new String[] {"0", "65", "x"}) {
            var e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                    () -> PlannerSettings.from(Map.of("UB_TUNE_CALLS", bad)));
            assertTrue(e.getMessage().contains("UB_TUNE_CALLS"), e.getMessage());
        }
    }
}

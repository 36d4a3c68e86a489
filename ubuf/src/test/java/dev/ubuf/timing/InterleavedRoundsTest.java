package dev.ubuf.timing;

import dev.ubuf.bootstrap.InMemoryBootstrap;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.IntFunction;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The shared round structure with a fake sampler, ranks as threads over an in-memory bootstrap (no GPU). */
class InterleavedRoundsTest {
    /** Fake per-rank times: rank -> candidate -> ms. */
    static List<InterleavedRounds.Result> runRanks(int tp, IntFunction<Map<String, Double>> timesOfRank,
                                                   RoundBudget budget, long seed) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(tp);
        try (InMemoryBootstrap.Group g = InMemoryBootstrap.group(tp, Duration.ofSeconds(60))) {
            List<Future<InterleavedRounds.Result>> f = new ArrayList<>();
            for (int r = 0; r < tp; r++) {
                int rank = r;
                f.add(pool.submit(() -> {
                    Map<String, Double> mine = timesOfRank.apply(rank);
                    Map<String, Runnable> work = new LinkedHashMap<>();
                    mine.keySet().forEach(k -> work.put(k, () -> { }));
                    return InterleavedRounds.run(g.rank(rank), (name, w) -> {
                        w.run();
                        return mine.get(name);
                    }, work, budget, seed);
                }));
            }
            List<InterleavedRounds.Result> out = new ArrayList<>();
            for (var x : f) {
                out.add(x.get());
            }
            return out;
        } finally {
            pool.shutdownNow();
        }
    }

    private static Map<String, Double> times(double a, double b) {
        Map<String, Double> m = new LinkedHashMap<>();
        m.put("a", a);
        m.put("b", b);
        return m;
    }

    @Test
    void everyRankGetsEachRoundsMaximumOverRanks() throws Exception {
        // a is fast on rank 0 and slow on rank 1; b is the same on both
        var results = runRanks(2, r -> r == 0 ? times(0.1, 0.3) : times(0.5, 0.3), RoundBudget.fixed(1, 7), 42);
        for (var r : results) {
            assertEquals(0.5, r.median("a"));
            assertEquals(0.3, r.median("b"));
            assertEquals(7, r.rounds());
            assertEquals(7, r.stats().get("a").count());
            assertEquals(7, r.orders().size());
        }
        assertEquals(results.get(0).orders(), results.get(1).orders(), "the ranks ran the same order");
    }

    @Test
    void roundsScaleWithTheTimeBudgetAndAgreeAcrossRanks() throws Exception {
        RoundBudget budget = new RoundBudget(2, 5, 100, 10);
        // Short ops (about 0.2 ms at the slowest rank): 10 ms / 0.2 ms = 50 rounds.
        var small = runRanks(3, r -> times(0.1 + 0.1 * (r == 2 ? 1 : 0), 0.2), budget, 1);
        small.forEach(r -> assertEquals(50, r.rounds()));
        // Long ops (4 ms): the minimum.
        runRanks(2, r -> times(4, 4), budget, 1).forEach(r -> assertEquals(5, r.rounds()));
        // Very short ops: capped.
        runRanks(2, r -> times(0.001, 0.001), budget, 1).forEach(r -> assertEquals(100, r.rounds()));
    }

    @Test
    void budgetsAreChecked() {
        assertEquals(7, RoundBudget.fixed(0, 7).rounds(0.001));
        assertEquals(20, new RoundBudget(1, 10, 50, 2).rounds(0.1));
        assertThrows(IllegalArgumentException.class, () -> new RoundBudget(0, 10, 50, 2));
        assertThrows(IllegalArgumentException.class, () -> new RoundBudget(1, 0, 50, 2));
        assertThrows(IllegalArgumentException.class, () -> new RoundBudget(1, 10, 5, 2));
        assertThrows(IllegalArgumentException.class, () -> new RoundBudget(1, 10, 50, Double.NaN));
        var e = assertThrows(IllegalArgumentException.class,
                () -> InterleavedRounds.run(null, (n, w) -> 0, Map.of(), RoundBudget.fixed(0, 1), 0));
        assertTrue(e.getMessage().contains("nothing to time"), e.getMessage());
    }
}

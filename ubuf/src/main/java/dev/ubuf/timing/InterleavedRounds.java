package dev.ubuf.timing;

import dev.ubuf.bootstrap.Bootstrap;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * The round structure every fair timing of ubuf shares (the planner's and the overlap benchmark's, through
 * {@link InterleavedTimer}), apart from how one sample is taken: rounds in which every candidate runs once, in an
 * order shuffled by a seeded random, each sample after a barrier of the domain; a sample's time is the maximum over
 * ranks (an op is done when its slowest rank is). The warm-up rounds size the timed rounds ({@link RoundBudget}),
 * from their maxima over ranks, so every rank runs the same count. Free of CUDA, so it runs on the host in tests.
 *
 * <p>Collective: every rank calls {@link #run} with the same candidate names, budget and seed.
 */
public final class InterleavedRounds {
    /** Takes one sample of one candidate on this rank: runs {@code work} once and returns its time in ms. */
    @FunctionalInterface
    public interface Sampler {
        double sampleMs(String candidate, Runnable work);
    }

    /**
     * What a timing measured, the same on every rank.
     *
     * @param stats  per candidate, in the given order: the timed rounds' maxima over ranks
     * @param rounds timed rounds run
     * @param orders the order of each timed round
     */
    public record Result(Map<String, TimingStats> stats, int rounds, long seed, List<List<String>> orders) {
        public double median(String candidate) {
            TimingStats d = stats.get(candidate);
            if (d == null) {
                throw new IllegalArgumentException("no candidate '" + candidate + "'; timed: " + stats.keySet());
            }
            return d.median();
        }
    }

    private InterleavedRounds() {
    }

    public static Result run(Bootstrap boot, Sampler sampler, Map<String, Runnable> candidates, RoundBudget budget,
                             long seed) {
        if (candidates.isEmpty()) {
            throw new IllegalArgumentException("nothing to time");
        }
        List<String> names = new ArrayList<>(candidates.keySet());
        Random order = new Random(seed);
        double[][] warm = rounds(boot, sampler, candidates, names, budget.warmup(), order, null);
        int rounds = budget.minRounds();
        if (budget.scaled()) {
            double sum = 0;
            for (TimingStats d : maxOverRanks(boot, names, warm).values()) {
                sum += d.median();
            }
            rounds = budget.rounds(sum / names.size());
        }
        List<List<String>> orders = new ArrayList<>();
        double[][] timed = rounds(boot, sampler, candidates, names, rounds, order, orders);
        return new Result(maxOverRanks(boot, names, timed), rounds, seed, orders);
    }

    /** {@code count} shuffled rounds; this rank's samples per candidate. */
    private static double[][] rounds(Bootstrap boot, Sampler sampler, Map<String, Runnable> candidates,
                                     List<String> names, int count, Random order, List<List<String>> orders) {
        double[][] mine = new double[names.size()][count];
        List<Integer> idx = new ArrayList<>();
        for (int c = 0; c < names.size(); c++) {
            idx.add(c);
        }
        for (int it = 0; it < count; it++) {
            Collections.shuffle(idx, order);
            if (orders != null) {
                orders.add(idx.stream().map(names::get).toList());
            }
            for (int c : idx) {
                boot.barrier();
                String name = names.get(c);
                mine[c][it] = sampler.sampleMs(name, candidates.get(name));
            }
        }
        return mine;
    }

    /**
     * Per candidate ({@code names}, in the order of {@code mine}'s rows), each sample's maximum over the ranks (one
     * all-gather: collective, the same result on every rank). Every rank's rows hold the same number of samples.
     */
    public static Map<String, TimingStats> maxOverRanks(Bootstrap boot, List<String> names, double[][] mine) {
        int count = mine.length == 0 ? 0 : mine[0].length;
        ByteBuffer b = ByteBuffer.allocate(names.size() * count * Double.BYTES);
        for (double[] row : mine) {
            for (double x : row) {
                b.putDouble(x);
            }
        }
        byte[][] all = boot.allGather(b.array());
        Map<String, TimingStats> stats = new LinkedHashMap<>();
        for (int c = 0; c < names.size(); c++) {
            double[] maxima = new double[count];
            for (int i = 0; i < count; i++) {
                double max = Double.NEGATIVE_INFINITY;
                for (byte[] r : all) {
                    max = Math.max(max, ByteBuffer.wrap(r).getDouble((c * count + i) * Double.BYTES));
                }
                maxima[i] = max;
            }
            stats.put(names.get(c), TimingStats.of(maxima));
        }
        return stats;
    }
}

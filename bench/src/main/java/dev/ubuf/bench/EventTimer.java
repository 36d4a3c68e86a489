package dev.ubuf.bench;

import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaEvent;
import dev.ubuf.cuda.CudaGraph;
import dev.ubuf.cuda.CudaStream;
import org.apache.commons.math3.stat.descriptive.DescriptiveStatistics;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Times stream work on one GPU with CUDA events, back to back, as a training step runs its GEMMs: each candidate is
 * captured into a CUDA graph of several runs (enough for about {@link #GRAPH_MS} of GPU time, at most
 * {@link #MAX_RUNS_PER_GRAPH}), and one sample is one replay between two events, divided by the runs in it. Medians
 * and spread over the samples.
 *
 * <p>Why graphs, after a heat phase: a large GEMM holds an H200 at its power limit, where its clocks fall from 1980
 * to about 1450 MHz, so how fast a kernel runs depends on how busy the GPU was just before. An idle GPU runs its
 * first second of work at boost clocks, and runs with idle gaps between them (a host synchronizing and enqueueing
 * the next one, or a spin that holds the stream while it does) run cooler than runs that follow each other: the same
 * kernel timed two such ways differs by up to 10%. Replayed graphs leave no host time inside or between runs, on
 * either side of a comparison (the PyTorch baselines capture torch.matmul likewise, bench/torch/gemm_timing.py). So
 * each candidate first runs once on the stream (whatever it does once on the host, choosing or tuning an algorithm,
 * happens then), is captured, all graphs replay round-robin for
 * {@code heat}, then the warm-up replays and the timed replays are enqueued back to back and waited for once: the
 * warm-ups keep the GPU busy while the host enqueues the timed replays, so no sample waits for the host.
 *
 * <p>How many runs a graph holds comes from the GEMM's shape ({@link #runsPerGraph(long, long, long)}), the same on
 * both sides of a comparison: a replay carries a few microseconds of launch cost, a percent or more of a graph of
 * small GEMMs, and sized from each side's own first run (as before) the two sides of the same small shape held 4 and
 * 8 runs, or 19 and 10, and their ratio swung by +-4% with it (H200, 2026-11-23).
 */
public final class EventTimer {
    /** GPU time a graph should take: far more than the host needs to enqueue a replay and its two events. */
    public static final double GRAPH_MS = 0.5;
    /** The most runs a graph holds (a 10 us GEMM gets 50). */
    public static final int MAX_RUNS_PER_GRAPH = 64;
    /** Rounds the heat phase enqueues between synchronizations: the GPU stays busy, the overshoot stays small. */
    private static final int HEAT_ROUNDS_AHEAD = 4;

    private EventTimer() {
    }

    /** The throughput a graph's runs are sized by: about a busy H200's 16-bit GEMM rate (an estimate, not a bound). */
    public static final double NOMINAL_TFLOPS = 700;

    /** Per-run milliseconds of each candidate's samples, and the runs each graph held. */
    public record Timing(Map<String, DescriptiveStatistics> stats, int runsPerGraph) {
    }

    /**
     * Runs per graph for an M x N x K GEMM: about {@link #GRAPH_MS} of work at {@link #NOMINAL_TFLOPS}, 1 to
     * {@link #MAX_RUNS_PER_GRAPH}. bench/torch/gemm_timing.py's runs_per_graph computes the same.
     */
    public static int runsPerGraph(long m, long n, long k) {
        if (m < 1 || n < 1 || k < 1) {
            throw new IllegalArgumentException("a GEMM shape is positive, got " + m + "x" + n + "x" + k);
        }
        double nominalMs = 2.0 * m * n * k / (NOMINAL_TFLOPS * 1e9);
        return (int) Math.max(1, Math.min(MAX_RUNS_PER_GRAPH, Math.ceil(GRAPH_MS / nominalMs)));
    }

    /**
     * Times several candidates round-robin: each round replays every candidate's graph once, in order, so slow drift
     * of the GPU (clocks, temperature, a neighbour) affects all of them alike and their ratios stay fair.
     *
     * @param warmup untimed replays of each graph, after the heat
     * @param iters  timed replays (samples) of each graph
     * @param runs   runs of a candidate per graph, >= 1 (for a GEMM, {@link #runsPerGraph(long, long, long)})
     * @param heat   how long the graphs replay back to back before the warm-ups (zero for none)
     */
    public static Timing interleaved(CudaContext ctx, CudaStream stream, int warmup, int iters, int runs,
                                     LinkedHashMap<String, Runnable> candidates, Duration heat) {
        List<String> names = List.copyOf(candidates.keySet());
        return time(ctx, stream, warmup, iters, runs, candidates, iters * candidates.size(), (graphs, events) -> {
            heat(stream, graphs, heat);
            for (int i = 0; i < warmup; i++) {
                graphs.forEach(g -> g.launch(stream));
            }
            int e = 0;
            for (int i = 0; i < iters; i++) {
                for (CudaGraph g : graphs) {
                    events.get(e++).record(stream);
                    g.launch(stream);
                    events.get(e++).record(stream);
                }
            }
            events.get(events.size() - 1).synchronize();
            Map<String, DescriptiveStatistics> stats = emptyStats(names);
            e = 0;
            for (int i = 0; i < iters; i++) {
                for (String n : names) {
                    CudaEvent start = events.get(e++);
                    CudaEvent end = events.get(e++);
                    stats.get(n).addValue(end.elapsedMillisSince(start) / runs);
                }
            }
            return stats;
        });
    }

    /**
     * Times each candidate in its own steady state, as a GEMM runs alone in a benchmark or a training step: in turn,
     * each candidate's graph replays alone for {@code heat}, then its warm-ups and timed replays follow back to back.
     * Two passes, the second in reverse order (A B C C B A), so a slow drift of the GPU weighs on every candidate
     * alike; a candidate's samples are both passes'. Why not round-robin ({@link #interleaved}): a GPU at its power
     * limit sets its clocks by what it has been running, and interleaved candidates share one clock state, which
     * flatters a kernel that draws more power than the others: picked that way, 24 of 63 changed cuBLASLt choices
     * ran slower than torch.matmul's in a steady-state comparison (H200, 2026-11-23).
     */
    public static Timing eachHeated(CudaContext ctx, CudaStream stream, int warmup, int iters, int runs,
                                    LinkedHashMap<String, Runnable> candidates, Duration heat) {
        List<String> names = List.copyOf(candidates.keySet());
        return time(ctx, stream, warmup, iters, runs, candidates, iters, (graphs, events) -> {
            Map<String, DescriptiveStatistics> stats = emptyStats(names);
            List<Integer> order = new ArrayList<>();
            for (int i = 0; i < names.size(); i++) {
                order.add(i);
            }
            for (int pass = 0; pass < 2; pass++) {
                for (int i : pass == 0 ? order : order.reversed()) {
                    CudaGraph g = graphs.get(i);
                    heat(stream, List.of(g), heat);
                    for (int w = 0; w < warmup; w++) {
                        g.launch(stream);
                    }
                    for (int t = 0; t < iters; t++) {
                        events.get(2 * t).record(stream);
                        g.launch(stream);
                        events.get(2 * t + 1).record(stream);
                    }
                    events.get(events.size() - 1).synchronize();
                    for (int t = 0; t < iters; t++) {
                        stats.get(names.get(i)).addValue(
                                events.get(2 * t + 1).elapsedMillisSince(events.get(2 * t)) / runs);
                    }
                }
            }
            return stats;
        });
    }

    /** What a timing does with the captured graphs (in candidate order) and its event pairs. */
    @FunctionalInterface
    private interface Schedule {
        Map<String, DescriptiveStatistics> run(List<CudaGraph> graphs, List<CudaEvent> events);
    }

    /**
     * Checks the arguments, runs each candidate once on the host (whatever it does once, choosing or tuning an
     * algorithm, happens then, not under capture), captures each as a graph of {@code runs} runs, hands graphs and
     * {@code eventPairs} pairs of events to {@code schedule}, and frees them all, last made first, after the stream
     * is done.
     */
    private static Timing time(CudaContext ctx, CudaStream stream, int warmup, int iters, int runs,
                               LinkedHashMap<String, Runnable> candidates, int eventPairs, Schedule schedule) {
        if (warmup < 0 || iters < 1 || runs < 1 || runs > MAX_RUNS_PER_GRAPH || candidates.isEmpty()) {
            throw new IllegalArgumentException("need warmup >= 0, iters >= 1, 1 <= runs <= " + MAX_RUNS_PER_GRAPH
                    + " and a candidate; got " + warmup + ", " + iters + ", " + runs + ", " + candidates.size());
        }
        List<CudaGraph> graphs = new ArrayList<>();
        List<CudaEvent> events = new ArrayList<>();
        try {
            for (int i = 0; i < 2 * eventPairs; i++) {
                events.add(ctx.createEvent(true));
            }
            for (Runnable c : candidates.values()) {
                c.run();
            }
            stream.synchronize();
            for (Runnable c : candidates.values()) {
                graphs.add(capture(stream, c, runs));
            }
            return new Timing(schedule.run(graphs, events), runs);
        } finally {
            stream.synchronize();
            for (int i = events.size() - 1; i >= 0; i--) {
                events.get(i).close();
            }
            for (int i = graphs.size() - 1; i >= 0; i--) {
                graphs.get(i).close();
            }
        }
    }

    private static Map<String, DescriptiveStatistics> emptyStats(List<String> names) {
        Map<String, DescriptiveStatistics> stats = new LinkedHashMap<>();
        names.forEach(n -> stats.put(n, new DescriptiveStatistics()));
        return stats;
    }

    /** {@code runs} runs of {@code work}, captured from {@code stream} (the capture is ended on failure). */
    private static CudaGraph capture(CudaStream stream, Runnable work, int runs) {
        return stream.capture(() -> {
            for (int r = 0; r < runs; r++) {
                work.run();
            }
        }, false);
    }

    /** Replays the graphs round-robin until {@code heat} has passed, at most a few rounds ahead of the GPU. */
    private static void heat(CudaStream stream, List<CudaGraph> graphs, Duration heat) {
        if (heat.isZero() || heat.isNegative()) {
            return;
        }
        long end = System.nanoTime() + heat.toNanos();
        int rounds = 0;
        while (System.nanoTime() < end) {
            graphs.forEach(g -> g.launch(stream));
            if (++rounds % HEAT_ROUNDS_AHEAD == 0) {
                stream.synchronize();
            }
        }
        stream.synchronize();
    }
}

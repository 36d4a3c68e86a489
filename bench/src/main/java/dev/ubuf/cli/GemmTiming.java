package dev.ubuf.cli;

import dev.ubuf.bench.EventTimer;
import dev.ubuf.bench.GraphCandidateBench;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * How the GEMM benchmarks ({@code bench gemm}, {@code bench fp8}) time their candidates with {@link EventTimer}: the heat, the
 * warm-up and the timed replays, checked before GPU work and recorded on every record.
 */
final class GemmTiming {
    @Spec(Spec.Target.MIXEE)
    CommandSpec spec;

    @Option(names = "--warmup", defaultValue = "10", paramLabel = "N",
            description = "Untimed replays of each candidate's CUDA graph (of runs worth about " + EventTimer.GRAPH_MS
                    + " ms) after the heat, >= 0 (default: ${DEFAULT-VALUE}).")
    int warmup;
    @Option(names = "--iters", defaultValue = "50", paramLabel = "N",
            description = "Timed replays (samples) of each candidate's CUDA graph of back-to-back runs; a sample is a"
                    + " replay's time over its runs; >= 1 (default: ${DEFAULT-VALUE}).")
    int iters;
    @Option(names = "--heat-ms", defaultValue = "1000", paramLabel = "MS",
            description = "Before each shape's warm-ups, run it back to back for this long, so it is timed at the"
                    + " clocks a busy GPU holds under its power limit, not at an idle GPU's boost clocks; >= 0"
                    + " (default: ${DEFAULT-VALUE}). The PyTorch baselines take --gemm-heat-ms alike.")
    long heatMs;

    /** Fails with a usage error for a negative warm-up or heat, or fewer than one timed replay. */
    void check() {
        OptionChecks.atLeast(spec, "--warmup", warmup, 0);
        OptionChecks.atLeast(spec, "--iters", iters, 1);
        OptionChecks.atLeast(spec, "--heat-ms", heatMs, 0);
    }

    /**
     * The candidates, GEMMs of one M x N x K shape, timed round-robin on {@code stream} with these options, their
     * graphs sized by the shape ({@link EventTimer#runsPerGraph(long, long, long)}).
     */
    EventTimer.Timing time(CudaContext ctx, CudaStream stream, long m, long n, long k,
                           LinkedHashMap<String, Runnable> candidates) {
        return EventTimer.interleaved(ctx, stream, warmup, iters, EventTimer.runsPerGraph(m, n, k), candidates,
                Duration.ofMillis(heatMs));
    }

    /** Times a GEMM's cuBLASLt candidates as {@link #time} times a GEMM, for {@code Gemm.retune}. */
    GraphCandidateBench candidates(CudaContext ctx, CudaStream stream, long m, long n, long k) {
        return new GraphCandidateBench(ctx, stream, warmup, iters, EventTimer.runsPerGraph(m, n, k),
                Duration.ofMillis(heatMs));
    }

    /** The timing fields of a record. */
    void record(Map<String, Object> rec, EventTimer.Timing timing) {
        rec.put("iters", iters);
        rec.put("warmup", warmup);
        rec.put("heat_ms", heatMs);
        rec.put("runs", "graph"); // EventTimer: replays of a captured graph, no host time in or between runs
        rec.put("runs_per_graph", timing.runsPerGraph());
    }
}

package dev.ubuf.gemm;

import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaEvent;
import dev.ubuf.cuda.CudaGraph;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.StreamOrderedBuffer;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.resource.Closer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/**
 * Times candidates on a private stream of the caller's device, with CUDA events.
 *
 * <p>Why a private stream, not the caller's: the caller's stream may be queued behind a wait for a peer (an
 * overlapped op's first chunk GEMM), and that peer may itself be tuning; timing there would block this host thread
 * on the peer while the peer blocks on us. The private stream depends on nothing, so timing always finishes. The cost
 * is that A and B may still be in flight on the caller's stream: their values do not matter for speed, only their
 * addresses, and they are only read (so they must be ordinary allocations, mapped whatever the stream order, as
 * ubuf's device buffers and user buffers are). C and the workspace are private scratch, taken and given back in
 * stream order (no device-wide synchronisation), and C is zeroed, so an accumulating GEMM reads finite values.
 *
 * <p>Each candidate runs {@value #WARMUPS} times untimed (first-launch costs), then {@value #ROUNDS} single runs are
 * timed, candidates interleaved run by run; a candidate's time is the median of its runs. Single runs, as GEMMs run in
 * the ops and the benchmarks: timed as 5 runs back to back, the tuner chose a kernel that then ran up to 8% slower
 * alone than one in its own list (the one PyTorch's cuBLAS runs; H200, 2026-11-23). So that the events time the
 * GPU's work and not the host's launch (tens of microseconds from Java, as long as a small GEMM runs), each timed run
 * follows untimed runs of the same candidate that keep the GPU busy for at least {@value #LEAD_MICROS} µs while the
 * host enqueues the events and the run. Nothing on the stream waits for the host: a stream held on a flag the host
 * raises after enqueuing deadlocked two ranks tuning in one process (one inside cublasLtMatmul, the other recording
 * an event behind its held stream; four H100s).
 *
 * <p>A candidate faster alone than cuBLASLt's first choice must also be faster back to back before the tuner may take
 * it: the fastest few ({@value #MAX_CHALLENGERS}) are timed against the first as CUDA graphs of runs back to back
 * (about {@value #BURST_MICROS} µs a replay), each in its own steady state (its graph replays alone for about
 * {@value #STEADY_HEAT_MICROS} µs before its timed replays; two passes, the second in reverse order), and any that is
 * not {@link #BURST_MARGIN} faster there, or that was not among those few, is returned as +Infinity. Alone, a small
 * GEMM's time carries its ramp and tail: at 256x4096x3072 (bf16, H200, 2026-11-29) a candidate 15% faster alone than
 * the first ran 10% slower back to back, as the layers and torch.matmul run GEMMs. Interleaved with another kernel, a
 * GEMM at the power limit runs at other clocks than in its own steady state: cuBLASLt's first choice at
 * 16384x13824x5120 took 3.55 ms a run replayed in turn with a challenger and 3.38 ms replayed alone (torch.matmul's
 * time for the same kernel), which made the challenger look 3% faster where it was 2-5% slower.
 */
final class StreamCandidateBench implements CandidateBench {
    static final int WARMUPS = 2;
    static final int ROUNDS = 7;
    /**
     * How long timing may wait for the GPU. Far beyond any GEMM's candidates; reached only when the private stream sits
     * behind work that waits on a peer (timing inside a step), which must end in an error, not a hang.
     */
    static final Duration DEADLINE = Duration.ofSeconds(60);
    /** How long the untimed runs before a timed one keep the GPU busy, at least. */
    static final int LEAD_MICROS = 100;
    /** The most untimed runs before a timed one. */
    static final int MAX_LEAD_RUNS = 64;
    /** The most candidates faster alone than cuBLASLt's first that are timed back to back against it. */
    static final int MAX_CHALLENGERS = 3;
    /** GPU time of one back-to-back replay, about: runs a graph holds, from the first choice's time alone. */
    static final int BURST_MICROS = 200;
    /** The most runs a back-to-back graph holds. */
    static final int MAX_BURST_RUNS = 32;
    /** Timed replays of each back-to-back graph, in each of two passes. */
    static final int BURST_ROUNDS = 4;
    /** How long a back-to-back graph replays alone, untimed, before its timed replays, about. */
    static final int STEADY_HEAT_MICROS = 50_000;
    /** The most untimed replays before a graph's timed ones. */
    static final int MAX_HEAT_REPLAYS = 1024;
    /** How much faster than cuBLASLt's first a candidate must run back to back to stay a candidate. */
    static final double BURST_MARGIN = 0.01;

    private final CudaContext context;
    private final CudaStream caller;

    StreamCandidateBench(CudaContext context, CudaStream caller) {
        this.context = context;
        this.caller = caller;
    }

    @Override
    public double[] time(int count, long cBytes, long cAddress, long workspaceBytes, Launch launch) {
        if (caller.isCapturing()) {
            return null; // no synchronous work while the caller records a graph
        }
        GemmException[] failures = new GemmException[count];
        double[][] runs = new double[count][ROUNDS];
        try (CudaStream s = context.createStream(StreamPriority.NORMAL);
             StreamOrderedBuffer scratch = s.allocate(CandidateScratch.bytes(workspaceBytes, cBytes));
             CudaEvent start = context.createEvent(true);
             CudaEvent stop = context.createEvent(true)) {
            CandidateScratch layout = CandidateScratch.at(scratch.address(), workspaceBytes, cAddress);
            long workspace = layout.workspace();
            long c = layout.c();
            s.fill8(c, (byte) 0, cBytes);
            int[] lead = new int[count];
            for (int i = 0; i < count; i++) {
                run(launch, i, 1, c, workspace, workspaceBytes, s, failures); // first-launch costs
                if (failures[i] != null) {
                    continue;
                }
                start.record(s);
                run(launch, i, WARMUPS, c, workspace, workspaceBytes, s, failures);
                stop.record(s);
                finish(s, "the warm-up runs");
                // A candidate that breaks the context shows here, as a CudaFatalException: nothing to recover.
                lead[i] = toFill(LEAD_MICROS, stop.elapsedMillisSince(start) / WARMUPS, MAX_LEAD_RUNS);
            }
            for (int round = 0; round < ROUNDS; round++) {
                for (int i = 0; i < count; i++) {
                    if (failures[i] != null) {
                        continue;
                    }
                    run(launch, i, lead[i], c, workspace, workspaceBytes, s, failures);
                    start.record(s);
                    run(launch, i, 1, c, workspace, workspaceBytes, s, failures);
                    stop.record(s);
                    finish(s, "a timed run"); // its last work is the stop event
                    if (failures[i] == null) {
                        runs[i][round] = stop.elapsedMillisSince(start);
                    }
                }
            }
            finish(s, "the last run");
            double[] best = medians(runs, failures);
            List<Integer> challengers = challengers(best);
            if (!challengers.isEmpty()) {
                List<Integer> timed = new ArrayList<>();
                timed.add(0);
                timed.addAll(challengers);
                int perReplay = burstRuns(best[0]);
                double[] burst = backToBack(launch, timed, perReplay, perReplay * best[0], c, workspace,
                        workspaceBytes, s);
                screen(best, challengers, burst);
            }
            return best;
        }
    }

    /** Each candidate's median single-run time, NaN where it failed; throws when every one failed. */
    private static double[] medians(double[][] runs, GemmException[] failures) {
        double[] best = new double[runs.length];
        GemmException first = null;
        for (int i = 0; i < runs.length; i++) {
            if (failures[i] != null) {
                best[i] = Double.NaN;
                first = first == null ? failures[i] : first;
            } else {
                best[i] = median(runs[i]);
            }
        }
        if (first != null && Arrays.stream(best).allMatch(Double::isNaN)) {
            throw new GemmException("every one of the " + runs.length + " algorithms cuBLASLt proposed failed when "
                    + "timed (the first failure is the cause); set UB_GEMM_TUNING=0 to run its first choice untimed",
                    first);
        }
        return best;
    }

    /**
     * The candidates to time back to back: those faster alone than the first (index 0), fastest first, at most
     * {@link #MAX_CHALLENGERS}; none when the first did not run (nothing to confirm against).
     */
    static List<Integer> challengers(double[] alone) {
        if (alone.length == 0 || !Double.isFinite(alone[0])) {
            return List.of();
        }
        List<Integer> faster = new ArrayList<>();
        for (int i = 1; i < alone.length; i++) {
            if (Double.isFinite(alone[i]) && alone[i] < alone[0]) {
                faster.add(i);
            }
        }
        faster.sort(Comparator.comparingDouble((Integer i) -> alone[i]).thenComparingInt(i -> i));
        return List.copyOf(faster.subList(0, Math.min(MAX_CHALLENGERS, faster.size())));
    }

    /**
     * Sets to +Infinity, in {@code alone}, every candidate faster alone than the first that may not replace it: those
     * not among {@code challengers}, and those whose back-to-back time ({@code backToBack[j + 1]} for
     * {@code challengers.get(j)}; {@code backToBack[0]} is the first's; NaN: not timed) is not {@link #BURST_MARGIN}
     * below the first's.
     */
    static void screen(double[] alone, List<Integer> challengers, double[] backToBack) {
        if (backToBack.length != challengers.size() + 1) {
            throw new IllegalArgumentException(backToBack.length + " back-to-back times for " + challengers.size()
                    + " challengers and the first");
        }
        for (int i = 1; i < alone.length; i++) {
            int j = challengers.indexOf(i);
            boolean fasterAlone = Double.isFinite(alone[i]) && Double.isFinite(alone[0]) && alone[i] < alone[0];
            boolean confirmed = j >= 0 && Double.isFinite(backToBack[0]) && Double.isFinite(backToBack[j + 1])
                    && backToBack[j + 1] < backToBack[0] * (1 - BURST_MARGIN);
            if (fasterAlone && !confirmed) {
                alone[i] = Double.POSITIVE_INFINITY;
            }
        }
    }

    /**
     * The median of {@code values} (the mean of the middle two for an even count). Not TimingStats': dev.ubuf.timing
     * depends on dev.ubuf.comm, which depends on this package.
     */
    private static double median(double[] values) {
        double[] v = values.clone();
        Arrays.sort(v);
        int n = v.length;
        return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    }

    /** Untimed replays, at least one, of a graph of {@code replayMillis} that bring it to its steady state. */
    static int heatReplays(double replayMillis) {
        return toFill(STEADY_HEAT_MICROS, replayMillis, MAX_HEAT_REPLAYS);
    }

    /** Runs a back-to-back graph holds for a GEMM whose first choice took {@code firstMillis} alone. */
    static int burstRuns(double firstMillis) {
        return toFill(BURST_MICROS, firstMillis, MAX_BURST_RUNS);
    }

    /** How many of something taking {@code eachMillis} fill {@code micros}: 1 to {@code most}. */
    private static int toFill(int micros, double eachMillis, int most) {
        double count = Math.ceil(micros / Math.max(1e-3, eachMillis * 1000));
        return (int) Math.max(1, Math.min(most, count));
    }

    /**
     * Milliseconds per run of each of {@code which} (candidate indices) timed back to back: each captured as a graph
     * of {@code runs} runs ({@code replayMillis} a replay, about) on {@code s}; in two passes, the second in reverse
     * order, each graph replays alone for about {@value #STEADY_HEAT_MICROS} µs, then {@link #BURST_ROUNDS} timed
     * replays follow it, all enqueued before one wait; the median of a candidate's replays. NaN for a candidate
     * cuBLASLt refused under capture.
     */
    private double[] backToBack(Launch launch, List<Integer> which, int runs, double replayMillis, long c,
                                long workspace, long workspaceBytes, CudaStream s) {
        double[] perRun = new double[which.size()];
        Arrays.fill(perRun, Double.NaN);
        List<CudaGraph> graphs = new ArrayList<>();
        List<Integer> captured = new ArrayList<>(); // positions in which
        List<CudaEvent> events = new ArrayList<>();
        try (Closer owned = new Closer("the back-to-back timing of cuBLASLt's candidates")) {
            for (int j = 0; j < which.size(); j++) {
                int index = which.get(j);
                try {
                    graphs.add(owned.register("graph " + index, s.capture(() -> {
                        for (int r = 0; r < runs; r++) {
                            launch.enqueue(index, c, workspace, workspaceBytes, s.nativeHandle());
                        }
                    }, false)));
                    captured.add(j);
                } catch (GemmException refused) {
                    // NaN: not confirmed
                }
            }
            if (graphs.isEmpty()) {
                return perRun;
            }
            // Each graph in its own steady state: it replays alone for about STEADY_HEAT_MICROS, then BURST_ROUNDS
            // timed replays follow it back to back; two passes, the second in reverse order, so drift cancels.
            int heat = heatReplays(replayMillis);
            List<Integer> order = new ArrayList<>(); // the graph of each timed replay
            for (int pass = 0; pass < 2; pass++) {
                for (int g = 0; g < graphs.size(); g++) {
                    for (int r = 0; r < BURST_ROUNDS; r++) {
                        order.add(pass == 0 ? g : graphs.size() - 1 - g);
                    }
                }
            }
            for (int e = 0; e < 2 * order.size(); e++) {
                events.add(owned.register("event " + e, context.createEvent(true)));
            }
            // Closed first, before the events and the graphs (last to first): the stream left idle, as after a
            // failure the GPU may still run the graphs (the driver defers destroying a graph or an event in flight
            // until it completes). Nothing ran on the stream before this point: capture only records.
            owned.onClose("the idle stream", () -> s.synchronize(DEADLINE));
            for (int k = 0; k < order.size(); k++) {
                CudaGraph graph = graphs.get(order.get(k));
                if (k % BURST_ROUNDS == 0) {
                    for (int h = 0; h < heat; h++) {
                        graph.launch(s);
                    }
                }
                events.get(2 * k).record(s);
                graph.launch(s);
                events.get(2 * k + 1).record(s);
            }
            finish(s, "the back-to-back runs");
            double[][] samples = new double[graphs.size()][2 * BURST_ROUNDS];
            int[] taken = new int[graphs.size()];
            for (int k = 0; k < order.size(); k++) {
                int g = order.get(k);
                samples[g][taken[g]++] = events.get(2 * k + 1).elapsedMillisSince(events.get(2 * k)) / runs;
            }
            for (int g = 0; g < graphs.size(); g++) {
                perRun[captured.get(g)] = median(samples[g]);
            }
            return perRun;
        }
    }

    private static void finish(CudaStream stream, String what) {
        if (!stream.synchronize(DEADLINE)) {
            throw new GemmException("timing cuBLASLt's candidates: " + what + " did not finish within "
                    + DEADLINE.toSeconds() + " s; a stream of this GPU probably waits on a peer (GEMMs are tuned only "
                    + "while none does: TpCommunicator.tuneGemms)");
        }
    }

    /** {@code runs} launches of candidate {@code i}; a cuBLASLt refusal marks it failed instead of ending tuning. */
    private static void run(Launch launch, int i, int runs, long c, long workspace, long workspaceBytes, CudaStream s,
                            GemmException[] failures) {
        if (failures[i] != null) {
            return;
        }
        try {
            for (int r = 0; r < runs; r++) {
                launch.enqueue(i, c, workspace, workspaceBytes, s.nativeHandle());
            }
        } catch (GemmException e) {
            failures[i] = e;
        }
    }
}

package dev.ubuf.timing;

import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaEvent;
import dev.ubuf.cuda.CudaGraph;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.resource.Closer;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Times several candidates on every rank of a domain, fairly, on the GPU: the rounds of {@link InterleavedRounds}
 * (every candidate once per round in a seeded shuffled order, a barrier before each sample, the maximum over ranks,
 * timed rounds sized by a {@link RoundBudget}), where one sample holds the stream on a device flag while the start
 * event, the work and the end event are enqueued, then releases it: the host's enqueue time is not measured. The
 * planner and the overlap benchmark both time through this class, so what one measures the other does.
 * A sample may run its work several times back to back ({@code callsPerSample}), its time over their number: the
 * ranks' hosts leave the barrier and release their holds some microseconds apart, and an op that needs its peers
 * waits for the last of them once per sample, which a single call's time carries whole.
 * Collective: every rank calls {@link #time} with the same candidate names.
 */
public final class InterleavedTimer implements AutoCloseable {
    private final TpCommunicator comm;
    private final CudaStream stream;
    private final StreamHold hold;
    private final CudaEvent start;
    private final CudaEvent end;
    private final int callsPerSample;
    private final Closer closer = new Closer("interleaved timer");

    /** The most calls one sample may run back to back. */
    public static final int MAX_CALLS_PER_SAMPLE = 64;

    /**
     * Enqueueing a candidate takes microseconds to milliseconds. A candidate whose enqueue blocks the host until its
     * stream makes progress would wait for ever on the held stream, so the hold is released after this long whatever
     * happens; such a sample includes host time and is counted in {@link Result#valveReleases()}.
     */
    static final java.time.Duration HOLD_LIMIT = java.time.Duration.ofSeconds(2);

    /**
     * {@code callsPerSample} when it is 1 to {@link #MAX_CALLS_PER_SAMPLE}; else an IllegalArgumentException naming
     * it {@code name} (the option or variable it came from), so every setting that reaches the timer is refused alike
     * before any GPU work.
     */
    public static int requireCallsPerSample(int callsPerSample, String name) {
        if (callsPerSample < 1 || callsPerSample > MAX_CALLS_PER_SAMPLE) {
            throw new IllegalArgumentException(name + " must be 1 to " + MAX_CALLS_PER_SAMPLE + ", got "
                    + callsPerSample);
        }
        return callsPerSample;
    }

    /** One call a sample. */
    public InterleavedTimer(TpCommunicator comm, CudaStream stream) {
        this(comm, stream, 1);
    }

    /** {@code callsPerSample} (1 to {@link #MAX_CALLS_PER_SAMPLE}) calls back to back a sample, its time per call. */
    public InterleavedTimer(TpCommunicator comm, CudaStream stream, int callsPerSample) {
        this.callsPerSample = requireCallsPerSample(callsPerSample, "calls per sample");
        this.comm = comm;
        this.stream = stream;
        CudaContext ctx = comm.context().makeCurrent();
        try {
            hold = closer.register("stream hold", new StreamHold(ctx, HOLD_LIMIT));
            start = closer.register("start event", ctx.createEvent(true));
            end = closer.register("end event", ctx.createEvent(true));
        } catch (RuntimeException e) {
            throw closer.closeAfter(e);
        }
    }

    /**
     * What {@link #time} measured: per candidate the timed rounds' maxima over ranks, how many rounds ran, their
     * orders, and how many samples on this rank had their hold released by the valve (0 in a sound measurement).
     */
    public record Result(Map<String, TimingStats> stats, int rounds, long seed, List<List<String>> orders,
                         int valveReleases) {
        public double median(String candidate) {
            return stats.get(candidate).median();
        }
    }

    /** Runs {@code warmup} untimed and exactly {@code iters} timed rounds of every candidate. */
    public Result time(Map<String, Runnable> candidates, int warmup, int iters, long seed) {
        if (warmup < 0 || iters < 1) {
            throw new IllegalArgumentException("warmup must be >= 0 and iters >= 1, got " + warmup + ", " + iters);
        }
        return time(candidates, RoundBudget.fixed(warmup, iters), seed);
    }

    /**
     * Runs every candidate once unheld, then the warm-up and timed rounds of {@code budget}, each candidate's work
     * issued on the timer's stream. Returns the same result on every rank.
     */
    public Result time(Map<String, Runnable> candidates, RoundBudget budget, long seed) {
        hold.resetValveReleases();
        // One unheld pass first: whatever a candidate does on the host at its first call (tuning its GEMMs,
        // creating its GEMM-only executor) happens here, never while the timed stream is held.
        for (var e : candidates.entrySet()) {
            comm.bootstrap().barrier();
            e.getValue().run();
            comm.await(stream, () -> "first call of " + e.getKey());
        }
        // A time budget counts the GPU's time, so K calls a sample need a K-th of the samples.
        RoundBudget b = callsPerSample == 1 || !budget.scaled() ? budget : new RoundBudget(budget.warmup(),
                budget.minRounds(), budget.maxRounds(), budget.msPerCandidate() / callsPerSample);
        InterleavedRounds.Result r = InterleavedRounds.run(comm.bootstrap(), this::sample, candidates, b, seed);
        return new Result(r.stats(), r.rounds(), r.seed(), r.orders(), hold.valveReleases());
    }

    /**
     * As {@link #time(Map, RoundBudget, long)}, but each candidate is timed as replays of a CUDA graph of one call, as
     * a layer that replays its steps runs it: per candidate (collective) one call runs (what a first call makes on the
     * host, it makes here), then one call is captured from the timer's stream with its kernels at their streams'
     * priorities. The work must be capturable (graph-safe ops, NCCL, GEMMs); the graphs are freed before this returns.
     */
    public Result timeReplays(Map<String, Runnable> candidates, RoundBudget budget, long seed) {
        try (Closer graphs = new Closer("replay graphs of rank " + comm.rank())) {
            Map<String, Runnable> replays = new LinkedHashMap<>();
            for (var e : candidates.entrySet()) {
                comm.bootstrap().barrier();
                e.getValue().run();
                comm.await(stream, () -> "the call of " + e.getKey() + " before its capture");
                CudaGraph g = graphs.register(e.getKey(), stream.capture(e.getValue(), true));
                replays.put(e.getKey(), () -> g.launch(stream));
            }
            return time(replays, budget, seed);
        }
    }

    /** One sample on this rank (the barrier before it is {@link InterleavedRounds}'), per call. */
    private double sample(String name, Runnable work) {
        try (StreamHold.Hold h = hold.hold(stream, "timing '" + name + "' on rank " + comm.rank())) {
            start.record(stream);
            for (int i = 0; i < callsPerSample; i++) {
                work.run();
            }
            end.record(stream);
        }
        comm.await(stream, () -> "timing " + name);
        return end.elapsedMillisSince(start) / callsPerSample;
    }

    /** Frees the events and the hold (its valve, flag and releasing stream). */
    @Override
    public void close() {
        closer.close();
    }
}

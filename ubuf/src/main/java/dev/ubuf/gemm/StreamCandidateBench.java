package dev.ubuf.gemm;

import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaEvent;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.StreamOrderedBuffer;
import dev.ubuf.cuda.StreamPriority;
import java.time.Duration;
import java.util.Arrays;

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
                double perRunMicros = Math.max(1e-3, stop.elapsedMillisSince(start) * 1000 / WARMUPS);
                lead[i] = (int) Math.min(MAX_LEAD_RUNS, Math.max(1, Math.ceil(LEAD_MICROS / perRunMicros)));
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
        }
        double[] best = new double[count];
        GemmException first = null;
        for (int i = 0; i < count; i++) {
            if (failures[i] != null) {
                best[i] = Double.NaN;
                first = first == null ? failures[i] : first;
            } else {
                double[] r = runs[i].clone();
                Arrays.sort(r);
                best[i] = r[r.length / 2];
            }
        }
        if (first != null && Arrays.stream(best).allMatch(Double::isNaN)) {
            throw new GemmException("every one of the " + count + " algorithms cuBLASLt proposed failed when timed "
                    + "(the first failure is the cause); set UB_GEMM_TUNING=0 to run its first choice untimed", first);
        }
        return best;
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

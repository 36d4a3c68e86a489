package dev.ubuf.op;

import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaDevice;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.exec.ExecutionSettings;
import dev.ubuf.devicekernels.DeviceKernels;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.timing.InterleavedRounds;
import dev.ubuf.timing.InterleavedTimer;
import dev.ubuf.timing.TimingStats;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Chooses how to run a shape among every registered method's candidates (each method with each option set of its
 * tuning space) and the NCCL reference, by measurement, not by thresholds: the first time a shape is asked for, every
 * candidate is created and its GEMMs tuned, then all of them run on the GPU in interleaved, shuffled rounds through
 * the overlap benchmark's timer ({@link InterleavedTimer}: stream held while enqueueing, each round's maximum over
 * ranks), as many rounds as {@link PlannerSettings#budgetMs()} of time per candidate asks (at least
 * {@link PlannerSettings#iters()}); the lowest median wins, near-ties going to the earliest candidate
 * ({@link CandidateTimes#choice()}), rank 0's choice is broadcast, and cached (memory and disk, per device). Because
 * the NCCL reference is always measured too, a planned op is never slower than it beyond measurement noise. With
 * graph-safe execution (the layers under {@code --cuda-graph}) each candidate is timed as the replay of a CUDA graph
 * holding one call, as those layers run it.
 *
 * <p>Collective: every rank of the domain asks for the same shapes in the same order.
 */
public final class Planner {
    private static final System.Logger LOG = System.getLogger(Planner.class.getName());
    private final MethodRegistry registry;
    private final PlannerSettings settings;
    private final PlanCache cache;

    public Planner(MethodRegistry registry, PlannerSettings settings) {
        this.registry = registry;
        this.settings = settings;
        this.cache = new PlanCache(settings.cacheFile());
    }

    /** The registered methods on the class path, settings from the environment. */
    public static Planner fromEnvironment() {
        return new Planner(MethodRegistry.load(), PlannerSettings.from(System.getenv()));
    }

    public MethodRegistry registry() {
        return registry;
    }

    /**
     * Every candidate for {@code shape}: the NCCL reference first, then each GEMM method's tuning space. NCCL's
     * pipelined reduce-scatter ({@code nccl:splits=S}) is not one: it ran slower than the unpipelined reference on
     * every shape measured (2 and 4 H100s), its kernels and the GEMMs slowing each other on the SMs.
     */
    public List<Candidate> candidates(OverlapShape shape) {
        return candidates(shape, null);
    }

    /**
     * The candidates for {@code shape} on {@code device}: as {@link #candidates(OverlapShape)}, less the methods
     * that cannot run on it ({@link OverlapMethod#unsupportedOn}; see {@link #skipped}). A null device skips none.
     */
    public List<Candidate> candidates(OverlapShape shape, CudaDevice device) {
        return candidates(shape, device, ExecutionSettings.DEFAULT);
    }

    /**
     * The candidates for {@code shape} on {@code device} executed with {@code exec}: as
     * {@link #candidates(OverlapShape, CudaDevice)}, less the schedules {@code exec} cannot run (an atomic GEMM step
     * under graph-safe signalling).
     */
    public List<Candidate> candidates(OverlapShape shape, CudaDevice device, ExecutionSettings exec) {
        List<Candidate> c = new ArrayList<>();
        c.add(Candidate.nccl());
        for (OverlapMethod m : registry.of(shape.collective())) {
            if (!m.hasGemm() || (device != null && m.unsupportedOn(device).isPresent())) {
                continue;
            }
            for (Map<String, String> opts : m.tuningSpace(shape)) {
                Schedule s = m.schedule(shape, opts);
                if (unsupportedWith(s, exec).isEmpty()) {
                    c.add(Candidate.of(s));
                }
            }
        }
        return c;
    }

    /** The GEMM methods of {@code shape}'s collective that {@code device} cannot run, each with the reason. */
    public Map<String, String> skipped(OverlapShape shape, CudaDevice device) {
        return skipped(shape, device, ExecutionSettings.DEFAULT);
    }

    /** As {@link #skipped(OverlapShape, CudaDevice)}, and the methods whose schedules {@code exec} cannot run. */
    public Map<String, String> skipped(OverlapShape shape, CudaDevice device, ExecutionSettings exec) {
        Map<String, String> why = new LinkedHashMap<>();
        for (OverlapMethod m : registry.of(shape.collective())) {
            if (!m.hasGemm()) {
                continue;
            }
            Optional<String> onDevice = device == null ? Optional.empty() : m.unsupportedOn(device);
            if (onDevice.isPresent()) {
                why.put(m.name(), onDevice.get());
                continue;
            }
            for (Map<String, String> opts : m.tuningSpace(shape)) {
                Optional<String> r = unsupportedWith(m.schedule(shape, opts), exec);
                if (r.isPresent()) {
                    why.put(m.name(), r.get());
                    break;
                }
            }
        }
        return why;
    }

    /**
     * Why the planner must not run {@code schedule} with {@code exec}. An atomic GEMM takes its counter values as
     * launch parameters, which graph-safe execution cannot replay (the CUDA executor refuses it); and its persistent
     * kernel holds every SM while it waits for chunks, so copies by an SM copy kernel (no copy engine) could wait
     * for SMs behind it: named explicitly it still runs, but the planner does not risk a hang at initialisation.
     */
    static Optional<String> unsupportedWith(Schedule schedule, ExecutionSettings exec) {
        if (!exec.graphSafe() && exec.useCopyEngine()) {
            return Optional.empty();
        }
        if (schedule.plan(0).steps().stream().noneMatch(st -> st instanceof PlanStep.AtomicGemm)) {
            return Optional.empty();
        }
        return Optional.of(schedule.label() + " runs an atomic GEMM, " + (exec.graphSafe()
                ? "which is not graph-safe yet" : "whose resident kernel would hold the SMs its SM copies need"));
    }

    /**
     * What the planner chose and why.
     *
     * @param source   "cache", "measured" or "untuned" (UB_TUNE=0 and nothing cached: the NCCL reference)
     * @param measured every candidate's times ({@link CandidateTimes#NONE} unless measured now)
     */
    public record Decision(OverlapShape shape, Candidate chosen, String source, CandidateTimes measured) {
        /** The choice, then the measurement as a table (ms and % of the fastest per candidate). */
        public String describe() {
            StringBuilder sb = new StringBuilder("plan " + shape.key() + ": " + chosen.label() + " (" + source + ")");
            measured.table(chosen.label()).forEach(line -> sb.append(System.lineSeparator()).append(line));
            return sb.toString();
        }
    }

    /** The op for {@code shape} (collective): the chosen candidate, created. */
    public OverlapOp planned(TpCommunicator comm, OverlapShape shape, DeviceKernels kernels, ExecutionSettings exec) {
        return decide(comm, shape, kernels, exec).chosen().create(comm, shape, kernels, exec);
    }

    /** {@link #planned(TpCommunicator, OverlapShape, DeviceKernels, ExecutionSettings)} with the default settings and
     * the copies on the copy engines or, with {@code useCopyEngine} false, by an SM copy kernel (TE's {@code use_ce}). */
    public OverlapOp planned(TpCommunicator comm, OverlapShape shape, DeviceKernels kernels, boolean useCopyEngine) {
        return planned(comm, shape, kernels, ExecutionSettings.DEFAULT.withCopyEngine(useCopyEngine));
    }

    /** Decides for {@code shape} (collective): rank 0's cached choice, else a measurement when tuning is on. */
    public Decision decide(TpCommunicator comm, OverlapShape shape, DeviceKernels kernels, ExecutionSettings exec) {
        List<Candidate> all = candidates(shape, comm.context().device(), exec);
        if (settings.debug() && comm.rank() == 0) {
            skipped(shape, comm.context().device(), exec).forEach((m, why) ->
                    LOG.log(System.Logger.Level.INFO, "ubuf: plan " + shape.key() + ": skipped " + m + ": " + why));
        }
        String key = key(comm.context().device(), shape, exec, settings.callsPerSample());
        String cached = comm.rank() == 0 ? cache.get(key).orElse("") : "";
        String agreed = broadcast(comm, cached);
        Optional<Candidate> hit = all.stream().filter(c -> c.label().equals(agreed)).findFirst();
        Decision d;
        if (hit.isPresent()) {
            d = new Decision(shape, hit.get(), "cache", CandidateTimes.NONE);
        } else if (settings.tune()) {
            d = measure(comm, shape, kernels, exec, all);
            cache.put(key, d.chosen().label(), comm.rank() == 0);
        } else {
            d = new Decision(shape, Candidate.nccl(), "untuned", CandidateTimes.NONE);
        }
        if (settings.debug() && comm.rank() == 0) {
            LOG.log(System.Logger.Level.INFO, "ubuf: " + d.describe());
        }
        return d;
    }

    /**
     * Records {@code chosen} as the choice for {@code shape} (rank 0 writes the cache file), for a caller that
     * measured it better in context than this planner's choice alone (a layer's whole steps); later decisions
     * for the shape take it from the cache.
     */
    public void remember(TpCommunicator comm, OverlapShape shape, ExecutionSettings exec, Candidate chosen) {
        cache.put(key(comm.context().device(), shape, exec, settings.callsPerSample()), chosen.label(),
                comm.rank() == 0);
    }

    /** Measures every candidate with the default execution settings (collective). */
    public Decision measure(TpCommunicator comm, OverlapShape shape, DeviceKernels kernels,
                            List<Candidate> candidates) {
        return measure(comm, shape, kernels, ExecutionSettings.DEFAULT, candidates);
    }

    /** Measures every candidate (collective), returns rank 0's choice on every rank. */
    public Decision measure(TpCommunicator comm, OverlapShape shape, DeviceKernels kernels, ExecutionSettings exec,
                            List<Candidate> candidates) {
        CudaContext ctx = comm.context().makeCurrent();
        List<OverlapOp> ops = new ArrayList<>();
        try (CudaStream s = ctx.createStream(StreamPriority.NORMAL);
             OperandBuffers operands = new OperandBuffers(ctx, kernels, shape, 1234 + comm.rank(), s);
             InterleavedTimer timer = new InterleavedTimer(comm, s, settings.callsPerSample())) {
            for (Candidate c : candidates) {
                OverlapOp op = c.create(comm, shape, kernels, exec);
                ops.add(op);
                operands.fillUserBuffer(op, s);
            }
            // Every candidate's GEMMs tuned first (collective), as the benchmark does: no timed call runs a GEMM
            // cuBLASLt has not chosen for yet, and none tunes while its peers wait.
            for (OverlapOp op : ops) {
                op.tuneGemms(operands.bindings(), s);
            }
            Map<String, Runnable> work = new LinkedHashMap<>();
            for (int i = 0; i < ops.size(); i++) {
                OverlapOp op = ops.get(i);
                work.put(candidates.get(i).label(), () -> op.forward(operands.bindings(), s));
            }
            // Graph-safe ops are made for layers that replay their steps as CUDA graphs: time each candidate as such
            // a replay. Issued call by call, their signal and wait kernels queue behind the GEMMs in ways a replay
            // does not, and the choice can differ (8B FP8 fc2 at tp 4 on 4 H200s: NCCL issued, scatter as replays,
            // and scatter's step 4% shorter).
            InterleavedTimer.Result r = exec.graphSafe()
                    ? timer.timeReplays(work, settings.rounds(), shape.key().hashCode())
                    : timer.time(work, settings.rounds(), shape.key().hashCode());
            Decision mine = choose(shape, candidates, r.stats(), r.rounds());
            String agreed = broadcast(comm, comm.rank() == 0 ? mine.chosen().label() : "");
            Candidate chosen = candidates.stream().filter(c -> c.label().equals(agreed)).findFirst().orElseThrow();
            return new Decision(shape, chosen, "measured", mine.measured());
        } finally {
            for (int i = ops.size() - 1; i >= 0; i--) {
                ops.get(i).close();
            }
        }
    }

    /**
     * The decision a measurement gives: {@code stats} holds, per candidate label, each timed round's maximum over
     * ranks ({@link InterleavedRounds.Result#stats()}); the lowest median wins, near-ties by candidate order.
     */
    static Decision choose(OverlapShape shape, List<Candidate> candidates, Map<String, TimingStats> stats,
                           int rounds) {
        Map<String, Double> medians = new LinkedHashMap<>();
        for (Candidate c : candidates) {
            var d = stats.get(c.label());
            if (d == null) {
                throw new IllegalArgumentException("no times for candidate " + c.label() + "; timed: " + stats.keySet());
            }
            medians.put(c.label(), d.median());
        }
        CandidateTimes times = new CandidateTimes(medians, rounds);
        String best = times.choice();
        Candidate chosen = candidates.stream().filter(c -> c.label().equals(best)).findFirst().orElseThrow();
        return new Decision(shape, chosen, "measured", times);
    }

    private static String broadcast(TpCommunicator comm, String s) {
        byte[] b = comm.bootstrap().broadcast(comm.rank() == 0 ? s.getBytes(StandardCharsets.UTF_8) : null, 0);
        return new String(b, StandardCharsets.UTF_8);
    }

    /**
     * The cache key of a decision: device model, compute capability, SM count, the shape and how the op is executed.
     * An in-ubuf shape's key says "values": before 2026-11-28 such shapes were measured on a fresh user buffer's
     * zeros, and choices cached then are measured again. A choice timed with several calls a sample
     * ({@link PlannerSettings#callsPerSample}) ends in " callsK".
     */
    static String key(CudaDevice device, OverlapShape shape, ExecutionSettings exec, int callsPerSample) {
        return (device.name() + " sm" + device.computeCapability() + " x" + device.smCount() + " | " + shape.key()
                + " | ce" + (exec.useCopyEngine() ? 1 : 0) + " sms" + exec.gemmSmBudget()
                + (exec.graphSafe() ? " graph" : "") + (shape.inputInUserBuffer() ? " values" : "")
                + (callsPerSample > 1 ? " calls" + callsPerSample : "")).replace(' ', '_');
    }
}

package dev.ubuf.plan;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Random;

/**
 * Runs the plans of every rank of a domain on Java {@code double[]} matrices, with simulated ranks and streams,
 * in a random valid interleaving: at each move one ready (rank, stream) head is picked uniformly and its step runs
 * atomically. CI has no GPU; this proves a plan's chunk arithmetic and synchronisation against a float64 reference.
 *
 * <p>Semantics (the CUDA executor implements the same):
 * <ul>
 * <li>Each stream runs its steps in plan-list order. {@code WaitEvent(e)} is ready once this call's
 *     {@code RecordEvent(e)} has run.</li>
 * <li>Calls are numbered e = 0, 1, 2, ... per rank. Every rank has one int flag per plan flag, starting at 0 and
 *     never reset. The k-th (1-based, plan-list order) {@code Signal(peer, flag)} of a sender's call e writes the
 *     absolute value {@code e * n + k} into the peer's flag, n = sender's {@code signalsSentPerCall(peer, flag)}.
 *     {@code WaitSignal(flag, count)} in the receiver's call e is ready when
 *     {@code (int) (value - (e * inc + count)) >= 0}, inc = {@code flagsReceivedPerCall().get(flag)}: the
 *     wrap-safe comparison of {@code CU_STREAM_WAIT_VALUE_GEQ}. All arithmetic is 32-bit and wraps.</li>
 * <li>A call of a rank: start (OUTPUT and SCRATCH are refilled with NaN, then {@link CallHooks#beforeCall} runs
 *     as the caller stream), fork (every stream starts after the caller), the steps, join (when every stream has
 *     finished, {@link CallHooks#afterCall} runs as the caller stream). A rank starts its next call only after it
 *     joined the previous one, but ranks are otherwise free: rank 0 may be in call e + 1 while rank 1 is in e.
 *     The start of a call is itself a move picked at random, so the caller's gap between calls varies.</li>
 * <li>GEMM: c = a * b (+ c). Copy: dst = src. Reduce: dst = (dst if accumulate, else 0) + sum of sources.
 *     AddBias: dst[i][j] += BIAS[0][j] (j the column of dst's matrix). Quantize: dst = fp8(src * the output scale
 *     of {@link HostRankMemory#setOutputScale}), saturated, raising {@link HostRankMemory#outputAmax()}. All in
 *     double; dtypes are ignored, except
 *     that an FP8 GEMM ({@link PlanStep.Gemm#fp8()}) computes c = (sa * a) * (sb * b) (+ c) with the scales set by
 *     {@link HostRankMemory#setScale}, and fails when a finite value of a or b is not representable in its matrix's
 *     FP8 type (so a plan that multiplies data it never quantized, or that moved wider data into an FP8 buffer, is
 *     caught).</li>
 * </ul>
 * Nothing ready while work remains is a deadlock: an {@link IllegalStateException} names every blocked head.
 * With race detection on (the default), any two accesses to one element, one of them a write, that no stream
 * order, event, signal or call boundary orders fail the run with both steps named, whatever interleaving ran.
 * Not thread-safe; one executor per test.
 */
public final class HostPlanExecutor {

    /**
     * @param seed        seeds the random choice of the next step (same seed, same plans: same interleaving)
     * @param detectRaces check every access against the happens-before order (small shapes: the shadow state is
     *                    elements x threads ints per matrix)
     */
    public record Options(long seed, boolean detectRaces) {
        public static Options seeded(long seed) {
            return new Options(seed, true);
        }

        public Options withoutRaceDetection() {
            return new Options(seed, false);
        }
    }

    /** The caller's stream around each call of each rank: feed inputs, read outputs. */
    public interface CallHooks {
        CallHooks NONE = new CallHooks() {
        };

        /** Runs when {@code rank} starts its call {@code call} (0-based), after OUTPUT/SCRATCH were poisoned. */
        default void beforeCall(int rank, long call, HostRankMemory memory) {
        }

        /** Runs when every stream of {@code rank} has finished call {@code call}. */
        default void afterCall(int rank, long call, HostRankMemory memory) {
        }
    }

    private final int tp;
    private final Random random;
    private final long firstCall;
    private final HostRaceDetector races;
    private final RankState[] ranks;
    private final int maxStreams;
    private int hookRank = -1;
    private boolean running;
    private boolean broken;

    public HostPlanExecutor(List<Plan> plans, long seed) {
        this(plans, Options.seeded(seed));
    }

    public HostPlanExecutor(List<Plan> plans, Options options) {
        this(plans, options, 0);
    }

    /** Starts the call numbering (and so the flags' values) at {@code firstCall}, to test 32-bit wrap. */
    HostPlanExecutor(List<Plan> plans, Options options, long firstCall) {
        Objects.requireNonNull(plans, "plans");
        Objects.requireNonNull(options, "options");
        if (plans.isEmpty()) {
            throw new IllegalArgumentException("no plans");
        }
        if (firstCall < 0) {
            throw new IllegalArgumentException("negative first call " + firstCall);
        }
        Plan.validateDomain(plans);
        validateForHost(plans);
        this.tp = plans.size();
        this.random = new Random(options.seed());
        this.firstCall = firstCall;
        int threads = 0;
        int widest = 0;
        for (Plan p : plans) {
            threads += p.streams().size() + 1 + atomicChunkThreads(p);
            widest = Math.max(widest, p.streams().size());
        }
        this.maxStreams = widest;
        this.races = options.detectRaces() ? new HostRaceDetector(threads) : null;
        this.ranks = new RankState[tp];
        int base = 0;
        for (int r = 0; r < tp; r++) {
            ranks[r] = new RankState(plans.get(r), base);
            base += plans.get(r).streams().size() + 1 + atomicChunkThreads(plans.get(r));
        }
    }

    /** Race-detector threads for the chunks of a plan's atomic GEMMs: each chunk runs as a thread of its own. */
    private static int atomicChunkThreads(Plan p) {
        int n = 0;
        for (PlanStep s : p.steps()) {
            if (s instanceof PlanStep.AtomicGemm g) {
                n += g.chunks();
            }
        }
        return n;
    }

    public int tp() {
        return tp;
    }

    public HostRankMemory memory(int rank) {
        return ranks[Objects.checkIndex(rank, tp)].memory;
    }

    /** Calls {@code rank} has completed so far. */
    public long callsDone(int rank) {
        return ranks[Objects.checkIndex(rank, tp)].callsDone;
    }

    /** The raw value of {@code rank}'s flag {@code flag}. */
    public int flagValue(int rank, int flag) {
        return ranks[Objects.checkIndex(rank, tp)].flags[flag];
    }

    public void runCalls(int calls) {
        runCalls(calls, CallHooks.NONE);
    }

    /** Runs {@code calls} more calls of the op on every rank, interleaved at random, and returns when all joined. */
    public void runCalls(int calls, CallHooks hooks) {
        Objects.requireNonNull(hooks, "hooks");
        if (calls < 0) {
            throw new IllegalArgumentException("negative call count " + calls);
        }
        if (running) {
            throw new IllegalStateException("runCalls is not reentrant (called from a hook?)");
        }
        if (broken) {
            throw new IllegalStateException("an earlier run failed; its state is not reusable");
        }
        running = true;
        try {
            long[] target = new long[tp];
            for (int r = 0; r < tp; r++) {
                target[r] = ranks[r].callsDone + calls;
            }
            int[] candidates = new int[tp * (maxStreams + 1)];
            while (true) {
                int n = 0;
                for (int r = 0; r < tp; r++) {
                    RankState rs = ranks[r];
                    if (!rs.inCall) {
                        if (rs.callsDone < target[r]) {
                            candidates[n++] = r * (maxStreams + 1);
                        }
                        continue;
                    }
                    for (int s = 0; s < rs.streamSteps.length; s++) {
                        if (rs.cursor[s] < rs.streamSteps[s].length && rs.ready(s)) {
                            candidates[n++] = r * (maxStreams + 1) + s + 1;
                        }
                    }
                }
                if (n == 0) {
                    for (RankState rs : ranks) {
                        if (rs.inCall) {
                            throw new IllegalStateException(deadlock());
                        }
                    }
                    return;
                }
                int pick = candidates[random.nextInt(n)];
                RankState rs = ranks[pick / (maxStreams + 1)];
                int stream = pick % (maxStreams + 1) - 1;
                if (stream < 0) {
                    rs.start(hooks);
                } else {
                    rs.execute(stream);
                }
                if (rs.inCall && rs.allStreamsDone()) {
                    rs.finish(hooks);
                }
            }
        } catch (RuntimeException | Error e) {
            broken = true;
            throw e;
        } finally {
            running = false;
            hookRank = -1;
        }
    }

    /** Accesses through {@link HostRankMemory}: the caller stream's while a hook runs, quiescent otherwise. */
    void callerAccess(int rank, BufferRole role, Region region, boolean write) {
        if (running && hookRank != rank) {
            throw new IllegalStateException("while calls run, rank " + rank
                    + "'s memory may only be used from that rank's own hooks (the caller stream of rank "
                    + hookRank + " cannot reach it)");
        }
        if (races == null) {
            return;
        }
        RankState rs = ranks[rank];
        HostRaceDetector.Shadow shadow = rs.shadow(role);
        if (!running) {
            if (write) {
                races.quiescentWrite(shadow, region);
            }
        } else if (write) {
            races.write(rs.callerThread, shadow, region);
        } else {
            races.read(rs.callerThread, shadow, region);
        }
    }

    private String deadlock() {
        StringBuilder sb = new StringBuilder("deadlock: no step can run but work remains");
        for (RankState rs : ranks) {
            if (!rs.inCall) {
                continue;
            }
            for (int s = 0; s < rs.streamSteps.length; s++) {
                if (rs.cursor[s] >= rs.streamSteps[s].length) {
                    continue;
                }
                int idx = rs.streamSteps[s][rs.cursor[s]];
                PlanStep step = rs.plan.steps().get(idx);
                sb.append("\n  rank ").append(rs.plan.rank()).append(" call ").append(rs.callsDone)
                        .append(" stream ").append(s).append(" (").append(rs.plan.streams().get(s))
                        .append(") blocked at step #").append(idx).append(' ').append(step).append(": ");
                switch (step) {
                    case PlanStep.WaitSignal w -> sb.append("flag ").append(w.flag()).append(" = ")
                            .append(rs.flags[w.flag()]).append(", needs ").append(rs.needed(w)).append(" (count ")
                            .append(w.count()).append(" of flag epoch ").append(rs.epoch).append(", ")
                            .append(rs.plan.flagsReceivedPerCall().get(w.flag())).append(" signals per call)");
                    case PlanStep.WaitEvent e -> sb.append("event ").append(e.event())
                            .append(" not yet recorded in this call");
                    case PlanStep.AtomicGemm g -> {
                        sb.append("chunks waiting for arrival:");
                        for (int c = 0; c < g.chunks(); c++) {
                            if (!rs.atomicChunkDone(idx, c)) {
                                int f = g.arrivalFlag() + c;
                                sb.append(" chunk ").append(c).append(" (flag ").append(f).append(" = ")
                                        .append(rs.flags[f]).append(", needs ").append(rs.neededOnce(f)).append(')');
                            }
                        }
                    }
                    default -> sb.append("ready (should not happen)");
                }
            }
        }
        return sb.toString();
    }

    private static void validateForHost(List<Plan> plans) {
        for (Plan p : plans) {
            Map<Long, Integer> signalStream = new HashMap<>();
            for (int i = 0; i < p.steps().size(); i++) {
                PlanStep step = p.steps().get(i);
                String at = "rank " + p.rank() + " step " + i + " (" + step + "): ";
                switch (step) {
                    case PlanStep.Signal sig -> {
                        Integer prior = signalStream.putIfAbsent(((long) sig.peer() << 32) | sig.flag(),
                                sig.stream());
                        if (prior != null && prior != sig.stream()) {
                            throw new IllegalArgumentException(at + "signals to one (peer, flag) must all be on one"
                                    + " stream, or they can land out of order and move the flag backwards");
                        }
                    }
                    case PlanStep.WaitSignal w -> {
                        if (w.count() > p.flagsReceivedPerCall().get(w.flag())) {
                            throw new IllegalArgumentException(at + "waits for more signals than the flag receives"
                                    + " per call (" + p.flagsReceivedPerCall().get(w.flag()) + ")");
                        }
                    }
                    case PlanStep.AddBias b -> {
                        if (p.matrix(BufferRole.BIAS).cols() < b.dst().endCol()) {
                            throw new IllegalArgumentException(at + "BIAS has fewer columns than the region");
                        }
                    }
                    default -> {
                    }
                }
                for (Region r : regions(step)) {
                    if (r.rank() == p.rank()) {
                        continue;
                    }
                    Plan peer = plans.get(r.rank());
                    MatrixSpec mine = p.matrix(r.buffer());
                    MatrixSpec theirs = peer.matrices().get(r.buffer());
                    if (theirs == null || theirs.rows() != mine.rows() || theirs.cols() != mine.cols()) {
                        throw new IllegalArgumentException(at + "rank " + r.rank() + "'s " + r.buffer() + " is "
                                + theirs + ", not " + mine.rows() + "x" + mine.cols() + " like this rank's");
                    }
                }
            }
        }
    }

    private static List<Region> regions(PlanStep step) {
        return switch (step) {
            case PlanStep.Gemm g -> g.addend() == null ? List.of(g.a(), g.b(), g.c())
                    : List.of(g.a(), g.b(), g.c(), g.addend());
            case PlanStep.Copy c -> List.of(c.src(), c.dst());
            case PlanStep.Reduce r -> {
                List<Region> all = new ArrayList<>(r.sources());
                all.add(r.dst());
                yield all;
            }
            case PlanStep.AddBias b -> List.of(b.dst());
            case PlanStep.Quantize q -> List.of(q.src(), q.dst());
            case PlanStep.AtomicGemm g -> List.of(g.a(), g.b(), g.c());
            default -> List.of();
        };
    }

    private double[] array(Region r) {
        return ranks[r.rank()].memory.raw(r.buffer());
    }

    private long cols(Region r) {
        return ranks[r.rank()].plan.matrix(r.buffer()).cols();
    }

    private void access(int thread, Region r, boolean write) {
        if (races == null) {
            return;
        }
        HostRaceDetector.Shadow shadow = ranks[r.rank()].shadow(r.buffer());
        if (write) {
            races.write(thread, shadow, r);
        } else {
            races.read(thread, shadow, r);
        }
    }

    private double[] read(Region r) {
        double[] src = array(r);
        long ld = cols(r);
        double[] out = new double[Math.toIntExact(r.rows() * r.cols())];
        int o = 0;
        for (long i = 0; i < r.rows(); i++) {
            int from = Math.toIntExact((r.row() + i) * ld + r.col());
            System.arraycopy(src, from, out, o, (int) r.cols());
            o += (int) r.cols();
        }
        return out;
    }

    private void write(Region r, double[] values) {
        double[] dst = array(r);
        long ld = cols(r);
        int o = 0;
        for (long i = 0; i < r.rows(); i++) {
            int to = Math.toIntExact((r.row() + i) * ld + r.col());
            System.arraycopy(values, o, dst, to, (int) r.cols());
            o += (int) r.cols();
        }
    }

    /** One simulated rank: its plan, memory, flags and where each of its streams is. */
    private final class RankState {
        final Plan plan;
        final HostRankMemory memory;
        final int[][] streamSteps;
        final int[] cursor;
        final int threadBase;
        final int callerThread;
        final int[] flags;
        final List<Map<Integer, int[]>> flagReleases = new ArrayList<>();
        final int[] signalOrdinal;
        final int[] signalsPerCall;
        final boolean[] recorded;
        final int[][] eventRelease;
        final Map<BufferRole, HostRaceDetector.Shadow> shadows = new EnumMap<>(BufferRole.class);
        /** Per step index of an atomic GEMM: its first chunk thread, and which chunks ran in this call. */
        final int[] chunkThreadBase;
        final boolean[][] chunkDone;
        final int[] chunksDone;
        long callsDone;
        boolean inCall;
        long epoch;

        RankState(Plan plan, int threadBase) {
            this.plan = plan;
            this.memory = new HostRankMemory(HostPlanExecutor.this, plan.rank(), plan.matrices());
            this.threadBase = threadBase;
            this.callerThread = threadBase + plan.streams().size();
            int ns = plan.streams().size();
            int[] perStream = new int[ns];
            for (PlanStep s : plan.steps()) {
                perStream[s.stream()]++;
            }
            streamSteps = new int[ns][];
            for (int s = 0; s < ns; s++) {
                streamSteps[s] = new int[perStream[s]];
            }
            int[] fill = new int[ns];
            int n = plan.steps().size();
            signalOrdinal = new int[n];
            signalsPerCall = new int[n];
            Map<Long, Integer> seen = new HashMap<>();
            for (int i = 0; i < n; i++) {
                PlanStep step = plan.steps().get(i);
                streamSteps[step.stream()][fill[step.stream()]++] = i;
                if (step instanceof PlanStep.Signal sig) {
                    signalOrdinal[i] = seen.merge(((long) sig.peer() << 32) | sig.flag(), 1, Integer::sum);
                    signalsPerCall[i] = plan.signalsSentPerCall(sig.peer(), sig.flag());
                }
            }
            cursor = new int[ns];
            flags = new int[plan.flagCount()];
            for (int f = 0; f < flags.length; f++) {
                flags[f] = (int) (firstCall * plan.flagsReceivedPerCall().get(f));
                flagReleases.add(new HashMap<>());
            }
            recorded = new boolean[plan.eventCount()];
            eventRelease = new int[plan.eventCount()][];
            chunkThreadBase = new int[n];
            chunkDone = new boolean[n][];
            chunksDone = new int[n];
            int nextThread = callerThread + 1;
            for (int i = 0; i < n; i++) {
                if (plan.steps().get(i) instanceof PlanStep.AtomicGemm g) {
                    chunkThreadBase[i] = nextThread;
                    nextThread += g.chunks();
                    chunkDone[i] = new boolean[g.chunks()];
                }
            }
        }

        boolean atomicChunkDone(int idx, int chunk) {
            return chunksDone[idx] > 0 && chunkDone[idx][chunk];
        }

        /** The value a flag that receives one signal per call reaches in this call. */
        int neededOnce(int flag) {
            return (int) (epoch * plan.flagsReceivedPerCall().get(flag) + 1);
        }

        boolean chunkReady(PlanStep.AtomicGemm g, int idx, int chunk) {
            return !atomicChunkDone(idx, chunk)
                    && (g.arrivalFlag() < 0 || flags[g.arrivalFlag() + chunk] - neededOnce(g.arrivalFlag() + chunk) >= 0);
        }

        /**
         * One chunk of an atomic GEMM, picked at random among the ready ones (the kernel's CTAs work on several
         * chunks at once): wait for its arrival, multiply its rows, raise its done flag. The stream moves on when
         * every chunk ran; the chunks run as threads forked from the stream and joined back into it.
         */
        void executeAtomic(int s, int idx, PlanStep.AtomicGemm g) {
            int t = threadBase + s;
            if (chunksDone[idx] == 0) {
                Arrays.fill(chunkDone[idx], false);
                if (races != null) {
                    int[] fork = races.release(t);
                    for (int c = 0; c < g.chunks(); c++) {
                        races.acquire(chunkThreadBase[idx] + c, fork);
                    }
                }
            }
            int[] ready = new int[g.chunks()];
            int n = 0;
            for (int i = 0; i < g.chunks(); i++) {
                int c = g.chunkAt(i);
                if (chunkReady(g, idx, c)) {
                    ready[n++] = c;
                }
            }
            int c = ready[random.nextInt(n)];
            int ct = chunkThreadBase[idx] + c;
            if (races != null) {
                races.begin(ct, new HostRaceDetector.Tag(plan.rank(), "stream " + s + " (" + plan.streams().get(s)
                        + ") chunk " + c, callsDone, idx, g + " chunk " + c));
                if (g.arrivalFlag() >= 0) {
                    int[] released = flagReleases.get(g.arrivalFlag() + c).get(neededOnce(g.arrivalFlag() + c));
                    if (released != null) {
                        races.acquire(ct, released);
                    }
                }
            }
            gemm(ct, new PlanStep.Gemm(s, g.aChunk(c), g.b(), g.cChunk(c), g.accumulate()));
            if (g.doneFlag() >= 0) {
                raise(ct, this, g.doneFlag() + c, (int) (epoch + 1), "rank " + plan.rank() + " step #" + idx + " "
                        + g + " chunk " + c);
            }
            if (races != null) {
                races.end(ct);
            }
            chunkDone[idx][c] = true;
            if (++chunksDone[idx] == g.chunks()) {
                chunksDone[idx] = 0;
                if (races != null) {
                    for (int x = 0; x < g.chunks(); x++) {
                        races.acquire(t, races.release(chunkThreadBase[idx] + x));
                    }
                }
                cursor[s]++;
            }
        }

        HostRaceDetector.Shadow shadow(BufferRole role) {
            return shadows.computeIfAbsent(role, r -> races.shadow(plan.rank(), r, plan.matrix(r)));
        }

        int needed(PlanStep.WaitSignal w) {
            return (int) (epoch * plan.flagsReceivedPerCall().get(w.flag()) + w.count());
        }

        boolean ready(int s) {
            PlanStep step = plan.steps().get(streamSteps[s][cursor[s]]);
            return switch (step) {
                case PlanStep.WaitSignal w -> flags[w.flag()] - needed(w) >= 0;
                case PlanStep.WaitEvent e -> recorded[e.event()];
                case PlanStep.AtomicGemm g -> {
                    for (int c = 0; c < g.chunks(); c++) {
                        if (chunkReady(g, streamSteps[s][cursor[s]], c)) {
                            yield true;
                        }
                    }
                    yield false;
                }
                default -> true;
            };
        }

        boolean allStreamsDone() {
            for (int s = 0; s < cursor.length; s++) {
                if (cursor[s] < streamSteps[s].length) {
                    return false;
                }
            }
            return true;
        }

        void start(CallHooks hooks) {
            inCall = true;
            epoch = firstCall + callsDone;
            Arrays.fill(cursor, 0);
            Arrays.fill(recorded, false);
            if (races != null) {
                races.begin(callerThread, new HostRaceDetector.Tag(plan.rank(), "caller", callsDone, -1,
                        "start of call (NaN into OUTPUT/SCRATCH, beforeCall)"));
            }
            for (BufferRole role : new BufferRole[] {BufferRole.OUTPUT, BufferRole.SCRATCH, BufferRole.STAGED_OUTPUT}) {
                if (memory.has(role)) {
                    MatrixSpec m = plan.matrix(role);
                    Region all = Region.rows(role, plan.rank(), 0, m.rows(), m.cols());
                    access(callerThread, all, true);
                    Arrays.fill(memory.raw(role), Double.NaN);
                }
            }
            hookRank = plan.rank();
            hooks.beforeCall(plan.rank(), callsDone, memory);
            hookRank = -1;
            if (races != null) {
                int[] fork = races.release(callerThread);
                races.end(callerThread);
                for (int s = 0; s < cursor.length; s++) {
                    races.acquire(threadBase + s, fork);
                }
            }
        }

        void finish(CallHooks hooks) {
            if (races != null) {
                for (int s = 0; s < cursor.length; s++) {
                    races.acquire(callerThread, races.release(threadBase + s));
                }
                races.begin(callerThread, new HostRaceDetector.Tag(plan.rank(), "caller", callsDone, -1,
                        "end of call (afterCall)"));
            }
            hookRank = plan.rank();
            hooks.afterCall(plan.rank(), callsDone, memory);
            hookRank = -1;
            if (races != null) {
                races.end(callerThread);
            }
            callsDone++;
            inCall = false;
        }

        void execute(int s) {
            int idx = streamSteps[s][cursor[s]];
            PlanStep step = plan.steps().get(idx);
            if (step instanceof PlanStep.AtomicGemm g) {
                executeAtomic(s, idx, g);
                return;
            }
            int t = threadBase + s;
            if (races != null) {
                races.begin(t, new HostRaceDetector.Tag(plan.rank(), "stream " + s + " (" + plan.streams().get(s)
                        + ")", callsDone, idx, step));
            }
            switch (step) {
                case PlanStep.Gemm g -> gemm(t, g);
                case PlanStep.Copy c -> {
                    access(t, c.src(), false);
                    access(t, c.dst(), true);
                    write(c.dst(), read(c.src()));
                }
                case PlanStep.Reduce r -> reduce(t, r);
                case PlanStep.AddBias b -> addBias(t, b);
                case PlanStep.Quantize q -> quantize(t, q);
                case PlanStep.Signal sig -> signal(t, idx, sig);
                case PlanStep.WaitSignal w -> {
                    if (races != null) {
                        int[] released = flagReleases.get(w.flag()).get(needed(w));
                        if (released != null) {
                            races.acquire(t, released);
                        }
                    }
                }
                case PlanStep.RecordEvent e -> {
                    recorded[e.event()] = true;
                    if (races != null) {
                        eventRelease[e.event()] = races.release(t);
                    }
                }
                case PlanStep.WaitEvent e -> {
                    if (races != null) {
                        races.acquire(t, eventRelease[e.event()]);
                    }
                }
                case PlanStep.AtomicGemm g -> throw new AssertionError("run by executeAtomic");
            }
            if (races != null) {
                races.end(t);
            }
            cursor[s]++;
        }

        private void signal(int t, int idx, PlanStep.Signal sig) {
            RankState peer = ranks[sig.peer()];
            int value = (int) (epoch * signalsPerCall[idx] + signalOrdinal[idx]);
            raise(t, peer, sig.flag(), value, "rank " + plan.rank() + " step #" + idx + " " + sig);
        }

        private void raise(int t, RankState peer, int flag, int value, String what) {
            int old = peer.flags[flag];
            if (value - old <= 0) {
                throw new IllegalStateException(what + " in call " + callsDone + " writes " + value + " into rank "
                        + peer.plan.rank() + "'s flag " + flag + ", which already holds " + old
                        + ": flags must only grow");
            }
            peer.flags[flag] = value;
            if (races != null) {
                peer.flagReleases.get(flag).put(value, races.release(t));
            }
        }

        private void gemm(int t, PlanStep.Gemm g) {
            access(t, g.a(), false);
            access(t, g.b(), false);
            if (g.accumulate()) {
                access(t, g.c(), false);
            }
            if (g.addend() != null) {
                access(t, g.addend(), false);
            }
            access(t, g.c(), true);
            double[] a = read(g.a());
            double[] b = read(g.b());
            double scale = 1;
            if (g.isFp8()) {
                requireFp8(g, g.a(), a);
                requireFp8(g, g.b(), b);
                scale = memory.scale(g.fp8().a()) * memory.scale(g.fp8().b());
            }
            double[] c = g.accumulate() ? read(g.c()) : g.addend() != null ? read(g.addend())
                    : new double[Math.toIntExact(g.c().rows() * g.c().cols())];
            int rows = (int) g.c().rows();
            int cols = (int) g.c().cols();
            int inner = (int) g.a().cols();
            for (int i = 0; i < rows; i++) {
                for (int j = 0; j < cols; j++) {
                    double sum = 0;
                    for (int k = 0; k < inner; k++) {
                        sum += a[i * inner + k] * b[k * cols + j];
                    }
                    c[i * cols + j] += scale * sum;
                }
            }
            write(g.c(), c);
        }

        /** Every finite value an FP8 GEMM reads must be one of its matrix's FP8 values. */
        private void requireFp8(PlanStep.Gemm g, Region r, double[] values) {
            dev.ubuf.tensor.DType t = ranks[r.rank()].plan.matrix(r.buffer()).dtype();
            dev.ubuf.fp8.Fp8Format f = dev.ubuf.fp8.Fp8Format.of(t);
            for (double v : values) {
                if (Double.isFinite(v) && (double) f.round((float) v) != v) {
                    throw new IllegalStateException("rank " + plan.rank() + " " + g + " reads " + v + " from " + r
                            + ", which is not a " + t.shortName() + " value: the data was never quantized");
                }
            }
        }

        private void reduce(int t, PlanStep.Reduce r) {
            for (Region src : r.sources()) {
                access(t, src, false);
            }
            if (r.accumulate()) {
                access(t, r.dst(), false);
            }
            access(t, r.dst(), true);
            double[] sum = r.accumulate() ? read(r.dst()) : new double[Math.toIntExact(r.dst().rows() * r.dst().cols())];
            for (Region src : r.sources()) {
                double[] v = read(src);
                for (int i = 0; i < sum.length; i++) {
                    sum[i] += v[i];
                }
            }
            write(r.dst(), sum);
        }

        /** dst = fp8(src * the output scale), rounded to nearest even and saturated; raises the output amax. */
        private void quantize(int t, PlanStep.Quantize q) {
            access(t, q.src(), false);
            access(t, q.dst(), true);
            dev.ubuf.fp8.Fp8Format f = dev.ubuf.fp8.Fp8Format.of(plan.matrix(q.dst().buffer()).dtype());
            double scale = memory.outputScale();
            double[] v = read(q.src());
            double amax = 0;
            for (int i = 0; i < v.length; i++) {
                amax = Math.max(amax, Math.abs(v[i]));
                v[i] = f.round((float) (v[i] * scale));
            }
            memory.raiseOutputAmax(amax);
            write(q.dst(), v);
        }

        private void addBias(int t, PlanStep.AddBias b) {
            Region bias = new Region(BufferRole.BIAS, plan.rank(), 0, 1, b.dst().col(), b.dst().cols());
            access(t, bias, false);
            access(t, b.dst(), false);
            access(t, b.dst(), true);
            double[] row = read(bias);
            double[] d = read(b.dst());
            int cols = (int) b.dst().cols();
            for (int i = 0; i < d.length; i++) {
                d[i] += row[i % cols];
            }
            write(b.dst(), d);
        }
    }
}

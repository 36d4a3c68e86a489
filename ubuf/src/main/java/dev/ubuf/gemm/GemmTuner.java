package dev.ubuf.gemm;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Chooses each GEMM's algorithm among cuBLASLt's heuristic candidates. With tuning on, a GEMM kind (shape, types,
 * transposes, leading dimensions, SM budget, TF32, accumulation, pointer alignments; see {@link MatmulPlan.Key}) is
 * timed once, every candidate on a private stream, and the fastest kept; the choice is remembered in memory and, per
 * device model and cuBLASLt version, in a file (see {@link TuningFile}), so later runners, processes and runs reuse it
 * without timing. With tuning off, or where timing is impossible (a stream capturing a graph), the heuristic's first
 * candidate is used, as cuBLASLt recommends.
 *
 * <p>When a kind may be timed is the tuner's {@link Policy}. Timing waits for the GPU, and a GPU whose streams wait on
 * a peer's flags (an overlapped op in flight) may not run the timing until that peer moves, while the peer waits for
 * this rank's host: two ranks tuning inside a step deadlocked the demo at tp 4. So a tensor-parallel domain's tuner
 * ({@link Policy#AT_INITIALISATION}) times only inside a {@link Window}, which the domain opens collectively while no
 * stream waits on a peer (see {@code TpCommunicator.tuneGemms}); outside one, a kind it has not seen runs the
 * heuristic's first choice untimed and says so once. The choices made in a window stay provisional until
 * {@link Window#settle} (the ranks agree on them first), so every rank runs the same algorithms.
 *
 * <p>A remembered choice is used only when cuBLASLt proposes that very algorithm again; otherwise (a different
 * candidate list) the kind is treated as not tuned.
 *
 * <p>Thread-safe; one tuner serves every {@link Gemm} of a communicator. Reads its file on the first GEMM that misses
 * its memory, not when created.
 */
public final class GemmTuner {
    private static final System.Logger LOG = System.getLogger(GemmTuner.class.getName());

    /** The index of the chosen candidate, and whether it may be kept (false: used once, chosen again next time). */
    /**
     * A candidate's index in the heuristic's list, or (index -1) {@code outside} it: a tuned algorithm the heuristic
     * no longer lists but cuBLASLt accepts for this GEMM (cublasLtMatmulAlgoCheck).
     */
    record Choice(int index, boolean settled, MatmulPlan.Candidate outside) {
        static final Choice FIRST = new Choice(0, true);

        Choice(int index, boolean settled) {
            this(index, settled, null);
        }
    }

    /** Whether cuBLASLt runs an algorithm for this GEMM: the workspace it needs, or -1 when refused. */
    @FunctionalInterface
    interface Check {
        Check NONE = algo -> -1;

        long workspaceBytes(MemorySegment algo);
    }

    /** Times candidates on the GPU: milliseconds per run of each (NaN for one that failed), or null if not now. */
    @FunctionalInterface
    interface Timer {
        Timer UNAVAILABLE = count -> null;

        double[] time(int candidates);
    }

    /** When a GEMM kind may be timed. */
    public enum Policy {
        /** At its first use: for GEMMs whose GPU nothing else waits on (one GPU, no peers), e.g. a GEMM benchmark. */
        ON_FIRST_USE,
        /** Only inside a {@link Window}: a tensor-parallel domain's GEMMs, whose GPUs may wait on each other. */
        AT_INITIALISATION
    }

    private final GemmTuning settings;
    private final Policy policy;
    private final Map<TuningFile.Entry, TunedAlgorithm> memory = new ConcurrentHashMap<>();
    /** Each GEMM kind run untuned, with why (never seen, or its tuned algorithm not among the candidates). */
    private final Map<TuningFile.Entry, String> untunedKinds = new ConcurrentHashMap<>();
    private final AtomicInteger timed = new AtomicInteger();
    private final AtomicInteger reused = new AtomicInteger();
    private final AtomicInteger untuned = new AtomicInteger();
    private final AtomicBoolean warnedAboutFile = new AtomicBoolean();
    private final AtomicReference<Window> window = new AtomicReference<>();

    /** A tuner that times each kind at its first use ({@link Policy#ON_FIRST_USE}). */
    public GemmTuner(GemmTuning settings) {
        this(settings, Policy.ON_FIRST_USE);
    }

    public GemmTuner(GemmTuning settings, Policy policy) {
        this.settings = Objects.requireNonNull(settings, "settings");
        this.policy = Objects.requireNonNull(policy, "policy");
    }

    public Policy policy() {
        return policy;
    }

    /** A tuner that never times: every GEMM takes the heuristic's first candidate. */
    public static GemmTuner disabled() {
        return new GemmTuner(GemmTuning.OFF);
    }

    public GemmTuning settings() {
        return settings;
    }

    /** GEMM kinds this tuner has timed so far. */
    public int timedCount() {
        return timed.get();
    }

    /** GEMM kinds whose remembered choice (from memory or the file) this tuner has used so far. */
    public int reusedCount() {
        return reused.get();
    }

    /**
     * How often a GEMM ran the heuristic's first choice untimed because its kind was not tuned and no window was open
     * (only under {@link Policy#AT_INITIALISATION}, with tuning on): once per kind and runner, since a runner keeps the
     * plan it made. Each is a GEMM the initialisation did not cover; {@link #untunedKinds()} names them.
     */
    public int untunedCount() {
        return untuned.get();
    }

    /** Every GEMM kind counted in {@link #untunedCount()}, one line each: the GEMM and why it was not tuned. */
    public List<String> untunedKinds() {
        return untunedKinds.entrySet().stream().map(e -> TuningFile.formatKey(e.getKey().key()) + ": "
                + e.getValue()).sorted().toList();
    }

    /**
     * Opens the window in which this tuner may time GEMMs (one at a time). Open it only while no stream of this GPU
     * waits on a peer, and run the GEMMs to tune inside it; their choices are provisional (each GEMM of the kind asks
     * again and gets the same answer, untimed) until {@link Window#settle}, or until the window closes.
     *
     * @throws IllegalStateException when a window is already open
     */
    public Window openWindow() {
        Window w = new Window();
        if (!window.compareAndSet(null, w)) {
            throw new IllegalStateException("a GEMM tuning window is already open on this tuner");
        }
        return w;
    }

    /**
     * The GEMM kinds timed in one window of a tuner. Closing it without {@link #settle} keeps the window's own
     * choices (a window of one rank alone); a domain settles the choices its ranks agreed on instead.
     */
    public final class Window implements AutoCloseable {
        private final Map<TuningFile.Entry, TunedAlgorithm> chosen = new ConcurrentHashMap<>();
        private boolean done;

        private Window() {
        }

        /** The choices made in this window so far, as tuning-file lines (device, GEMM, algorithm, times). */
        public List<String> choices() {
            return chosen.entrySet().stream().map(e -> TuningFile.formatLine(e.getKey(), e.getValue())).sorted()
                    .toList();
        }

        /**
         * Keeps {@code agreed} (tuning-file lines, e.g. {@link #agree} of every rank's {@link #choices}) in memory and
         * in the file, in place of this window's own choices, and closes the window.
         */
        public void settle(List<String> agreed) {
            Map<TuningFile.Entry, TunedAlgorithm> keep = new LinkedHashMap<>();
            for (String line : agreed) {
                TuningFile.parseLine(line).forEach(keep::put);
            }
            finish(keep);
        }

        private void finish(Map<TuningFile.Entry, TunedAlgorithm> keep) {
            if (done) {
                return;
            }
            done = true;
            window.compareAndSet(this, null);
            keep.forEach(memory::put);
            timed.addAndGet(keep.size());
            keep.forEach((entry, tuned) -> save(entry.device(), entry, tuned));
        }

        @Override
        public void close() {
            finish(chosen);
        }
    }

    /**
     * The choices the ranks of a domain agree on, from each rank's {@link Window#choices()} in rank order: for every
     * GEMM kind, the lowest rank's choice, so every rank runs the same algorithm.
     */
    public static List<String> agree(List<List<String>> choicesByRank) {
        Map<String, String> byKind = new LinkedHashMap<>();
        for (List<String> lines : choicesByRank) {
            for (String line : lines) {
                byKind.putIfAbsent(TuningFile.kindOf(line), line);
            }
        }
        return List.copyOf(byKind.values());
    }

    /**
     * The candidate to use for {@code key} on {@code device}: the remembered one, else the fastest as {@code timer}
     * measures it (remembered from then on), else the heuristic's first.
     *
     * @param algos the candidates' cublasLtMatmulAlgo_t bytes, in the heuristic's order (not empty)
     * @throws GemmException when every candidate failed to run
     */
    Choice choose(TuningDevice device, MatmulPlan.Key key, List<MemorySegment> algos, Timer timer) {
        return choose(device, key, algos, timer, Check.NONE);
    }

    /**
     * As {@link #choose(TuningDevice, MatmulPlan.Key, List, Timer)}; a remembered algorithm the heuristic does not
     * list now is still used when {@code check} accepts it. cuBLASLt's heuristic does not always list the same
     * algorithms for the same GEMM: on four H100s (2026-11-27) an FP32 GEMM tuned among 8 candidates had 7 in the
     * step after, without the one chosen.
     */
    Choice choose(TuningDevice device, MatmulPlan.Key key, List<MemorySegment> algos, Timer timer, Check check) {
        if (!settings.enabled() || algos.size() == 1) {
            return Choice.FIRST;
        }
        TuningFile.Entry entry = new TuningFile.Entry(device, key);
        TunedAlgorithm known = memory.get(entry);
        if (known == null) {
            loadFile(device); // another runner, process or run may have tuned it since
            known = memory.get(entry);
        }
        String why = "never tuned";
        if (known != null) {
            int index = indexOf(algos, known.algo());
            if (index >= 0) {
                reused.incrementAndGet();
                return new Choice(index, true);
            }
            MemorySegment algo = MemorySegment.ofArray(HexFormat.of().parseHex(known.algo()));
            long workspace = check.workspaceBytes(algo);
            if (workspace >= 0) {
                reused.incrementAndGet();
                return new Choice(-1, true, new MatmulPlan.Candidate(known.heuristicRank(), algo, workspace, 0f));
            }
            why = "its tuned algorithm (heuristic rank " + known.heuristicRank() + ") is not among the "
                    + algos.size() + " candidates cuBLASLt proposes now, and cuBLASLt refuses it here";
            LOG.log(System.Logger.Level.DEBUG, () -> "ubuf: the tuned algorithm for " + TuningFile.formatKey(key)
                    + " is no longer among cuBLASLt's candidates");
        }
        Window open = window.get();
        if (open != null) {
            TunedAlgorithm provisional = open.chosen.get(entry);
            int index = provisional == null ? -1 : indexOf(algos, provisional.algo());
            if (index >= 0) {
                return new Choice(index, false);
            }
        } else if (policy == Policy.AT_INITIALISATION) {
            untuned.incrementAndGet();
            if (untunedKinds.putIfAbsent(entry, why) == null) {
                LOG.log(untunedKinds.size() == 1 ? System.Logger.Level.WARNING : System.Logger.Level.DEBUG,
                        () -> "ubuf: GEMM " + TuningFile.formatKey(key) + " was not tuned at initialisation: it runs "
                                + "cuBLASLt's first choice, untimed (timing it now could deadlock with peers waiting "
                                + "on this GPU). Initialise the layers (TpContext.initialize) or the op "
                                + "(TpCommunicator.tuneGemms) with the shapes the steps use to tune it.");
            }
            return Choice.FIRST;
        }
        double[] millis = timer.time(algos.size());
        if (millis == null) {
            return new Choice(0, false);
        }
        if (open != null) {
            int best = best(key, algos, millis, MARGIN);
            open.chosen.put(entry, tuned(algos, millis, best));
            return new Choice(best, false);
        }
        return new Choice(remember(device, key, algos, millis, MARGIN), true);
    }

    /**
     * Times {@code key}'s candidates with {@code timer} whatever is remembered, and remembers (in memory and in the
     * file, replacing any earlier choice) the fastest, unless the heuristic's first is within {@code margin} of it.
     * For tuning offline, measured the way a benchmark measures (see {@code ubuf bench gemm --retune}), where the
     * online tuner's quick single runs on an idle GPU would not tell kernels a percent apart.
     *
     * @param margin how much faster than the heuristic's first a candidate must be to replace it, 0 to 1
     * @return the kept candidate's index and every candidate's time
     * @throws IllegalStateException when tuning is off (there is nowhere to keep the choice)
     * @throws GemmException         when every candidate failed to run
     */
    Retuned retune(TuningDevice device, MatmulPlan.Key key, List<MemorySegment> algos, Timer timer, double margin) {
        checkCanRetune();
        if (!(margin >= 0 && margin < 1)) {
            throw new IllegalArgumentException("margin must be in [0, 1), got " + margin);
        }
        double[] millis = timer.time(algos.size());
        if (millis == null) {
            throw new IllegalStateException("cannot time " + TuningFile.formatKey(key) + " now (the stream is "
                    + "capturing a graph)");
        }
        int chosen = remember(device, key, algos, millis, margin);
        return new Retuned(chosen, java.util.Arrays.stream(millis).boxed().toList());
    }

    /** Refuses to retune while tuning is off: there is nowhere to keep the choice, and no GEMM would use it. */
    void checkCanRetune() {
        if (!settings.enabled()) {
            throw new IllegalStateException("GEMM tuning is off (UB_GEMM_TUNING=0): a retuned choice would not be "
                    + "used; turn tuning on to retune");
        }
    }

    /**
     * A retuned GEMM kind: the index of the candidate kept and each candidate's time per run as the bench gave it
     * (NaN: failed; +Infinity: not timed to the end, e.g. screened out).
     */
    public record Retuned(int chosen, List<Double> millis) {
        public Retuned {
            millis = List.copyOf(millis);
            if (chosen < 0 || chosen >= millis.size()) {
                throw new IllegalArgumentException("chose candidate " + chosen + " of " + millis.size());
            }
        }
    }

    /** The index to keep among {@code millis} (see {@link #fastest(double[], double)}). */
    private static int best(MatmulPlan.Key key, List<MemorySegment> algos, double[] millis, double margin) {
        if (millis.length != algos.size()) {
            throw new IllegalStateException("timed " + millis.length + " of " + algos.size() + " candidates");
        }
        int best = fastest(millis, margin);
        if (best < 0) {
            throw new GemmException("none of the " + algos.size() + " algorithms cuBLASLt proposed for "
                    + TuningFile.formatKey(key) + " ran when timed; set UB_GEMM_TUNING=0 to run its first choice "
                    + "untimed");
        }
        return best;
    }

    private static TunedAlgorithm tuned(List<MemorySegment> algos, double[] millis, int best) {
        return new TunedAlgorithm(TunedAlgorithm.hex(bytes(algos.get(best))), best, millis[best], millis[0]);
    }

    private int remember(TuningDevice device, MatmulPlan.Key key, List<MemorySegment> algos, double[] millis,
                         double margin) {
        int best = best(key, algos, millis, margin);
        TuningFile.Entry entry = new TuningFile.Entry(device, key);
        TunedAlgorithm tuned = tuned(algos, millis, best);
        memory.put(entry, tuned);
        timed.incrementAndGet();
        LOG.log(System.Logger.Level.DEBUG, () -> "ubuf: tuned " + TuningFile.formatKey(key) + ": candidate " + best
                + " of " + algos.size() + ", " + millis[best] + " ms (heuristic first: " + millis[0] + " ms)");
        save(device, entry, tuned);
        return best;
    }

    /**
     * How much faster alone than the heuristic's first choice a candidate must time to replace it. A win alone must
     * also hold back to back, each candidate in its own steady state ({@link StreamCandidateBench}); this margin only
     * keeps near-equals from replacing the first. Confirmed beside the first in turn instead, 10 of 25 wins of 2-5%
     * alone ran at 1.02-1.08x torch.matmul's time on the first choice's kernel (88 sweep GEMMs, H200, cuBLASLt 13.1,
     * 2026-11-29).
     */
    static final double MARGIN = 0.02;

    /**
     * The index of the smallest finite time, unless the heuristic's first choice (index 0) ran and is within
     * {@link #MARGIN} of it; the earliest among equal ones; -1 when none is finite (every candidate failed).
     */
    static int fastest(double[] millis) {
        return fastest(millis, MARGIN);
    }

    /** {@link #fastest(double[])} with another margin. */
    static int fastest(double[] millis, double margin) {
        int best = -1;
        for (int i = 0; i < millis.length; i++) {
            if (Double.isFinite(millis[i]) && (best < 0 || millis[i] < millis[best])) {
                best = i;
            }
        }
        if (best > 0 && Double.isFinite(millis[0]) && millis[0] <= millis[best] * (1 + margin)) {
            return 0;
        }
        return best;
    }

    /** Adds {@code device}'s entries from its file to what this tuner remembers (its own choices stay). */
    private void loadFile(TuningDevice device) {
        Path file = settings.fileFor(device);
        if (file == null) {
            return;
        }
        try {
            TuningFile.read(file).forEach((entry, tuned) -> {
                if (entry.device().equals(device)) {
                    memory.putIfAbsent(entry, tuned);
                }
            });
        } catch (IOException e) {
            warnOnce("cannot read", file, e);
        }
    }

    private void save(TuningDevice device, TuningFile.Entry entry, TunedAlgorithm tuned) {
        Path file = settings.fileFor(device);
        if (file == null) {
            return;
        }
        try {
            TuningFile.merge(file, Map.of(entry, tuned));
        } catch (IOException e) {
            warnOnce("cannot save to", file, e);
        }
    }

    /**
     * A cache file that cannot be read or written costs a re-tune in the next run, not this run: say so once and
     * go on in memory. (A file that is there but damaged is an error: see {@link TuningFile#read}.)
     */
    private void warnOnce(String what, Path file, IOException e) {
        if (warnedAboutFile.compareAndSet(false, true)) {
            LOG.log(System.Logger.Level.WARNING, "ubuf: GEMM tuning " + what + " " + file + " (" + e + "); the "
                    + "choices are kept in memory for this process only. Point UB_GEMM_TUNING_FILE at a writable "
                    + "file to keep them.");
        }
    }

    private static int indexOf(List<MemorySegment> algos, String hex) {
        for (int i = 0; i < algos.size(); i++) {
            if (TunedAlgorithm.hex(bytes(algos.get(i))).equals(hex)) {
                return i;
            }
        }
        return -1;
    }

    private static byte[] bytes(MemorySegment algo) {
        return algo.asSlice(0, TunedAlgorithm.ALGO_BYTES).toArray(ValueLayout.JAVA_BYTE);
    }

    @Override
    public String toString() {
        return "GemmTuner[" + (settings.enabled() ? "on" : "off") + ", " + policy + ", timed " + timed + ", reused "
                + reused + ", untuned " + untuned + "]";
    }
}

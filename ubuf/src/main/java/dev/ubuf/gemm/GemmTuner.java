package dev.ubuf.gemm;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Chooses each GEMM's algorithm among cuBLASLt's heuristic candidates. With tuning on, the first GEMM of a kind
 * (shape, types, transposes, leading dimensions, SM budget, TF32, accumulation, pointer alignments; see
 * {@link MatmulPlan.Key}) times every candidate once and keeps the fastest; the choice is remembered in memory and,
 * per device model and cuBLASLt version, in a file (see {@link TuningFile}), so later runners, processes and runs reuse
 * it without timing. With tuning off, or where timing is impossible (a stream capturing a graph), the heuristic's
 * first candidate is used, as cuBLASLt recommends.
 *
 * <p>A remembered choice is used only when cuBLASLt proposes that very algorithm again; otherwise (a different
 * candidate list) the GEMM is timed again and the entry replaced.
 *
 * <p>Thread-safe; one tuner serves every {@link Gemm} of a communicator. Reads its file on the first GEMM that misses
 * its memory, not when created.
 */
public final class GemmTuner {
    private static final System.Logger LOG = System.getLogger(GemmTuner.class.getName());

    /** The index of the chosen candidate, and whether it may be kept (false: used once, chosen again next time). */
    record Choice(int index, boolean settled) {
        static final Choice FIRST = new Choice(0, true);
    }

    /** Times candidates on the GPU: milliseconds per run of each (NaN for one that failed), or null if not now. */
    @FunctionalInterface
    interface Timer {
        Timer UNAVAILABLE = count -> null;

        double[] time(int candidates);
    }

    private final GemmTuning settings;
    private final Map<TuningFile.Entry, TunedAlgorithm> memory = new ConcurrentHashMap<>();
    private final AtomicInteger timed = new AtomicInteger();
    private final AtomicInteger reused = new AtomicInteger();
    private final AtomicBoolean warnedAboutFile = new AtomicBoolean();

    public GemmTuner(GemmTuning settings) {
        this.settings = settings;
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
     * The candidate to use for {@code key} on {@code device}: the remembered one, else the fastest as {@code timer}
     * measures it (remembered from then on), else the heuristic's first.
     *
     * @param algos the candidates' cublasLtMatmulAlgo_t bytes, in the heuristic's order (not empty)
     * @throws GemmException when every candidate failed to run
     */
    Choice choose(TuningDevice device, MatmulPlan.Key key, List<MemorySegment> algos, Timer timer) {
        if (!settings.enabled() || algos.size() == 1) {
            return Choice.FIRST;
        }
        TuningFile.Entry entry = new TuningFile.Entry(device, key);
        TunedAlgorithm known = memory.get(entry);
        if (known == null) {
            loadFile(device); // another runner, process or run may have tuned it since
            known = memory.get(entry);
        }
        if (known != null) {
            int index = indexOf(algos, known.algo());
            if (index >= 0) {
                reused.incrementAndGet();
                return new Choice(index, true);
            }
            LOG.log(System.Logger.Level.DEBUG, () -> "ubuf: the tuned algorithm for " + TuningFile.formatKey(key)
                    + " is no longer among cuBLASLt's candidates; timing again");
        }
        double[] millis = timer.time(algos.size());
        if (millis == null) {
            return new Choice(0, false);
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

    private int remember(TuningDevice device, MatmulPlan.Key key, List<MemorySegment> algos, double[] millis,
                         double margin) {
        if (millis.length != algos.size()) {
            throw new IllegalStateException("timed " + millis.length + " of " + algos.size() + " candidates");
        }
        int best = fastest(millis, margin);
        if (best < 0) {
            throw new GemmException("none of the " + algos.size() + " algorithms cuBLASLt proposed for "
                    + TuningFile.formatKey(key) + " ran when timed; set UB_GEMM_TUNING=0 to run its first choice "
                    + "untimed");
        }
        TuningFile.Entry entry = new TuningFile.Entry(device, key);
        TunedAlgorithm tuned = new TunedAlgorithm(TunedAlgorithm.hex(bytes(algos.get(best))), best, millis[best],
                millis[0]);
        memory.put(entry, tuned);
        timed.incrementAndGet();
        LOG.log(System.Logger.Level.DEBUG, () -> "ubuf: tuned " + TuningFile.formatKey(key) + ": candidate " + best
                + " of " + algos.size() + ", " + millis[best] + " ms (heuristic first: " + millis[0] + " ms)");
        save(device, entry, tuned);
        return best;
    }

    /**
     * How much faster than the heuristic's first choice a candidate must time to replace it. Timed in the tuner, some
     * candidates won by a few percent and then ran slower than the first choice on their own, the kernel PyTorch's
     * cuBLAS runs (H200, cuBLASLt 13.1, 2026-11-23): a small win in the tuner is not evidence.
     */
    static final double MARGIN = 0.05;

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
        return "GemmTuner[" + (settings.enabled() ? "on" : "off") + ", timed " + timed + ", reused " + reused + "]";
    }
}

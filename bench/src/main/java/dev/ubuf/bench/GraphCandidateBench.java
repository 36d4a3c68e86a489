package dev.ubuf.bench;

import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.gemm.CandidateBench;
import dev.ubuf.gemm.CandidateScratch;
import dev.ubuf.gemm.GemmException;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;

/**
 * Times a GEMM's cuBLASLt candidates the way {@code ubuf bench gemm} times a GEMM ({@link EventTimer}), for
 * {@link dev.ubuf.gemm.Gemm#retune}: the online tuner's quick single runs, on a GPU that has just idled, cannot tell
 * kernels a percent apart at the clocks a busy GPU holds under its power limit.
 *
 * <p>Two phases. A screen times every candidate round-robin ({@link EventTimer#interleaved}: graphs of back-to-back
 * runs after a heat); cuBLASLt's first choice and the others within {@link #SCREEN_WINDOW} of the best go on, at
 * most {@link #FINALISTS} in all. The finalists are then timed each in its own steady state
 * ({@link EventTimer#eachHeated}), as a benchmark or a training step runs a GEMM, and those are the times returned;
 * a candidate screened out gets +Infinity (the tuner never picks it), one cuBLASLt refuses to launch NaN. The screen
 * alone is not enough: round-robin candidates share one clock state, which flatters kernels that draw more power.
 *
 * <p>The candidates write a scratch C and workspace laid out as {@link CandidateScratch} says (the caller's C is not
 * touched). Synchronous: returns when timed. Not thread-safe (it remembers its last screen).
 */
public final class GraphCandidateBench implements CandidateBench {
    /** How far behind the screen's best a candidate may be and still be timed in its steady state. */
    public static final double SCREEN_WINDOW = 0.03;
    /** The most candidates timed in their steady state, cuBLASLt's first choice included. */
    public static final int FINALISTS = 4;

    private final CudaContext context;
    private final CudaStream stream;
    private final int warmup;
    private final int iters;
    private final int runs;
    private final Duration heat;
    private double[] lastScreen = new double[0];

    /**
     * @param runs runs per graph, as {@link EventTimer#runsPerGraph(long, long, long)} gives for the GEMM's shape
     */
    public GraphCandidateBench(CudaContext context, CudaStream stream, int warmup, int iters, int runs,
                               Duration heat) {
        if (warmup < 0 || iters < 1 || runs < 1 || heat.isNegative()) {
            throw new IllegalArgumentException("need warmup >= 0, iters >= 1, runs >= 1 and heat >= 0; got "
                    + warmup + ", " + iters + ", " + runs + ", " + heat);
        }
        this.context = context;
        this.stream = stream;
        this.warmup = warmup;
        this.iters = iters;
        this.runs = runs;
        this.heat = heat;
    }

    @Override
    public double[] time(int count, long cBytes, long cAddress, long workspaceBytes, Launch launch) {
        if (stream.isCapturing()) {
            return null;
        }
        double[] millis = new double[count];
        Arrays.fill(millis, Double.NaN);
        try (DeviceBuffer scratch = context.allocate(CandidateScratch.bytes(workspaceBytes, cBytes),
                "GEMM retune scratch")) {
            CandidateScratch layout = CandidateScratch.at(scratch.address(), workspaceBytes, cAddress);
            long workspace = layout.workspace();
            long c = layout.c();
            stream.fill8(c, (byte) 0, cBytes); // an accumulating GEMM reads finite values
            LinkedHashMap<String, Runnable> runnable = new LinkedHashMap<>();
            for (int i = 0; i < count; i++) {
                int index = i;
                Runnable run = () -> launch.enqueue(index, c, workspace, workspaceBytes, stream.nativeHandle());
                try {
                    run.run();
                    runnable.put(Integer.toString(i), run);
                } catch (GemmException refused) {
                    // NaN: the tuner skips it
                }
            }
            stream.synchronize(); // a candidate that breaks the context shows here, before any graph
            if (runnable.isEmpty()) {
                return millis;
            }
            double[] screen = millis.clone();
            EventTimer.interleaved(context, stream, warmup, iters, runs, runnable, heat).stats()
                    .forEach((i, st) -> screen[Integer.parseInt(i)] = st.getPercentile(50));
            lastScreen = screen.clone();
            LinkedHashMap<String, Runnable> finalists = new LinkedHashMap<>();
            for (int i : finalists(screen)) {
                finalists.put(Integer.toString(i), runnable.get(Integer.toString(i)));
            }
            for (int i = 0; i < count; i++) {
                if (!Double.isNaN(screen[i])) {
                    millis[i] = Double.POSITIVE_INFINITY; // screened out, unless a finalist below
                }
            }
            EventTimer.eachHeated(context, stream, warmup, iters, runs, finalists, heat).stats()
                    .forEach((i, st) -> millis[Integer.parseInt(i)] = st.getPercentile(50));
        }
        return millis;
    }

    /** Per-run times of every candidate in the last call's screen (NaN: did not run), in candidate order. */
    public double[] lastScreen() {
        return lastScreen.clone();
    }

    /**
     * The candidates worth a steady-state timing, by their screen times (NaN: did not run): cuBLASLt's first
     * (index 0) when it ran, then the fastest others within {@link #SCREEN_WINDOW} of the best, at most
     * {@link #FINALISTS} in all; in index order.
     */
    static List<Integer> finalists(double[] screen) {
        double best = Arrays.stream(screen).filter(Double::isFinite).min().orElse(Double.NaN);
        List<Integer> others = new ArrayList<>();
        for (int i = 1; i < screen.length; i++) {
            if (Double.isFinite(screen[i]) && screen[i] <= best * (1 + SCREEN_WINDOW)) {
                others.add(i);
            }
        }
        others.sort(Comparator.comparingDouble(i -> screen[i]));
        List<Integer> chosen = new ArrayList<>();
        if (screen.length > 0 && Double.isFinite(screen[0])) {
            chosen.add(0);
        }
        for (int i : others) {
            if (chosen.size() < FINALISTS) {
                chosen.add(i);
            }
        }
        chosen.sort(null);
        return List.copyOf(chosen);
    }
}

package dev.ubuf.bench;

import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.gemm.CandidateBench;
import dev.ubuf.gemm.GemmException;
import org.apache.commons.math3.stat.descriptive.DescriptiveStatistics;

import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Times a GEMM's cuBLASLt candidates the way {@code ubuf bench gemm} times a GEMM ({@link EventTimer}): each one
 * captured in a graph of back-to-back runs, all replayed round-robin after a heat phase, a candidate's time the
 * median of its samples. For {@link dev.ubuf.gemm.Gemm#retune}: the online tuner's quick single runs, on a GPU that
 * has just idled, cannot tell kernels a percent apart at the clocks a busy GPU holds under its power limit.
 *
 * <p>The candidates write a scratch C at the caller's offset modulo 256 (the caller's C is not touched) and use a
 * scratch workspace; a candidate cuBLASLt refuses to launch gets NaN. Synchronous: returns when timed.
 */
public final class GraphCandidateBench implements CandidateBench {
    private static final long ALIGNMENT = 256;

    private final CudaContext context;
    private final CudaStream stream;
    private final int warmup;
    private final int iters;
    private final int runs;
    private final Duration heat;

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
        long workspaceSpan = roundUp(workspaceBytes);
        double[] millis = new double[count];
        Arrays.fill(millis, Double.NaN);
        try (DeviceBuffer scratch = context.allocate(ALIGNMENT + workspaceSpan + ALIGNMENT + cBytes,
                "GEMM retune scratch")) {
            long base = roundUp(scratch.address());
            long workspace = workspaceBytes == 0 ? 0 : base;
            long c = base + workspaceSpan + Long.remainderUnsigned(cAddress, ALIGNMENT);
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
            Map<String, DescriptiveStatistics> stats = EventTimer.interleaved(context, stream, warmup, iters, runs,
                    runnable, heat).stats();
            stats.forEach((i, st) -> millis[Integer.parseInt(i)] = st.getPercentile(50));
        }
        return millis;
    }

    private static long roundUp(long value) {
        return (value + ALIGNMENT - 1) & -ALIGNMENT;
    }
}

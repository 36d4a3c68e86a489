package dev.ubuf.atomic;

import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaEvent;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.KernelLibrary;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.gemm.Gemm;
import dev.ubuf.ops.DeviceKernels;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import java.util.Arrays;
import java.util.Locale;

/**
 * Times the atomic GEMM (no hooks, one chunk) and cuBLASLt on the same operands, alternating rounds, with CUDA
 * events; prints the median TFLOP/s of each, their ratio, and the tile configuration the atomic GEMM ran with.
 * Arguments: shapes {@code MxNxK} (default 8192x8192x8192), optionally {@code --layout=NK|KN} (default NK),
 * {@code --out=bf16|fp32} (default bf16), {@code --iters=N} (launches per round, default 20), {@code --rounds=N}
 * (default 10), {@code --tile=auto|256|224|192|160|128} (default auto: {@link TileConfig#select}'s choice; a width
 * forces that 128 x width tile where the layout has it). GPU 0, bf16 inputs.
 */
public final class AtomicGemmBench {
    private AtomicGemmBench() {
    }

    public static void main(String[] args) {
        BLayout layout = BLayout.NK;
        DType out = DType.BF16;
        int iters = 20;
        int rounds = 10;
        TileConfig forced = null;
        java.util.List<int[]> shapes = new java.util.ArrayList<>();
        for (String arg : args) {
            if (arg.startsWith("--layout=")) {
                layout = BLayout.valueOf(arg.substring(9).toUpperCase(Locale.ROOT));
            } else if (arg.startsWith("--out=")) {
                out = DType.parse(arg.substring(6));
            } else if (arg.startsWith("--iters=")) {
                iters = Integer.parseInt(arg.substring(8));
            } else if (arg.startsWith("--rounds=")) {
                rounds = Integer.parseInt(arg.substring(9));
            } else if (arg.startsWith("--tile=")) {
                String w = arg.substring(7);
                forced = w.equals("auto") ? null : TileConfig.valueOf("N" + w);
            } else {
                shapes.add(Arrays.stream(arg.toLowerCase(Locale.ROOT).split("x")).mapToInt(Integer::parseInt).toArray());
            }
        }
        if (shapes.isEmpty()) {
            shapes.add(new int[]{8192, 8192, 8192});
        }
        try (CudaContext ctx = CudaContext.retainPrimary(0);
             CudaStream stream = ctx.createStream(StreamPriority.NORMAL);
             KernelLibrary lib = KernelLibrary.load(ctx);
             Gemm gemm = new Gemm(ctx);
             AtomicGemmKernel kernel = AtomicGemmKernel.load(ctx);
             CudaEvent start = ctx.createEvent(true);
             CudaEvent stop = ctx.createEvent(true)) {
            DeviceKernels kernels = new DeviceKernels(lib);
            System.out.println("device " + ctx.device() + ", layout " + layout + ", out " + out.shortName()
                    + ", " + iters + " launches x " + rounds + " rounds");
            for (int[] s : shapes) {
                TileConfig config = forced != null && forced.supports(layout) ? forced
                        : kernel.select(s[0], s[1], 1, layout);
                run(s[0], s[1], s[2], layout, out, config, iters, rounds, ctx, stream, kernels, gemm, kernel, start,
                        stop);
            }
        }
    }

    private static void run(int m, int n, int k, BLayout layout, DType out, TileConfig config, int iters, int rounds,
                            CudaContext ctx,
                            CudaStream stream, DeviceKernels kernels, Gemm gemm, AtomicGemmKernel kernel,
                            CudaEvent start, CudaEvent stop) {
        DType in = DType.BF16;
        try (DeviceBuffer da = ctx.allocate((long) m * k * in.bytes());
             DeviceBuffer db = ctx.allocate((long) k * n * in.bytes());
             DeviceBuffer dd = ctx.allocate((long) m * n * out.bytes())) {
            TensorView a = TensorView.of(da, m, k, in);
            TensorView b = layout == BLayout.NK ? TensorView.of(db, n, k, in) : TensorView.of(db, k, n, in);
            TensorView d = TensorView.of(dd, m, n, out);
            kernels.fillRandom(a, 1, 1f, stream);
            kernels.fillRandom(b, 2, 1f, stream);
            Gemm.Options options = new Gemm.Options(false, layout == BLayout.NK, 0, false);
            double[] ours = new double[rounds];
            double[] theirs = new double[rounds];
            double flop = 2.0 * m * n * k;
            // Warm-up: module load, cuBLASLt heuristics, clocks.
            for (int i = 0; i < 3; i++) {
                kernel.launch(a, b, layout, d, 1f, 0f, 1, 0, AtomicGemmKernel.Hooks.NONE, config, stream);
                gemm.multiply(a, b, d, 1f, 0f, options, stream);
            }
            stream.synchronize();
            for (int r = 0; r < rounds; r++) {
                start.record(stream);
                for (int i = 0; i < iters; i++) {
                    kernel.launch(a, b, layout, d, 1f, 0f, 1, 0, AtomicGemmKernel.Hooks.NONE, config, stream);
                }
                stop.record(stream);
                stop.synchronize();
                ours[r] = flop * iters / (stop.elapsedMillisSince(start) * 1e-3) / 1e12;
                start.record(stream);
                for (int i = 0; i < iters; i++) {
                    gemm.multiply(a, b, d, 1f, 0f, options, stream);
                }
                stop.record(stream);
                stop.synchronize();
                theirs[r] = flop * iters / (stop.elapsedMillisSince(start) * 1e-3) / 1e12;
            }
            kernel.checkErrors();
            double o = median(ours);
            double t = median(theirs);
            int tiles = config.tiles(m, n, 1);
            System.out.printf(Locale.ROOT, "%dx%dx%d  atomic GEMM %.1f TFLOP/s  cuBLASLt %.1f TFLOP/s  ratio %.3f"
                            + "  tile %s (%s, %d tiles, %d SMs)%n", m, n, k, o, t, o / t, config,
                    config == kernel.select(m, n, 1, layout) ? "selected" : "forced", tiles,
                    kernel.multiprocessors());
        }
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }
}

package dev.ubuf.bench;

import dev.ubuf.atomic.AtomicGemmConfig;
import dev.ubuf.atomic.AtomicGemmKernel;
import dev.ubuf.atomic.BLayout;
import dev.ubuf.atomic.TileConfig;
import dev.ubuf.atomic.TileSchedule;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaEvent;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.KernelLibrary;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.gemm.Gemm;
import dev.ubuf.devicekernels.DeviceKernels;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import java.util.Arrays;
import java.util.Locale;

/**
 * Times the atomic GEMM (no hooks, one chunk) and cuBLASLt on the same operands, alternating rounds, with CUDA
 * events; prints the median TFLOP/s of each, their ratio, and the configuration (tile, split-K) the atomic GEMM ran
 * with. Arguments: shapes {@code MxNxK} (default 8192x8192x8192), optionally {@code --layout=NK|KN} (default NK),
 * {@code --out=bf16|fp32} (default bf16), {@code --iters=N} (launches per round, default 20), {@code --rounds=N}
 * (default 10), {@code --tile=auto|256|224|192|160|128} (default auto: {@link AtomicGemmConfig#select}'s tile; a
 * width forces that 128 x width tile where the layout has it), {@code --splits=auto|N} (default auto: the rule's
 * split-K for the tile; N forces N splits, at most K's steps), {@code --hold=both|on|off} (default both),
 * {@code --schedule=auto|cooperative|pingpong|cooperative-cluster} (default auto: what a launch chooses,
 * {@link AtomicGemmConfig#select}; cooperative: the cooperative rule's 128-row tile and split-K; pingpong: the 64-row
 * ping-pong kernels with the ping-pong rule's tile unless --tile forces one; cooperative-cluster: the cooperative
 * tile in 2-CTA clusters sharing B; neither of the last two splits K: --splits must then be auto or 1). Clustered
 * lines also print how many clusters fit on the device at once. The defaults of
 * --tile, --splits and --schedule can also come from {@code -Dubuf.atomic.tile=}, {@code -Dubuf.atomic.splits=}
 * and {@code -Dubuf.atomic.schedule=}.
 *
 * <p>Hold: "on" holds the stream on a device flag while a round's launches are enqueued and releases it after, so
 * the events time the GPU's work alone (as the GEMM tuner does); "off" times launches as Java enqueues them, where
 * a short kernel can wait for the host's next launch (tens of microseconds from Java); "both" runs and prints
 * both, each alternating ours and cuBLASLt's. GPU 0, bf16 inputs.
 */
public final class AtomicGemmBench {
    private AtomicGemmBench() {
    }

    public static void main(String[] args) {
        BLayout layout = BLayout.NK;
        DType out = DType.BF16;
        int iters = 20;
        int rounds = 10;
        String tileArg = System.getProperty("ubuf.atomic.tile", "auto");
        String splitsArg = System.getProperty("ubuf.atomic.splits", "auto");
        String hold = "both";
        String scheduleArg = System.getProperty("ubuf.atomic.schedule", "auto");
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
                tileArg = arg.substring(7);
            } else if (arg.startsWith("--splits=")) {
                splitsArg = arg.substring(9);
            } else if (arg.startsWith("--schedule=")) {
                scheduleArg = arg.substring(11);
            } else if (arg.startsWith("--hold=")) {
                hold = arg.substring(7);
                if (!hold.equals("both") && !hold.equals("on") && !hold.equals("off")) {
                    throw new IllegalArgumentException("--hold must be both, on or off, got " + hold);
                }
            } else {
                shapes.add(Arrays.stream(arg.toLowerCase(Locale.ROOT).split("x")).mapToInt(Integer::parseInt).toArray());
            }
        }
        if (shapes.isEmpty()) {
            shapes.add(new int[]{8192, 8192, 8192});
        }
        TileConfig forced = tileArg.equals("auto") ? null : TileConfig.valueOf("N" + tileArg);
        Integer forcedSplits = splitsArg.equals("auto") ? null : Integer.valueOf(splitsArg);
        // auto: the launch's own rule (AtomicGemmConfig.select); else that schedule's rule
        AtomicGemmConfig.Schedule schedule = scheduleArg.equals("auto") ? null
                : AtomicGemmConfig.Schedule.parse(scheduleArg);
        if (schedule != null && !schedule.splitsK() && forcedSplits != null && forcedSplits != 1) {
            throw new IllegalArgumentException("--schedule=" + scheduleArg
                    + " has no split-K: --splits must be auto or 1, got " + forcedSplits);
        }
        try (CudaContext ctx = CudaContext.retainPrimary(0);
             CudaStream stream = ctx.createStream(StreamPriority.NORMAL);
             CudaStream releaser = ctx.createStream(StreamPriority.HIGH);
             DeviceBuffer holdFlag = ctx.allocate(Integer.BYTES);
             KernelLibrary lib = KernelLibrary.load(ctx);
             Gemm gemm = new Gemm(ctx);
             AtomicGemmKernel kernel = AtomicGemmKernel.load(ctx);
             CudaEvent start = ctx.createEvent(true);
             CudaEvent stop = ctx.createEvent(true)) {
            DeviceKernels kernels = new DeviceKernels(lib);
            System.out.println("device " + ctx.device() + ", layout " + layout + ", out " + out.shortName()
                    + ", " + iters + " launches x " + rounds + " rounds, tile " + tileArg + ", splits " + splitsArg
                    + ", hold " + hold + ", schedule " + scheduleArg);
            releaser.fill32(holdFlag.address(), 0, 1);
            releaser.synchronize();
            Hold h = new Hold(releaser, holdFlag.address());
            for (int[] s : shapes) {
                AtomicGemmConfig selected = schedule == null ? kernel.select(s[0], s[1], s[2], 1, layout)
                        : kernel.select(s[0], s[1], s[2], 1, layout, schedule);
                TileConfig tile = forced != null && forced.supports(layout) ? forced : selected.tile();
                int splits = forcedSplits != null ? Math.min(forcedSplits, TileSchedule.kSteps(s[2]))
                        : forced == null ? selected.splits() : 1;
                AtomicGemmConfig config = new AtomicGemmConfig(tile, splits, selected.schedule());
                for (String mode : hold.equals("both") ? new String[]{"on", "off"} : new String[]{hold}) {
                    run(s[0], s[1], s[2], layout, out, config, selected, iters, rounds, ctx, stream,
                            mode.equals("on") ? h : null, kernels, gemm, kernel, start, stop);
                }
            }
            releaser.synchronize();
        }
    }

    /** Holds a stream on a device flag until released (a fresh value each time). */
    private static final class Hold {
        final CudaStream releaser;
        final long flag;
        int value;

        Hold(CudaStream releaser, long flag) {
            this.releaser = releaser;
            this.flag = flag;
        }

        /** Enqueues the wait on {@code s}; returns the value {@link #release} must write. */
        int hold(CudaStream s) {
            s.waitValue32(flag, ++value);
            return value;
        }

        void release(int v) {
            releaser.writeValue32(flag, v);
        }
    }

    /** Times {@code iters} launches on {@code stream} (held while enqueued when {@code hold} is given); TFLOP/s. */
    private static double timeRound(Runnable launch, int iters, double flop, CudaStream stream, Hold hold,
                                    CudaEvent start, CudaEvent stop) {
        int v = hold == null ? 0 : hold.hold(stream);
        try {
            start.record(stream);
            for (int i = 0; i < iters; i++) {
                launch.run();
            }
            stop.record(stream);
        } finally {
            if (hold != null) {
                hold.release(v);
            }
        }
        stop.synchronize();
        return flop * iters / (stop.elapsedMillisSince(start) * 1e-3) / 1e12;
    }

    private static void run(int m, int n, int k, BLayout layout, DType out, AtomicGemmConfig config,
                            AtomicGemmConfig selected, int iters, int rounds, CudaContext ctx, CudaStream stream,
                            Hold hold, DeviceKernels kernels, Gemm gemm, AtomicGemmKernel kernel, CudaEvent start,
                            CudaEvent stop) {
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
            Runnable ourLaunch = () -> kernel.launch(a, b, layout, d, 1f, 0f, 1, 0, AtomicGemmKernel.Hooks.NONE,
                    config, stream);
            Runnable theirLaunch = () -> gemm.multiply(a, b, d, 1f, 0f, options, stream);
            // Warm-up: module load, cuBLASLt heuristics, clocks, and enough launches for the JIT to compile the
            // launch paths (unheld, a process's first shape otherwise measured Java's interpreter).
            for (int i = 0; i < Math.max(3, 2 * iters); i++) {
                ourLaunch.run();
                theirLaunch.run();
            }
            stream.synchronize();
            for (int r = 0; r < rounds; r++) {
                ours[r] = timeRound(ourLaunch, iters, flop, stream, hold, start, stop);
                theirs[r] = timeRound(theirLaunch, iters, flop, stream, hold, start, stop);
            }
            kernel.checkErrors();
            double o = median(ours);
            double t = median(theirs);
            int tiles = config.tiles(m, n, 1);
            String clusters = config.schedule().clusterSize() == 1 ? ""
                    : ", " + kernel.maxActiveClusters(in, layout, out, config) + " co-resident clusters";
            System.out.printf(Locale.ROOT, "%dx%dx%d  atomic GEMM %.1f TFLOP/s  cuBLASLt %.1f TFLOP/s  ratio %.3f"
                            + "  hold %s  tile %dx%d %s splits %d (%s; rule: %s; %d tiles, %d units, %d K steps,"
                            + " %d SMs%s)%n",
                    m, n, k, o, t, o / t, hold != null ? "on" : "off", config.tileM(), config.tile().tileN(),
                    config.schedule().name().toLowerCase(Locale.ROOT), config.splits(),
                    config.equals(selected) ? "selected" : "forced", selected, tiles, config.units(m, n, 1),
                    TileSchedule.kSteps(k), kernel.multiprocessors(), clusters);
        }
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }
}

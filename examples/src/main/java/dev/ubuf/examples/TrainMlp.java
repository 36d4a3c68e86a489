package dev.ubuf.examples;

import dev.ubuf.bootstrap.Bootstrap;
import dev.ubuf.bootstrap.LaunchEnvironment;
import dev.ubuf.bootstrap.TcpBootstrap;
import dev.ubuf.comm.ThreadDomain;
import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.Cuda;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.layers.config.UbConfig;
import dev.ubuf.layers.tp.Activation;
import dev.ubuf.layers.tp.TpContext;
import dev.ubuf.layers.tp.TpLayer;
import dev.ubuf.layers.train.DataParallelGroup;
import dev.ubuf.layers.train.LayerStack;
import dev.ubuf.layers.train.MlpSpec;
import dev.ubuf.layers.train.SimulatedTraining;
import dev.ubuf.layers.train.Trainer;
import dev.ubuf.op.PlannerSettings;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;

import java.nio.file.Path;
import java.util.Locale;

/**
 * Trains a stack of tensor-parallel LayerNormMLP blocks with communication overlap, configured by a {@code ub_*}
 * YAML file, and prints the loss of every step. On GPUs, one rank per GPU: one JVM per GPU when started by the
 * launcher ({@code dev.ubuf.launch.Launcher}), else one JVM with a thread per GPU. Without a GPU it says so and
 * trains the same stack on simulated ranks on the host.
 *
 * <p>Arguments: {@code [config.yaml] [steps]} (default {@code ub_config.yaml}, 5 steps).
 */
public final class TrainMlp {
    private static final long SEED = 42;
    private static final float LR = 0.2f;

    private TrainMlp() {
    }

    public static void main(String[] args) throws Exception {
        Path yaml = Path.of(args.length > 0 ? args[0] : "ub_config.yaml");
        int steps = args.length > 1 ? Integer.parseInt(args[1]) : 5;
        boolean launched = System.getenv(LaunchEnvironment.RANK) != null;
        int gpus = visibleGpus();
        if (gpus == 0 && !launched) {
            simulate(yaml, steps);
        } else if (launched) {
            try (TcpBootstrap boot = TcpBootstrap.connectFromEnvironment()) {
                CudaContext ctx = CudaContext.retainPrimary(LaunchEnvironment.fromEnvironment().localRank());
                try {
                    train(boot, ctx, yaml, steps);
                } finally {
                    ctx.close();
                }
            }
        } else {
            ThreadDomain.run(gpus, UbufEnvironment.fromSystem().timeout(),
                    (rank, boot, ctx) -> train(boot, ctx, yaml, steps));
        }
    }

    /** No GPU: the same model on 2 simulated ranks, its communication run on the overlap methods' plans. */
    private static void simulate(Path yaml, int steps) {
        int tp = 2;
        MlpSpec spec = new MlpSpec(64, 256, Activation.GELU, 2);
        long tokens = 32;
        UbConfig config = config(yaml, tp);
        System.out.printf("no GPU found: SIMULATING %d tensor-parallel ranks on the host (float64)%n", tp);
        System.out.print(config.methodTable().describe());
        SimulatedTraining sim = SimulatedTraining.create(config, spec, tokens, LR, SEED);
        // One batch, seen every step, so that the loss falls as the stack fits it.
        SimulatedTraining.Batch batch = sim.batch(SEED * 1000);
        for (int step = 0; step < steps; step++) {
            double loss = sim.step(batch);
            System.out.printf(Locale.ROOT, "step %d  loss %.6f%n", step, loss);
        }
    }

    /** One rank on one GPU: the TP group is every rank of the job (one replica). */
    private static void train(Bootstrap boot, CudaContext ctx, Path yaml, int steps) {
        int tp = boot.size();
        MlpSpec spec = new MlpSpec(1024, 4096, Activation.GELU, 2);
        long tokens = 2048;
        long rows = tokens / tp;
        DType dtype = DType.BF16;
        UbConfig config = config(yaml, tp);
        UbufEnvironment env = UbufEnvironment.fromSystem();
        if (boot.rank() == 0) {
            System.out.printf("training on %d GPUs (%s), tp %d%n", tp, ctx.device().name(), tp);
            System.out.print(config.methodTable().describe());
        }
        try (TpCommunicator comm = TpCommunicator.create(boot, ctx, env, null);
             Bootstrap alone = boot.subgroup(new int[]{boot.rank()});
             DataParallelGroup dp = DataParallelGroup.join(alone, ctx);
             CudaStream s = ctx.createStream(StreamPriority.NORMAL);
             DeviceBuffer xb = ctx.allocate(rows * spec.hidden() * dtype.bytes(), "example.x");
             DeviceBuffer tb = ctx.allocate(rows * spec.hidden() * dtype.bytes(), "example.target");
             LayerStack stack = LayerStack.create(TpContext.create(comm, config, dtype, tokens,
                     PlannerSettings.from(System.getenv())), spec);
             Trainer trainer = Trainer.create(stack, dp, LR)) {
            stack.initialize(SEED, s);
            TensorView x = TensorView.of(xb, rows, spec.hidden(), dtype);
            TensorView target = TensorView.of(tb, rows, spec.hidden(), dtype);
            // One batch (this rank's rows of it), seen every step, so that the loss falls as the stack fits it.
            long batchSeed = TpLayer.shardSeed(SEED * 1000, boot.rank());
            stack.context().kernels().fillRandom(x, batchSeed, 1f, s);
            stack.context().kernels().fillRandom(target, batchSeed ^ 0x5DEECE66DL, 1f, s);
            for (int step = 0; step < steps; step++) {
                trainer.step(x, target, s);
                double loss = trainer.loss(s);
                if (boot.rank() == 0) {
                    System.out.printf(Locale.ROOT, "step %d  loss %.6f%n", step, loss);
                }
            }
        }
    }

    /** The YAML file's overlap settings for {@code tp} ranks under sequence parallelism. */
    private static UbConfig config(Path yaml, int tp) {
        return UbConfig.builder().tensorModelParallelSize(tp).sequenceParallel(true).tpCommOverlap(true).load(yaml)
                .tensorModelParallelSize(tp).build();
    }

    private static int visibleGpus() {
        try {
            return Cuda.deviceCount();
        } catch (RuntimeException | LinkageError e) {
            return 0;
        }
    }
}

package dev.ubuf.cli;

import dev.ubuf.ag.AgShape;
import dev.ubuf.comm.ThreadDomain;
import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.KernelLibrary;
import dev.ubuf.exec.ExecutionSettings;
import dev.ubuf.op.Collective;
import dev.ubuf.op.MethodRegistry;
import dev.ubuf.op.OverlapShape;
import dev.ubuf.op.Planner;
import dev.ubuf.op.PlannerSettings;
import dev.ubuf.ops.DeviceKernels;
import dev.ubuf.rs.RsShape;
import dev.ubuf.tensor.DType;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

import java.util.concurrent.Callable;

/** Shows how the planner decides a shape: every candidate, measured now, and the one chosen. */
@Command(name = "plan", mixinStandardHelpOptions = true, version = UbufCli.VERSION,
        description = {"Measures every candidate the planner considers for one shape (each registered method with"
                + " each option set of its tuning space, and the NCCL reference), in shuffled rounds on tp GPUs,"
                + " and prints their medians and the choice (what UB_DEBUG=1 prints for a planned op)."})
final class PlanCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;
    @Option(names = "--tp", defaultValue = "2", paramLabel = "N", description = "Ranks (default: ${DEFAULT-VALUE}).")
    int tp;
    @Option(names = "--op", required = true, paramLabel = "ag|rs", description = "The collective: ag or rs. Default: none, required.")
    String op;
    @Option(names = "--shape", required = true, paramLabel = "M,K,N",
            description = "The shape: AG: N per rank; RS: K per rank. Default: none, required.")
    String shape;
    @Option(names = "--dtype", defaultValue = "bf16", converter = BenchDTypes.Converter.class,
            completionCandidates = BenchDTypes.class, paramLabel = "TYPE",
            description = "Element type: ${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE}).")
    DType dtype;
    @Option(names = "--bias", description = "RS: add a bias after the reduction (default: ${DEFAULT-VALUE}).")
    boolean bias;
    @Option(names = "--iters", defaultValue = "10", paramLabel = "N",
            description = "Timed rounds per candidate (default: ${DEFAULT-VALUE}).")
    int iters;

    @Override
    public Integer call() throws Exception {
        OptionChecks.within(spec, "--tp", tp, 2, OverlapBenchOptions.MAX_TP);
        OptionChecks.atLeast(spec, "--iters", iters, 1);
        Collective c;
        try {
            c = Collective.parse(op);
        } catch (IllegalArgumentException e) {
            throw OptionChecks.invalid(spec, "--op: " + e.getMessage());
        }
        long[] mkn;
        OverlapShape s;
        try {
            mkn = BenchShapes.mkn(shape);
            s = c == Collective.ALL_GATHER ? new AgShape(tp, mkn[0], mkn[1], mkn[2], dtype)
                    : new RsShape(tp, mkn[0], mkn[1], mkn[2], dtype, bias);
        } catch (IllegalArgumentException e) {
            throw OptionChecks.invalid(spec, "--shape: " + e.getMessage());
        }
        UbufEnvironment env = UbufEnvironment.fromSystem();
        PlannerSettings fromEnv = PlannerSettings.from(System.getenv());
        Planner planner = new Planner(MethodRegistry.load(),
                new PlannerSettings(true, fromEnv.cacheFile(), iters, false));
        System.out.println(planner.candidates(s).size() + " candidates for " + s.key());
        ThreadDomain.run(tp, env.timeout(), (rank, boot, ctx) -> {
            try (TpCommunicator comm = TpCommunicator.create(boot, ctx, env, null);
                 KernelLibrary lib = KernelLibrary.load(ctx)) {
                var d = planner.measure(comm, s, new DeviceKernels(lib), ExecutionSettings.DEFAULT,
                        planner.candidates(s));
                if (rank == 0) {
                    System.out.println(d.describe());
                }
            }
        });
        return 0;
    }
}

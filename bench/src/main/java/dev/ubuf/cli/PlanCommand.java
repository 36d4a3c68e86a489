package dev.ubuf.cli;

import dev.ubuf.ag.AgShape;
import dev.ubuf.comm.ThreadDomain;
import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.KernelLibrary;
import dev.ubuf.exec.ExecutionSettings;
import dev.ubuf.op.Collective;
import dev.ubuf.op.Fp8Operands;
import dev.ubuf.op.MethodRegistry;
import dev.ubuf.op.OverlapShape;
import dev.ubuf.op.Planner;
import dev.ubuf.op.PlannerSettings;
import dev.ubuf.devicekernels.DeviceKernels;
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
                + " each option set of its tuning space, and the NCCL reference) as a planned op does: GEMMs tuned"
                + " first, then shuffled interleaved rounds on tp GPUs through the overlap benchmark's timer (each"
                + " round's maximum over ranks), rounds sized by --budget-ms; prints a table of the medians (ms, %%"
                + " of the fastest) and the choice (what UB_DEBUG=1 prints for a planned op).",
                "With --fp8 the shape's operands are FP8 (the layers' FP8 ops): the candidates are the FP8 plans of"
                + " every method that runs FP8 and the FP8 NCCL reference."})
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
            description = "The fewest timed rounds per candidate, as UB_TUNE_ITERS (default: ${DEFAULT-VALUE}).")
    int iters;
    @Option(names = "--budget-ms", defaultValue = "25", paramLabel = "MS",
            description = "About this much measured time per candidate, as UB_TUNE_MS: short ops get more rounds"
                    + " (at most " + PlannerSettings.MAX_ROUNDS + "); 0: exactly --iters (default: ${DEFAULT-VALUE}).")
    double budgetMs;
    @Option(names = "--fp8", description = "FP8 operands, as the layers' FP8 GEMMs have them: the input in"
            + " --fp8-input's format and an E4M3 weight stored [n, k]; the AG moves FP8 chunks, --dtype is the output's"
            + " (and RS partials') type; K and N must be multiples of 16 (default: ${DEFAULT-VALUE}).")
    boolean fp8;
    @Option(names = "--fp8-input", defaultValue = "e4m3", paramLabel = "e4m3|e5m2",
            description = "With --fp8: the input's format, e4m3 (activations, the forward GEMMs) or e5m2 (gradients,"
                    + " the dgrad GEMMs under the hybrid format) (default: ${DEFAULT-VALUE}).")
    String fp8Input;

    @Option(names = "--cuda-graph", description = "Plan as a layer under `ubuf demo --cuda-graph` does: graph-safe"
            + " ops, each candidate timed as the replay of a CUDA graph holding one call; without it each call is"
            + " issued on its own, as `bench ag|rs` times them (default: ${DEFAULT-VALUE}).")
    boolean cudaGraph;

    /** The operands of --fp8 and --fp8-input; the IllegalArgumentException names the option. */
    static Fp8Operands fp8Operands(String input) {
        return switch (input) {
            case "e4m3" -> Fp8Operands.E4M3;
            case "e5m2" -> new Fp8Operands(DType.FP8_E5M2, DType.FP8_E4M3);
            default -> throw new IllegalArgumentException("--fp8-input: " + input + " must be e4m3 or e5m2");
        };
    }

    @Override
    public Integer call() throws Exception {
        OptionChecks.within(spec, "--tp", tp, 2, OverlapBenchOptions.MAX_TP);
        OptionChecks.atLeast(spec, "--iters", iters, 1);
        if (!(budgetMs >= 0) || Double.isInfinite(budgetMs)) {
            throw OptionChecks.invalid(spec, "--budget-ms must be a finite number >= 0, got " + budgetMs);
        }
        Collective c;
        try {
            c = Collective.parse(op);
        } catch (IllegalArgumentException e) {
            throw OptionChecks.invalid(spec, "--op: " + e.getMessage());
        }
        Fp8Operands operands = null;
        if (fp8) {
            try {
                operands = fp8Operands(fp8Input);
            } catch (IllegalArgumentException e) {
                throw OptionChecks.invalid(spec, e.getMessage());
            }
        } else if (spec.commandLine().getParseResult().hasMatchedOption("--fp8-input")) {
            throw OptionChecks.invalid(spec, "--fp8-input needs --fp8");
        }
        long[] mkn;
        OverlapShape s;
        try {
            mkn = BenchShapes.mkn(shape);
            AgShape ag = c == Collective.ALL_GATHER ? new AgShape(tp, mkn[0], mkn[1], mkn[2], dtype) : null;
            RsShape rs = ag == null ? new RsShape(tp, mkn[0], mkn[1], mkn[2], dtype, bias) : null;
            s = operands == null ? (ag != null ? ag : rs) : ag != null ? ag.withFp8(operands) : rs.withFp8(operands);
        } catch (IllegalArgumentException e) {
            throw OptionChecks.invalid(spec, "--shape: " + e.getMessage());
        }
        UbufEnvironment env = UbufEnvironment.fromSystem();
        PlannerSettings fromEnv = PlannerSettings.from(System.getenv());
        Planner planner = new Planner(MethodRegistry.load(),
                new PlannerSettings(true, fromEnv.cacheFile(), iters, budgetMs, false));
        ThreadDomain.run(tp, env.timeout(), (rank, boot, ctx) -> {
            try (TpCommunicator comm = TpCommunicator.create(boot, ctx, env, null);
                 KernelLibrary lib = KernelLibrary.load(ctx)) {
                ExecutionSettings exec = cudaGraph ? ExecutionSettings.DEFAULT.withGraphSafe(true)
                        : ExecutionSettings.DEFAULT;
                var candidates = planner.candidates(s, ctx.device(), exec);
                if (rank == 0) {
                    System.out.println(candidates.size() + " candidates for " + s.key());
                    planner.skipped(s, ctx.device(), exec).forEach((m, why) ->
                            System.out.println("  skipped " + m + ": " + why));
                }
                var d = planner.measure(comm, s, new DeviceKernels(lib), exec, candidates);
                if (rank == 0) {
                    System.out.println(d.describe());
                }
            }
        });
        return 0;
    }
}

package dev.ubuf.cli;

import dev.ubuf.bench.LayerSimulation;
import dev.ubuf.cuda.Cuda;
import dev.ubuf.layers.config.UbConfig;
import dev.ubuf.layers.tp.Activation;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * The main job: a tensor-parallel LayerNormMLP step with communication overlap. Without a GPU it simulates the
 * step's overlapped communication on the host executor at a small size and checks it against the unoverlapped
 * computation.
 */
@Command(name = "demo", mixinStandardHelpOptions = true, version = UbufCli.VERSION,
        description = {"A sequence-parallel LayerNormMLP (LayerNorm, fc1, GELU or SwiGLU, fc2) with the overlap"
                + " the configuration selects. On a machine without a GPU it runs the step's overlapped"
                + " communication plans on the host executor (a SIMULATION at a small size, --tp simulated ranks),"
                + " checks every result against the unoverlapped computation and prints the schedules."})
final class DemoCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;
    @Option(names = "--hidden", defaultValue = "64", paramLabel = "H",
            description = "Hidden size (default: ${DEFAULT-VALUE}).")
    long hidden;
    @Option(names = "--ffn", defaultValue = "128", paramLabel = "F",
            description = "MLP units, divisible by the ranks (default: ${DEFAULT-VALUE}).")
    long ffn;
    @Option(names = "--swiglu", description = "SwiGLU instead of GELU (default: ${DEFAULT-VALUE}).")
    boolean swiglu;
    @Option(names = "--tokens", defaultValue = "32", paramLabel = "M",
            description = "Tokens per step, a multiple of the ranks (default: ${DEFAULT-VALUE}).")
    long tokens;
    @Option(names = "--tp", defaultValue = "2", paramLabel = "N",
            description = "Ranks of the simulation (default: ${DEFAULT-VALUE}).")
    int tp;
    @Option(names = "--config", paramLabel = "FILE",
            description = "A ub_* overlap configuration (YAML or JSON; default: none, TE's defaults with overlap on).")
    Path config;
    @Option(names = "--no-comm-overlap", description = "Turn every overlap off (default: ${DEFAULT-VALUE}).")
    boolean noOverlap;
    @Option(names = "--fp8", description = "FP8 GEMMs: not supported yet (default: ${DEFAULT-VALUE}).")
    boolean fp8;
    @Option(names = "--seed", defaultValue = "1", paramLabel = "S",
            description = "Seed of the simulated data and interleavings (default: ${DEFAULT-VALUE}).")
    long seed;

    @Override
    public Integer call() {
        if (fp8) {
            throw OptionChecks.invalid(spec, "--fp8: FP8 is not supported yet (it comes with ubuf's FP8 GEMMs)");
        }
        OptionChecks.within(spec, "--tp", tp, 2, 8);
        OptionChecks.atLeast(spec, "--hidden", hidden, 1);
        if (tokens < tp || tokens % tp != 0) {
            throw OptionChecks.invalid(spec, "--tokens: " + tokens + " must be a positive multiple of --tp " + tp);
        }
        if (ffn < 1 || ffn % tp != 0) {
            throw OptionChecks.invalid(spec, "--ffn: " + ffn + " must be a positive multiple of --tp " + tp);
        }
        if (config != null && !Files.isReadable(config)) {
            throw OptionChecks.invalid(spec, "--config: cannot read " + config);
        }
        UbConfig cfg;
        try {
            UbConfig.Builder b = UbConfig.builder().tensorModelParallelSize(tp).sequenceParallel(true)
                    .tpCommOverlap(true);
            if (config != null) {
                b.load(config);
            }
            if (noOverlap) {
                b.tpCommOverlap(false);
            }
            cfg = b.tensorModelParallelSize(tp).build();
        } catch (RuntimeException e) {
            throw OptionChecks.invalid(spec, "--config: " + e.getMessage());
        }
        PrintWriter out = spec.commandLine().getOut();
        if (hasGpu()) {
            spec.commandLine().getErr().println("ubuf demo: the GPU training loop is not finished yet; this run"
                    + " simulates on the host instead.");
        }
        Activation act = swiglu ? Activation.SWIGLU : Activation.GELU;
        out.printf("SIMULATION (host executor, %d simulated ranks, no GPU work): one LayerNormMLP step, hidden %d,"
                + " ffn %d, %s, %d tokens%n", tp, hidden, ffn, act, tokens);
        out.print(cfg.methodTable().describe());
        List<LayerSimulation.Result> results = LayerSimulation.run(cfg, tp, tokens, hidden, ffn, act, seed);
        boolean all = true;
        for (LayerSimulation.Result r : results) {
            out.printf("%-10s %-30s %s%n", r.gemm(), r.variant(), r.detail());
            all &= r.matches();
        }
        for (LayerSimulation.Result r : results) {
            if (!r.timeline().isEmpty()) {
                out.printf("%n%s schedule of rank 0 (%s):%n%s", r.gemm(), r.variant(), r.timeline());
            }
        }
        out.println(all ? "simulation: overlapped and unoverlapped paths match on every rank"
                : "simulation: MISMATCH between the overlapped and unoverlapped paths");
        out.flush();
        return all ? 0 : 1;
    }

    private static boolean hasGpu() {
        try {
            return Cuda.deviceCount() > 0;
        } catch (RuntimeException | LinkageError e) {
            return false;
        }
    }
}

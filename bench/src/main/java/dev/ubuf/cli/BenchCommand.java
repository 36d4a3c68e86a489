package dev.ubuf.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

import java.util.concurrent.Callable;

/** Benchmarks; each prints its results and, with --out, writes them in the results format. */
@Command(name = "bench", mixinStandardHelpOptions = true, version = UbufCli.VERSION,
        description = {"Benchmarks: GEMM, peer copies, AllGather->GEMM and GEMM->ReduceScatter overlap, layer kernels.",
                "Each prints its results; with --out FILE it also writes them as a results file (format in"
                        + " bench/results/README.md; the measured runs are kept in bench/results/)."},
        subcommands = {GemmBenchCommand.class, P2pBenchCommand.class, PushesBenchCommand.class, AgBenchCommand.class, RsBenchCommand.class,
                SweepBenchCommand.class, EvidenceBenchCommand.class, Fp8GemmBenchCommand.class, KernelBenchCommand.class,
                ChartCommand.class, BreakdownCommand.class,
                CommandLine.HelpCommand.class})
final class BenchCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    /** A benchmark must be named: the usage, and the exit code of a usage error. */
    @Override
    public Integer call() {
        spec.commandLine().getErr().println("ubuf bench: name a benchmark: gemm, p2p, pushes, ag, rs, sweep, ce, fp8 or kernels (or chart, to redraw a sweep chart)");
        spec.commandLine().usage(spec.commandLine().getErr());
        return CliErrors.USAGE;
    }
}

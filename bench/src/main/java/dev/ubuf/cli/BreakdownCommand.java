package dev.ubuf.cli;

import dev.ubuf.bench.ChromeTrace;
import dev.ubuf.bench.TraceBreakdown;
import dev.ubuf.trace.RankTrace;
import dev.ubuf.trace.StepTrace;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;

/** Where a traced step's time went, from its trace file: no GPU. */
@Command(name = "breakdown", mixinStandardHelpOptions = true, version = UbufCli.VERSION,
        description = {"Break a traced step (a trace file of ubuf demo --trace) down, without a GPU: per rank, how long"
                + " GEMMs, other kernels and communication (copies, reductions, NCCL) kept the GPU busy, how much of"
                + " the communication ran under a GEMM, per collective (its hidden share), and the longest GEMMs and"
                + " kernels with the part of each under communication. Times come from CUDA events: a gap the host"
                + " left between two events counts as time too."})
final class BreakdownCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--in", required = true, paramLabel = "FILE",
            description = "The trace file (Chrome trace JSON written by ubuf demo --trace). Default: none, required.")
    Path in;
    @Option(names = "--rank", paramLabel = "N", description = "Only this rank (default: every rank).")
    Integer rank;
    @Option(names = "--top", defaultValue = "12", paramLabel = "N",
            description = "GEMMs and kernels listed per rank, longest first (default: ${DEFAULT-VALUE}).")
    int top;

    @Override
    public Integer call() throws Exception {
        if (!Files.isRegularFile(in)) {
            throw OptionChecks.invalid(spec, "--in " + in + " is not a file");
        }
        if (top < 0) {
            throw OptionChecks.invalid(spec, "--top must be >= 0, got " + top);
        }
        StepTrace t;
        try {
            t = ChromeTrace.read(in);
        } catch (IllegalArgumentException | com.fasterxml.jackson.core.JacksonException e) {
            throw OptionChecks.invalid(spec, "--in " + in + ": " + e.getMessage());
        }
        if (rank != null && t.ranks().stream().noneMatch(r -> r.rank() == rank)) {
            throw OptionChecks.invalid(spec, "--rank " + rank + ": the trace holds ranks "
                    + t.ranks().stream().map(r -> Integer.toString(r.rank())).toList());
        }
        PrintWriter w = spec.commandLine().getOut();
        w.println(t.title());
        for (RankTrace r : t.ranks()) {
            if (rank == null || r.rank() == rank) {
                TraceBreakdown.of(r).describe(top).forEach(w::println);
            }
        }
        w.flush();
        return 0;
    }
}

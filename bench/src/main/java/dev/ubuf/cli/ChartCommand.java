package dev.ubuf.cli;

import dev.ubuf.bench.SweepChart;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;

/** Redraws the sweep chart from results files (a combined file, or round files of ubuf and PyTorch): no GPU. */
@Command(name = "chart", mixinStandardHelpOptions = true, version = UbufCli.VERSION,
        description = {"Draw the sweep chart from results files, without a GPU: %% of the honest ideal per shape,"
                + " ubuf's methods as bars, NCCL sequential and PyTorch (torch_seq, torch_async) as reference marks.",
                "Give the combined file of scripts/combine-rounds.py, or a sweep file and the PyTorch baseline's"
                        + " file on its shapes."})
final class ChartCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--in", required = true, arity = "1..*", paramLabel = "FILE",
            description = "Results files to draw (ubuf's first: their records give each shape's ideal). Default:"
                    + " none, required.")
    List<Path> in;
    @Option(names = "--png", required = true, paramLabel = "FILE", description = "The PNG to write. Default: none,"
            + " required.")
    Path png;
    @Option(names = "--title", defaultValue = "ubuf sweep against the honest ideal", paramLabel = "TEXT",
            description = "The chart's title (default: ${DEFAULT-VALUE}).")
    String title;

    @Override
    public Integer call() throws Exception {
        for (Path f : in) {
            if (!Files.isRegularFile(f)) {
                throw OptionChecks.invalid(spec, "--in " + f + " is not a file");
            }
        }
        Path target = png.toAbsolutePath();
        if (target.getParent() != null) {
            Files.createDirectories(target.getParent());
        }
        SweepChart.write(in, png, title);
        spec.commandLine().getOut().println("wrote " + png);
        return 0;
    }
}

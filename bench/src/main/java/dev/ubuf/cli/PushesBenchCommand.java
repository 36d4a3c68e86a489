package dev.ubuf.cli;

import dev.ubuf.bench.PeerPushBench;
import dev.ubuf.config.UbufEnvironment;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.util.List;
import java.util.concurrent.Callable;

/** Every rank pushing to every peer at once on the copy engines, SM copies and NCCL's reduce-scatter, by size. */
@Command(name = "pushes", mixinStandardHelpOptions = true, version = UbufCli.VERSION,
        description = {"How fast each GPU's data leaves it when every rank sends to every peer at once, as the"
                + " reduce-scatter method scatter does (records op pushes): copy engines (one stream per peer, or"
                + " two), SM copy kernels, and NCCL's reduce-scatter sending the same bytes, in the same shuffled"
                + " iterations."})
final class PushesBenchCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;
    @Option(names = "--tp", defaultValue = "4", paramLabel = "N",
            description = "GPUs, one rank each, >= 2 (default: ${DEFAULT-VALUE}).")
    int tp;
    @Option(names = "--sizes", split = ",", paramLabel = "BYTES",
            defaultValue = "1048576,4194304,8388608,16777216,33554432,67108864",
            description = "Bytes each rank sends each peer: even, 2 to 1 GiB (default: ${DEFAULT-VALUE}).")
    List<Long> sizes;
    @Option(names = "--sm-ctas", split = ",", paramLabel = "C", defaultValue = "8,16",
            description = "Blocks of the SM copy kernel per peer, one candidate each, 1..64 (default: ${DEFAULT-VALUE}).")
    List<Integer> smCtas;
    @Option(names = "--warmup", defaultValue = "3", paramLabel = "N", description = "Untimed rounds (default: ${DEFAULT-VALUE}).")
    int warmup;
    @Option(names = "--iters", defaultValue = "20", paramLabel = "N", description = "Timed rounds (default: ${DEFAULT-VALUE}).")
    int iters;
    @Mixin
    ResultsOutput out;

    @Override
    public Integer call() throws Exception {
        OptionChecks.within(spec, "--tp", tp, 2, 64);
        OptionChecks.atLeast(spec, "--warmup", warmup, 0);
        OptionChecks.atLeast(spec, "--iters", iters, 1);
        OptionChecks.evenByteSizes(spec, "--sizes", sizes, 1);
        for (int c : smCtas) {
            OptionChecks.within(spec, "--sm-ctas", c, 1, 64);
        }
        var file = out.checkWritable();
        var rf = PeerPushBench.run(UbufEnvironment.fromSystem(), tp, sizes, smCtas, warmup, iters);
        if (file.isPresent() && rf != null) {
            rf.write(file.get());
        }
        return 0;
    }
}

package dev.ubuf.cli;

import dev.ubuf.bench.CopyEngineEvidence;
import dev.ubuf.config.UbufEnvironment;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.util.List;
import java.util.concurrent.Callable;

/** Why copy engines: a GEMM beside copy-engine and beside NCCL traffic, and the two bandwidths by size. */
@Command(name = "ce", mixinStandardHelpOptions = true, version = UbufCli.VERSION,
        description = {"Evidence for copy engines on 2 GPUs (records ops gemm and p2p): an 8192^3 bf16 GEMM alone,"
                + " beside 1 GiB each way on the copy engines, and beside NCCL send/recv of the same bytes;"
                + " copy-engine against NCCL send/recv bandwidth, both directions at once, by size."})
final class EvidenceBenchCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;
    @Option(names = "--sizes", split = ",", paramLabel = "BYTES",
            defaultValue = "1048576,4194304,16777216,67108864,268435456,1073741824",
            description = "Message sizes in bytes (default: ${DEFAULT-VALUE}).")
    List<Long> sizes;
    @Option(names = "--warmup", defaultValue = "3", paramLabel = "N", description = "Untimed rounds (default: ${DEFAULT-VALUE}).")
    int warmup;
    @Option(names = "--iters", defaultValue = "15", paramLabel = "N", description = "Timed rounds (default: ${DEFAULT-VALUE}).")
    int iters;
    @Mixin
    ResultsOutput out;

    @Override
    public Integer call() throws Exception {
        OptionChecks.atLeast(spec, "--warmup", warmup, 0);
        OptionChecks.atLeast(spec, "--iters", iters, 1);
        OptionChecks.evenByteSizes(spec, "--sizes", sizes, 4);
        var file = out.checkWritable();
        var rf = CopyEngineEvidence.run(UbufEnvironment.fromSystem(), warmup, iters, sizes);
        if (file.isPresent()) {
            rf.write(file.get());
        }
        return 0;
    }
}

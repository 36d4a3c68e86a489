package dev.ubuf.cli;

import dev.ubuf.bench.ResultsFile;
import dev.ubuf.comm.ThreadDomain;
import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.comm.UserBuffer;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaEvent;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.StreamPriority;
import org.apache.commons.math3.stat.descriptive.DescriptiveStatistics;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;

/**
 * Copy-engine bandwidth into a peer's user buffer, GPUs 0 and 1: one way (rank 0 -> 1) and both ways at once.
 * Options are checked before GPU work.
 */
@Command(name = "p2p", mixinStandardHelpOptions = true, version = UbufCli.VERSION,
        description = "Copy-engine peer bandwidth between GPUs 0 and 1 through registered user buffers"
                + " (records op p2p).")
final class P2pBenchCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--bytes", defaultValue = "1073741824", paramLabel = "BYTES",
            description = "Bytes per copy, >= 1 (default: ${DEFAULT-VALUE}, 1 GiB).")
    long bytes;
    @Option(names = "--warmup", defaultValue = "3", paramLabel = "N",
            description = "Untimed copies first, >= 0 (default: ${DEFAULT-VALUE}).")
    int warmup;
    @Option(names = "--iters", defaultValue = "20", paramLabel = "N",
            description = "Timed copies, >= 1 (default: ${DEFAULT-VALUE}).")
    int iters;
    @Mixin
    ResultsOutput results;

    @Override
    public Integer call() throws Exception {
        OptionChecks.atLeast(spec, "--bytes", bytes, 1);
        if (bytes > Long.MAX_VALUE / 2) {
            throw OptionChecks.invalid(spec, "--bytes " + bytes + " is too large: the user buffer holds two copies");
        }
        OptionChecks.atLeast(spec, "--warmup", warmup, 0);
        OptionChecks.atLeast(spec, "--iters", iters, 1);
        Optional<Path> out = results.checkWritable();
        UbufEnvironment env = UbufEnvironment.fromSystem();
        double[][] ms = new double[2][2];
        String[] device = new String[1];
        ThreadDomain.run(2, env.timeout(), (rank, boot, ctx) -> {
            device[0] = ctx.device().name();
            try (TpCommunicator comm = TpCommunicator.create(boot, ctx, env, null);
                 UserBuffer ub = comm.register("p2p-bench", 2 * bytes);
                 CudaStream s = ctx.createStream(StreamPriority.HIGH);
                 CudaEvent a = ctx.createEvent(true);
                 CudaEvent b = ctx.createEvent(true)) {
                int peer = 1 - rank;
                for (int mode = 0; mode < 2; mode++) { // 0: one way (rank 0 sends), 1: both ways
                    boolean sends = mode == 1 || rank == 0;
                    DescriptiveStatistics st = new DescriptiveStatistics();
                    for (int i = 0; i < warmup + iters; i++) {
                        boot.barrier();
                        a.record(s);
                        if (sends) {
                            s.copy(ub.peer(peer).address() + bytes, ub.local().address(), bytes);
                        }
                        b.record(s);
                        b.synchronize();
                        if (i >= warmup) {
                            st.addValue(b.elapsedMillisSince(a));
                        }
                    }
                    ms[rank][mode] = st.getPercentile(50);
                }
            }
        });
        double oneWay = bytes / (ms[0][0] * 1e-3) / 1e9;
        double bothWays = 2 * bytes / (Math.max(ms[0][1], ms[1][1]) * 1e-3) / 1e9;
        System.out.printf("p2p %d bytes: one way %.3f ms = %.1f GB/s; both ways %.3f ms = %.1f GB/s aggregate%n",
                bytes, ms[0][0], oneWay, Math.max(ms[0][1], ms[1][1]), bothWays);
        if (out.isPresent()) {
            ResultsFile rf = new ResultsFile("2x " + device[0], ResultsFile.commitFromEnvironment());
            for (int mode = 0; mode < 2; mode++) {
                Map<String, Object> r = ResultsFile.record("p2p", mode == 0 ? "ce_one_way" : "ce_both_ways", 2,
                        "bytes", bytes, 1, 1, mode == 0 ? ms[0][0] : Math.max(ms[0][1], ms[1][1]));
                r.put("gbps", mode == 0 ? oneWay : bothWays);
                r.put("reference_gbps", mode == 0 ? 390 : 758);
                r.put("rank_mode", "threads");
                rf.add(r);
            }
            rf.write(out.get());
        }
        return 0;
    }
}

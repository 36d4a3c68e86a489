package dev.ubuf.cli;

import dev.ubuf.ag.AgShape;
import dev.ubuf.op.Collective;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.util.List;
import java.util.concurrent.Callable;

/** AllGather->GEMM: the overlap benchmark ({@link OverlapBenchRun}) on AG shapes. */
@Command(name = "ag", mixinStandardHelpOptions = true, version = UbufCli.VERSION,
        description = {"AllGather->GEMM overlap (records op ag): out[M,N] = allgather(x[M/tp,K]) * W[K,N], N per rank.",
                "Times, in the same shuffled rounds: the GEMM as one call, each method's own GEMM chunks alone,"
                        + " the gather alone (copy engines and NCCL), NCCL sequential and every method."},
        modelTransformer = AgBenchCommand.Help.class)
final class AgBenchCommand implements Callable<Integer> {
    @Mixin
    OverlapBenchOptions common;
    @Option(names = "--shapes", split = " ", arity = "1..*", paramLabel = "M,K,N",
            defaultValue = "4096,8192,8192 8192,8192,8192 16384,8192,8192 16384,8192,14336",
            description = "Shapes M,K,N (N per rank; M divisible by tp), separated by spaces"
                    + " (default: ${DEFAULT-VALUE}).")
    List<String> shapes;
    @Option(names = "--methods", split = ";", splitSynopsisLabel = ";", paramLabel = "METHOD",
            defaultValue = "ring;bidir;aggregate;oneshot;auto",
            description = "Methods or variants separated by ';', e.g. ring;ring:cs=2;aggregate (default:"
                    + " ${DEFAULT-VALUE}); methods and keys below.")
    List<String> methods;

    @Override
    public Integer call() throws Exception {
        return OverlapBenchRun.call(common, Collective.ALL_GATHER, shapes, methods,
                mkn -> new AgShape(common.tp, mkn[0], mkn[1], mkn[2], common.dtype, common.fp8Operands()));
    }

    static final class Help extends OverlapMethods.Help {
        @Override
        Collective collective() {
            return Collective.ALL_GATHER;
        }
    }
}

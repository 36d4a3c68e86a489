package dev.ubuf.cli;

import dev.ubuf.op.Collective;
import dev.ubuf.rs.RsShape;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.util.List;
import java.util.concurrent.Callable;

/** GEMM->ReduceScatter: the overlap benchmark ({@link OverlapBenchRun}) on RS shapes. */
@Command(name = "rs", mixinStandardHelpOptions = true, version = UbufCli.VERSION,
        description = {"GEMM->ReduceScatter overlap (records op rs): out[M/tp,N] = reducescatter(x[M,K] * W[K,N]),"
                + " K per rank.",
                "Times, in the same shuffled rounds: the GEMM as one call, each method's own GEMM chunks alone,"
                        + " the reduce-scatter alone (copy engines and NCCL), NCCL sequential and every method."},
        modelTransformer = RsBenchCommand.Help.class)
final class RsBenchCommand implements Callable<Integer> {
    @Mixin
    OverlapBenchOptions common;
    @Option(names = "--shapes", split = " ", arity = "1..*", paramLabel = "M,K,N",
            defaultValue = "4096,8192,8192 8192,8192,8192 16384,8192,8192 16384,8192,14336",
            description = "Shapes M,K,N (K per rank; M divisible by tp), separated by spaces"
                    + " (default: ${DEFAULT-VALUE}).")
    List<String> shapes;
    @Option(names = "--methods", split = ";", splitSynopsisLabel = ";", paramLabel = "METHOD",
            defaultValue = "ring;ring:bidir=1,lowp=1;pipeline;oneshot;scatter;scatter:sub=2,lowp=1;auto",
            description = "Methods or variants separated by ';', e.g. ring;ring:sub=4,lowp=1;pipeline:splits=8"
                    + " (default: ${DEFAULT-VALUE}); methods and keys below.")
    List<String> methods;
    @Option(names = "--bias", description = "Add a bias row after the reduction (default: ${DEFAULT-VALUE}).")
    boolean bias;
    @Option(names = "--fp8-output", paramLabel = "TYPE",
            description = "Quantize the reduced sum (+ bias) into an FP8 output, e4m3 or e5m2, with scale 1; --dtype"
                    + " stays the type of the partial sums and of the sum (records fp8_output). With or without --fp8"
                    + " (default: none, the output is the sum in --dtype).")
    String fp8OutputWord;

    @Override
    public Integer call() throws Exception {
        java.util.Optional<dev.ubuf.tensor.DType> fp8Output = fp8Output();
        return OverlapBenchRun.call(common, Collective.REDUCE_SCATTER, shapes, methods, mkn -> {
            RsShape s = new RsShape(common.tp, mkn[0], mkn[1], mkn[2], common.dtype, bias, common.fp8Operands());
            return fp8Output.map(s::withFp8Output).orElse(s);
        });
    }

    private java.util.Optional<dev.ubuf.tensor.DType> fp8Output() {
        if (fp8OutputWord == null) {
            return java.util.Optional.empty();
        }
        return java.util.Optional.of(switch (fp8OutputWord.trim().toLowerCase(java.util.Locale.ROOT)) {
            case "e4m3" -> dev.ubuf.tensor.DType.FP8_E4M3;
            case "e5m2" -> dev.ubuf.tensor.DType.FP8_E5M2;
            default -> throw OptionChecks.invalid(common.spec, "--fp8-output is e4m3 or e5m2, got '" + fp8OutputWord
                    + "'");
        });
    }

    static final class Help extends OverlapMethods.Help {
        @Override
        Collective collective() {
            return Collective.REDUCE_SCATTER;
        }
    }
}

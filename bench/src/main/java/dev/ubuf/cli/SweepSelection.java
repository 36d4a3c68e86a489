package dev.ubuf.cli;

import dev.ubuf.ag.AgShape;
import dev.ubuf.bench.ModelShapes;
import dev.ubuf.op.Fp8Operands;
import dev.ubuf.op.OverlapShape;
import dev.ubuf.rs.RsShape;
import dev.ubuf.tensor.DType;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Which models and token counts the model-shape sweep covers (bench sweep, and bench gemm --from-sweep, which times
 * the same sweep's GEMMs): checked, and made into the ops' shapes in the sweep's order.
 */
final class SweepSelection {
    @Spec(Spec.Target.MIXEE)
    CommandSpec spec;

    @Option(names = "--tokens", split = ",", paramLabel = "M", defaultValue = "1024,2048,4096,8192,16384",
            description = "Token counts (rows M) of every model; 256 and 512 are added for the first model"
                    + " (default: ${DEFAULT-VALUE}).")
    List<Integer> tokens;
    @Option(names = "--models", split = ",", paramLabel = "NAME",
            defaultValue = "llama3-8b,llama3-70b,qwen2.5-32b,mixtral-8x7b-expert,gpt3-175b",
            description = "Models to sweep (default: ${DEFAULT-VALUE}).")
    List<String> models;
    @Option(names = "--small", defaultValue = "true", negatable = true, fallbackValue = "true",
            description = "Add M = 256 and 512 for the first model (default: ${DEFAULT-VALUE}).")
    boolean small;

    /** The sweep's op shapes at {@code tp} ranks: every GEMM of every model at every token count, in that order. */
    List<OverlapShape> shapes(int tp, DType dtype) {
        return shapes(tp, dtype, Optional.empty());
    }

    /**
     * As {@link #shapes(int, DType)}, every shape with {@code fp8} operands when given ({@code dtype} is then the
     * output's, and the reduce-scatters' partials').
     */
    List<OverlapShape> shapes(int tp, DType dtype, Optional<Fp8Operands> fp8) {
        List<OverlapShape> shapes = new ArrayList<>();
        for (OverlapShape s : modelShapes(tp, dtype)) {
            shapes.add(fp8.isEmpty() ? s : switch (s) {
                case AgShape a -> new AgShape(a.tp(), a.m(), a.k(), a.n(), a.dtype(), fp8);
                case RsShape r -> new RsShape(r.tp(), r.m(), r.k(), r.n(), r.dtype(), r.bias(), fp8);
                default -> throw new IllegalStateException("the sweep makes AG and RS shapes only, got " + s);
            });
        }
        return shapes;
    }

    private List<OverlapShape> modelShapes(int tp, DType dtype) {
        for (int t : tokens) {
            if (t <= 0 || t % tp != 0) {
                throw OptionChecks.invalid(spec, "--tokens: " + t + " must be positive and divisible by --tp " + tp);
            }
        }
        List<String> known = ModelShapes.SWEEP.stream().map(ModelShapes::name).toList();
        List<OverlapShape> shapes = new ArrayList<>();
        for (String name : models) {
            ModelShapes m = ModelShapes.SWEEP.stream().filter(x -> x.name().equals(name)).findFirst()
                    .orElseThrow(() -> OptionChecks.invalid(spec, "--models: unknown model '" + name
                            + "'; models: " + String.join(", ", known)));
            List<Integer> ms = new ArrayList<>(tokens);
            if (small && name.equals(models.getFirst())) {
                ms.addAll(0, ModelShapes.SMALL_TOKENS);
            }
            for (int t : ms) {
                m.gemms(tp, t, dtype).forEach(g -> shapes.add(g.shape()));
            }
        }
        return shapes;
    }
}

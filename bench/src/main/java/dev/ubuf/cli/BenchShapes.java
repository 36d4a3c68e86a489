package dev.ubuf.cli;

import picocli.CommandLine.Model.CommandSpec;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * The --shapes option of the overlap benchmarks: "M,K,N" words, each made into the op's shape record, whose own
 * checks (M divisible by tp, ...) then fail with the option's name. A shape from the option's default says so, since
 * the user never wrote it (for example --tp 3 with the default shapes).
 */
final class BenchShapes {
    private BenchShapes() {
    }

    static <S> List<S> parse(CommandSpec spec, List<String> words, String tpHint, Function<long[], S> shape) {
        boolean given = OptionChecks.given(spec, "--shapes");
        List<S> shapes = new ArrayList<>();
        for (String word : words) {
            String which = given ? "shape '" + word + "'" : "default shape " + word + " (from --shapes' default)";
            long[] mkn;
            try {
                mkn = mkn(word);
            } catch (IllegalArgumentException e) {
                throw OptionChecks.invalid(spec, "--shapes: " + e.getMessage());
            }
            try {
                shapes.add(shape.apply(mkn));
            } catch (IllegalArgumentException e) {
                throw OptionChecks.invalid(spec, "--shapes: " + which + " cannot run " + tpHint + ": "
                        + e.getMessage());
            }
        }
        return shapes;
    }

    /** M, K, N from "M,K,N": three positive integers. */
    static long[] mkn(String word) {
        String[] p = word.trim().split(",", -1);
        String expected = "a shape is M,K,N (three positive integers), got '" + word + "'";
        if (p.length != 3) {
            throw new IllegalArgumentException(expected);
        }
        long[] v = new long[3];
        for (int i = 0; i < 3; i++) {
            try {
                v[i] = Long.parseLong(p[i].trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(expected);
            }
            if (v[i] <= 0) {
                throw new IllegalArgumentException(expected);
            }
        }
        return v;
    }
}

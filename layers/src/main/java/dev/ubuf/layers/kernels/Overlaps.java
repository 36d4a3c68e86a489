package dev.ubuf.layers.kernels;

import dev.ubuf.tensor.TensorView;

import java.util.ArrayList;
import java.util.List;

/**
 * The address ranges of a launch's operands, checked before the launch: an output may not share bytes with any
 * other operand, except that it may be one of the inputs it names exactly (same address, shape, ld and dtype),
 * where the kernel reads each element before writing it. Ranges are compared conservatively (first to last byte),
 * so two interleaved strided views count as overlapping.
 */
final class Overlaps {
    private record Operand(TensorView view, String name, boolean output, List<TensorView> mayAlias) {
    }

    private final List<Operand> operands = new ArrayList<>();

    Overlaps input(TensorView v, String name) {
        if (v != null) {
            operands.add(new Operand(v, name, false, List.of()));
        }
        return this;
    }

    /** An output; it may be exactly one of {@code mayAlias}. Null (an absent optional output) is skipped. */
    Overlaps output(TensorView v, String name, TensorView... mayAlias) {
        if (v != null) {
            operands.add(new Operand(v, name, true, List.of(mayAlias)));
        }
        return this;
    }

    void check() {
        for (int i = 0; i < operands.size(); i++) {
            for (int j = i + 1; j < operands.size(); j++) {
                Operand a = operands.get(i);
                Operand b = operands.get(j);
                if (!a.output() && !b.output()) {
                    continue; // inputs may share memory
                }
                if (!overlap(a.view(), b.view())) {
                    continue;
                }
                // Only an output on top of an input it names; two outputs never share bytes.
                boolean allowed = identical(a.view(), b.view()) && a.output() != b.output()
                        && (a.output() ? contains(a.mayAlias(), b.view()) : contains(b.mayAlias(), a.view()));
                if (!allowed) {
                    throw new IllegalArgumentException(a.name() + " " + a.view() + " and " + b.name() + " "
                            + b.view() + " overlap in memory" + (identical(a.view(), b.view())
                            ? " (this operand cannot be computed in place)" : ""));
                }
            }
        }
    }

    private static boolean contains(List<TensorView> views, TensorView v) {
        for (TensorView w : views) {
            if (w != null && identical(w, v)) {
                return true;
            }
        }
        return false;
    }

    private static boolean overlap(TensorView a, TensorView b) {
        long a0 = a.address();
        long b0 = b.address();
        return a0 < b0 + b.spanBytes() && b0 < a0 + a.spanBytes();
    }

    private static boolean identical(TensorView a, TensorView b) {
        return a.address() == b.address() && a.rows() == b.rows() && a.cols() == b.cols() && a.ld() == b.ld()
                && a.dtype() == b.dtype();
    }
}

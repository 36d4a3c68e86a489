package dev.ubuf.layers.tp;

import dev.ubuf.cuda.CudaStream;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;

import java.util.Objects;

/**
 * How a layer makes one kind of its tensors (input, weight, output gradient) into GEMM operands, as Transformer
 * Engine's quantizers do: {@link #NONE} keeps them as they are, {@link Fp8} quantizes them with its slot's scale. A
 * layer holds one per kind and runs the same forward and backward either way.
 */
sealed interface Quantizer permits Quantizer.None, Quantizer.Fp8 {
    /** The tensors stay in the layer's dtype. */
    Quantizer NONE = new None();

    /**
     * x as an operand. FP8 writes fp8(x) into {@code q} and, when given, its transpose into {@code qT} (for a GEMM
     * that reads the other layout); without FP8 both are ignored and may be null.
     */
    Operand quantize(TensorView x, TensorView q, TensorView qT, CudaStream s);

    /** A tensor already stored this way (e.g. gathered from quantized shards) as an operand. */
    Operand stored(TensorView q);

    /**
     * {@code o} with its transposed copy for a GEMM that reads the other layout: FP8 writes it into {@code qT} (its
     * codes, byte for byte); a plain operand is read transposed by the GEMM itself and comes back as is.
     */
    Operand withTransposed(Operand o, TensorView qT, CudaStream s);

    /** How these tensors are stored in a layer of dtype {@code wide}. */
    DType dtype(DType wide);

    /** See {@link #NONE}. */
    record None() implements Quantizer {
        @Override
        public Operand quantize(TensorView x, TensorView q, TensorView qT, CudaStream s) {
            return new Operand.Plain(x);
        }

        @Override
        public Operand stored(TensorView q) {
            return new Operand.Plain(q);
        }

        @Override
        public Operand withTransposed(Operand o, TensorView qT, CudaStream s) {
            return o;
        }

        @Override
        public DType dtype(DType wide) {
            return wide;
        }
    }

    /** FP8 with one slot of the context's scale table (see {@link Fp8DeviceScales} for the recipes). */
    record Fp8(Fp8DeviceScales scales, Fp8ScaleTable.Slot slot) implements Quantizer {
        public Fp8 {
            Objects.requireNonNull(scales, "scales");
            Objects.requireNonNull(slot, "slot");
        }

        @Override
        public Operand quantize(TensorView x, TensorView q, TensorView qT, CudaStream s) {
            scales.quantize(slot, x, q, qT, s);
            return new Operand.Fp8(q, qT, scales.scaleInverse(slot));
        }

        @Override
        public Operand stored(TensorView q) {
            return new Operand.Fp8(q, null, scales.scaleInverse(slot));
        }

        /** Exact: see {@link Fp8DeviceScales#transpose}. */
        @Override
        public Operand withTransposed(Operand o, TensorView qT, CudaStream s) {
            if (!(o instanceof Operand.Fp8 q)) {
                throw new IllegalArgumentException(slot.describe() + ": not an FP8 operand: " + o);
            }
            scales.transpose(slot, q.data(), qT, s);
            return new Operand.Fp8(q.data(), qT, q.scaleInverse());
        }

        @Override
        public DType dtype(DType wide) {
            return fp8Type();
        }

        /** FP8_E4M3 or FP8_E5M2, as the recipe gives the slot's role. */
        public DType fp8Type() {
            return slot.format().dtype();
        }
    }
}

package dev.ubuf.layers.tp;

import dev.ubuf.cuda.DeviceMemory;
import dev.ubuf.exec.OperandBindings;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The layers' one path picks FP8 from its operands: a plain GEMM binds its tensors as the layer lays them out, an FP8
 * one binds the weight stored [n, k] (its transposed copy where the plain weight is [k, n]) and the operands' own
 * scale inverses, and operands of both kinds in one GEMM are refused.
 */
class OperandTest {
    /** Host-only memory at a 256-byte aligned fake address: the bindings only look at shapes and addresses. */
    private record Memory(long address, long bytes) implements DeviceMemory {
        @Override
        public int device() {
            return 0;
        }

        @Override
        public boolean isOpen() {
            return true;
        }
    }

    private static long next = 1L << 20;

    private static TensorView matrix(long rows, long cols, DType t) {
        long bytes = rows * cols * t.bytes();
        TensorView v = TensorView.of(new Memory(next, bytes), rows, cols, t);
        next += (bytes + 255) / 256 * 256 + 256;
        return v;
    }

    private static TensorView scalar() {
        return matrix(1, 1, DType.FP32);
    }

    @Test
    void plainOperandsBindAsTheLayerLaysThemOut() {
        TensorView x = matrix(32, 16, DType.BF16);
        TensorView w = matrix(16, 48, DType.BF16);
        TensorView out = matrix(32, 48, DType.BF16);
        OperandBindings b = Operand.bind(new Operand.Plain(x), false, new Operand.Plain(w), false, out, null);
        assertSame(x, b.input());
        assertSame(w, b.weight());
        assertEquals(false, b.weightTransposed());
        assertNull(b.scales());
        assertNull(Operand.bind(new Operand.Plain(x), true, new Operand.Plain(w), true, out, null).input(),
                "an input its producer wrote into the user buffer is not bound");
    }

    @Test
    void fp8OperandsBindTheWeightStoredNByKAndTheirOwnScales() {
        TensorView xq = matrix(32, 16, DType.FP8_E5M2);
        TensorView wq = matrix(48, 16, DType.FP8_E4M3);     // W [n, k] as a linear layer stores it
        TensorView wqT = matrix(16, 48, DType.FP8_E4M3);    // W^T [k, n]
        TensorView xs = scalar();
        TensorView ws = scalar();
        TensorView out = matrix(32, 48, DType.BF16);
        Operand x = new Operand.Fp8(xq, null, xs);
        Operand w = new Operand.Fp8(wq, wqT, ws);
        OperandBindings fprop = Operand.bind(x, false, w, true, out, null);
        assertSame(wq, fprop.weight(), "stored [n, k] already: the values themselves");
        assertTrue(fprop.weightTransposed());
        assertSame(xs, fprop.scales().input());
        assertSame(ws, fprop.scales().weight());
        // dgrad: the plain weight would be read as [k, n]; FP8 takes it [n, k], which is the transposed copy.
        Operand wAsKByN = new Operand.Fp8(wqT, wq, ws);
        OperandBindings dgrad = Operand.bind(x, true, wAsKByN, false, out, null);
        assertSame(wq, dgrad.weight());
        assertTrue(dgrad.weightTransposed());
        assertNull(dgrad.input());
        assertSame(xs, dgrad.scales().input(), "the scale of an input in the user buffer is still bound");
    }

    @Test
    void aMissingLayoutAndMixedOperandsAreRefused() {
        TensorView xq = matrix(32, 16, DType.FP8_E4M3);
        Operand.Fp8 oneLayout = new Operand.Fp8(xq, null, scalar());
        assertSame(xq, oneLayout.as(false, "x"));
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> oneLayout.as(true, "x"));
        assertTrue(e.getMessage().contains("no transposed copy"), e.getMessage());
        TensorView out = matrix(32, 16, DType.BF16);
        Operand plainW = new Operand.Plain(matrix(16, 16, DType.BF16));
        IllegalArgumentException mixed = assertThrows(IllegalArgumentException.class,
                () -> Operand.bind(oneLayout, false, plainW, true, out, null));
        assertTrue(mixed.getMessage().contains("all FP8 or none"), mixed.getMessage());
        assertSame(plainW, Quantizer.NONE.withTransposed(plainW, null, null),
                "a plain operand is read transposed by the GEMM itself");
        assertEquals(DType.BF16, Quantizer.NONE.dtype(DType.BF16));
    }
}

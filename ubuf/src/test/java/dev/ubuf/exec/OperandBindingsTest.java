package dev.ubuf.exec;

import dev.ubuf.cuda.DeviceMemory;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Each step of the bindings builder sets its one role and keeps every other. */
class OperandBindingsTest {
    /** Device memory that exists only as numbers: bindings never touch it. */
    private record NoMemory(long bytes) implements DeviceMemory {
        @Override
        public long address() {
            return 1L << 40;
        }

        @Override
        public int device() {
            return 0;
        }

        @Override
        public boolean isOpen() {
            return true;
        }
    }

    private static TensorView view(long rows, long cols) {
        return TensorView.of(new NoMemory(rows * cols * 4), rows, cols, DType.FP32);
    }

    private final TensorView x = view(4, 8), w = view(8, 2), y = view(4, 2), b = view(1, 2);
    private final DequantScales scales = new DequantScales(view(1, 1), view(1, 1));
    private final OutputScaling outScaling = new OutputScaling(view(1, 1), null, null);

    @Test
    void everyRoleIsSetByTheStepThatNamesIt() {
        OperandBindings plain = OperandBindings.of(x, w);
        assertSame(x, plain.input());
        assertSame(w, plain.weight());
        assertFalse(plain.weightTransposed());
        assertNull(plain.output());
        assertNull(plain.bias());
        assertNull(plain.scales());
        assertNull(plain.outputScaling());

        OperandBindings all = plain.withWeightTransposed().withOutput(y).withBias(b).withScales(scales)
                .withOutputScaling(outScaling);
        assertEquals(new OperandBindings(x, w, true, y, b, scales, outScaling), all);
        assertEquals(all, OperandBindings.of(x, w).withOutputScaling(outScaling).withScales(scales).withBias(b)
                .withOutput(y).withWeightTransposed(), "the order of the steps does not matter");
        assertFalse(plain.weightTransposed(), "each step makes new bindings");
    }

    @Test
    void bulkOpsBindTheirOneTensor() {
        assertEquals(new OperandBindings(x, null, false, null, null, null, null), OperandBindings.inputOnly(x));
        OperandBindings rs = OperandBindings.outputOnly(y).withBias(b);
        assertNull(rs.input());
        assertNull(rs.weight());
        assertSame(y, rs.output());
        assertSame(b, rs.bias());
        assertTrue(OperandBindings.of(x, w).withOutput(y).withOutput(null).output() == null);
    }
}

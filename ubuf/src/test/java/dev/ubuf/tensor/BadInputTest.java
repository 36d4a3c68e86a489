package dev.ubuf.tensor;

import dev.ubuf.cuda.DeviceMemory;
import dev.ubuf.gemm.Gemm;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Bad input is rejected with a clear message before any GPU work: these run without a GPU because the checks are
 * plain Java, done before anything reaches the driver (the memory here is a stand-in with no device behind it).
 */
class BadInputTest {
    /** Device memory that exists only as numbers; any use after close fails. */
    static final class FakeMemory implements DeviceMemory {
        final long bytes;
        boolean open = true;

        FakeMemory(long bytes) {
            this.bytes = bytes;
        }

        @Override
        public long address() {
            assertOpen();
            return 1L << 40;
        }

        @Override
        public long bytes() {
            return bytes;
        }

        @Override
        public int device() {
            return 0;
        }

        @Override
        public boolean isOpen() {
            return open;
        }

        @Override
        public String toString() {
            return "FakeMemory(" + bytes + ")";
        }
    }

    static TensorView dense(long r, long c, DType t) {
        return TensorView.of(new FakeMemory(r * c * t.bytes()), r, c, t);
    }

    @Test
    void mismatchedGemmShapesAreRejected() {
        var e = assertThrows(IllegalArgumentException.class, () -> Gemm.spec(dense(64, 32, DType.BF16),
                dense(48, 16, DType.BF16), dense(64, 16, DType.BF16), Gemm.Options.NN));
        assertTrue(e.getMessage().contains("inner dimensions"), e.getMessage());
        var out = assertThrows(IllegalArgumentException.class, () -> Gemm.spec(dense(64, 32, DType.BF16),
                dense(32, 16, DType.BF16), dense(64, 17, DType.BF16), Gemm.Options.NN));
        assertTrue(out.getMessage().contains("output must be 64x16"), out.getMessage());
    }

    @Test
    void wrongDtypesAreRejected() {
        var e = assertThrows(IllegalArgumentException.class, () -> Gemm.spec(dense(64, 32, DType.BF16),
                dense(32, 16, DType.FP16), dense(64, 16, DType.BF16), Gemm.Options.NN));
        assertTrue(e.getMessage().contains("share a dtype"), e.getMessage());
        var c = assertThrows(IllegalArgumentException.class, () -> Gemm.spec(dense(64, 32, DType.BF16),
                dense(32, 16, DType.BF16), dense(64, 16, DType.FP16), Gemm.Options.NN));
        assertTrue(c.getMessage().contains("bf16 or fp32"), c.getMessage());
        var v = assertThrows(IllegalArgumentException.class, () -> dense(4, 4, DType.BF16).requireDType(DType.FP32, "x"));
        assertTrue(v.getMessage().contains("x must be fp32, got bf16"), v.getMessage());
    }

    @Test
    void aBufferTooSmallForTheViewIsRejected() {
        var mem = new FakeMemory(1000);
        var e = assertThrows(IllegalArgumentException.class, () -> TensorView.of(mem, 16, 32, DType.BF16));
        assertTrue(e.getMessage().contains("needs 1024 bytes") && e.getMessage().contains("has 1000"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new TensorView(mem, 0, 4, 8, 7, DType.FP32),
                "a leading dimension below cols");
        assertThrows(IllegalArgumentException.class, () -> new TensorView(mem, 3, 4, 4, 4, DType.FP32),
                "an offset that is not a whole element");
        assertThrows(IllegalArgumentException.class, () -> dense(8, 8, DType.FP32).rows(4, 5), "rows past the end");
    }

    @Test
    void aViewIsDenseWhenItsElementsFormOneRun() {
        TensorView whole = dense(8, 8, DType.FP32);
        assertTrue(whole.isDense() && whole.isContiguous());
        TensorView strided = whole.cols(0, 4);
        assertFalse(strided.isDense() || strided.isContiguous(), "4 of every 8 elements");
        TensorView oneRow = strided.rows(3, 1);
        assertTrue(oneRow.isDense() && !oneRow.isContiguous(), "one row is one run whatever its ld");
    }

    @Test
    void aClosedBufferCannotBeUsed() {
        var mem = new FakeMemory(4096);
        TensorView v = TensorView.of(mem, 16, 16, DType.FP32);
        mem.open = false;
        var e = assertThrows(IllegalStateException.class, v::address);
        assertTrue(e.getMessage().contains("is closed"), e.getMessage());
    }

    @Test
    void reservedFp8TypesHaveNoConversionsYet() {
        assertThrows(UnsupportedOperationException.class, () -> DType.FP8_E4M3.round(1f));
        assertThrows(IllegalArgumentException.class, () -> DType.parse("int4"));
    }
}

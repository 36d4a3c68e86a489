package dev.ubuf.atomic;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ubuf.atomic.AtomicGemmKernel.Hooks;
import dev.ubuf.cuda.DeviceMemory;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** Bad calls are rejected before any GPU work, with a message naming the problem; tensor maps are what TMA needs. */
class AtomicGemmValidationTest {
    /** Device memory that is only an address range: validation needs no GPU. */
    record FakeMemory(long address, long bytes) implements DeviceMemory {
        @Override
        public int device() {
            return 0;
        }

        @Override
        public boolean isOpen() {
            return true;
        }
    }

    private long next = 1L << 32; // fake addresses, fresh for each test instance

    TensorView matrix(long rows, long cols, DType t) {
        return view(rows, cols, cols, t, 0);
    }

    TensorView view(long rows, long cols, long ld, DType t, long misalign) {
        long bytes = (rows * ld) * t.bytes() + 64;
        long base = next;
        next += (bytes + 4095) / 4096 * 4096 + 4096;
        return new TensorView(new FakeMemory(base + misalign, bytes), 0, rows, cols, ld, t);
    }

    static String reject(TensorView a, TensorView b, BLayout layout, TensorView d, float alpha, float beta,
                         int chunks, int first, Hooks hooks) {
        return assertThrows(IllegalArgumentException.class,
                () -> AtomicGemmKernel.validate(a, b, layout, d, alpha, beta, chunks, first, hooks)).getMessage();
    }

    @Test
    void acceptsBothLayoutsBothOutputsAndRaggedShapes() {
        for (DType in : new DType[]{DType.BF16, DType.FP16}) {
            for (DType out : new DType[]{DType.BF16, DType.FP32}) {
                assertDoesNotThrow(() -> AtomicGemmKernel.validate(matrix(100, 64, in), matrix(200, 64, in),
                        BLayout.NK, matrix(100, 200, out), 1f, 0f, 1, 0, Hooks.NONE));
                assertDoesNotThrow(() -> AtomicGemmKernel.validate(matrix(1000, 1000, in), matrix(1000, 1000, in),
                        BLayout.KN, matrix(1000, 1000, out), 0.5f, 2f, 8, 7, Hooks.NONE));
            }
        }
        // 1x1x16 works with B stored [N, K]: every row stride is 32 bytes.
        assertDoesNotThrow(() -> AtomicGemmKernel.validate(matrix(1, 16, DType.BF16), matrix(1, 16, DType.BF16),
                BLayout.NK, matrix(1, 1, DType.FP32), 1f, 0f, 1, 0, Hooks.NONE));
    }

    @Test
    void rejectsTypesTheKernelDoesNotHave() {
        assertTrue(reject(matrix(64, 64, DType.FP32), matrix(64, 64, DType.FP32), BLayout.NK,
                matrix(64, 64, DType.FP32), 1f, 0f, 1, 0, Hooks.NONE).contains("A must be bf16 or fp16"));
        assertTrue(reject(matrix(64, 64, DType.BF16), matrix(64, 64, DType.FP16), BLayout.NK,
                matrix(64, 64, DType.FP32), 1f, 0f, 1, 0, Hooks.NONE).contains("B must have A's type bf16"));
        assertTrue(reject(matrix(64, 64, DType.BF16), matrix(64, 64, DType.BF16), BLayout.NK,
                matrix(64, 64, DType.FP16), 1f, 0f, 1, 0, Hooks.NONE).contains("D must be bf16 or fp32"));
    }

    @Test
    void rejectsShapesThatDoNotMultiply() {
        assertTrue(reject(matrix(64, 64, DType.BF16), matrix(128, 32, DType.BF16), BLayout.NK,
                matrix(64, 128, DType.BF16), 1f, 0f, 1, 0, Hooks.NONE).contains("K differs"));
        assertTrue(reject(matrix(64, 64, DType.BF16), matrix(64, 128, DType.BF16), BLayout.KN,
                matrix(64, 64, DType.BF16), 1f, 0f, 1, 0, Hooks.NONE).contains("D must be [M, N] = 64x128"));
    }

    @Test
    void rejectsWhatTmaCannotRead() {
        // Row-major B [K = 16, N = 1]: a 2-byte row stride.
        assertTrue(reject(matrix(1, 16, DType.BF16), matrix(16, 1, DType.BF16), BLayout.KN,
                matrix(1, 1, DType.FP32), 1f, 0f, 1, 0, Hooks.NONE).contains("B's row stride 2 bytes"));
        assertTrue(reject(view(64, 60, 60, DType.BF16, 0), matrix(64, 60, DType.BF16), BLayout.NK,
                matrix(64, 64, DType.BF16), 1f, 0f, 1, 0, Hooks.NONE).contains("A's row stride 120 bytes"));
        assertTrue(reject(view(64, 64, 64, DType.BF16, 8), matrix(64, 64, DType.BF16), BLayout.NK,
                matrix(64, 64, DType.BF16), 1f, 0f, 1, 0, Hooks.NONE).contains("A's address"));
        assertTrue(reject(matrix(64, 64, DType.BF16), matrix(64, 64, DType.BF16), BLayout.NK,
                view(64, 64, 64, DType.FP32, 4), 1f, 0f, 1, 0, Hooks.NONE).contains("D's address"));
    }

    @Test
    void rejectsAnOutputOverlappingAnInput() {
        TensorView a2 = view(64, 64, 64, DType.BF16, 0);
        TensorView d2 = new TensorView(a2.memory(), 0, 64, 64, 64, DType.BF16);
        assertTrue(reject(a2, matrix(64, 64, DType.BF16), BLayout.NK, d2, 1f, 0f, 1, 0, Hooks.NONE)
                .contains("must not overlap"));
    }

    @Test
    void rejectsChunksThatDoNotSplitMAndBadHooks() {
        TensorView a = matrix(100, 64, DType.BF16);
        TensorView b = matrix(64, 64, DType.BF16);
        TensorView d = matrix(100, 64, DType.FP32);
        assertTrue(reject(a, b, BLayout.NK, d, 1f, 0f, 3, 0, Hooks.NONE).contains("chunks=3"));
        assertTrue(reject(a, b, BLayout.NK, d, 1f, 0f, 4, 4, Hooks.NONE).contains("firstChunk=4"));
        assertTrue(reject(a, b, BLayout.NK, d, 1f, 0f, 4, 0, Hooks.waitForArrival(4096, 1, Duration.ZERO))
                .contains("positive timeout"));
        assertTrue(reject(a, b, BLayout.NK, d, 1f, 0f, 4, 0, Hooks.raiseDone(4098, 1)).contains("4-byte aligned"));
        assertTrue(reject(a, b, BLayout.NK, d, Float.NaN, 0f, 1, 0, Hooks.NONE).contains("finite"));
    }

    @Test
    void kernelNamesNameInputLayoutAndOutput() {
        assertEquals("ubuf_atomic_gemm_bf16_bnk_bf16", AtomicGemmKernel.kernelName(DType.BF16, BLayout.NK, DType.BF16));
        assertEquals("ubuf_atomic_gemm_f16_bkn_f32", AtomicGemmKernel.kernelName(DType.FP16, BLayout.KN, DType.FP32));
    }

    @Test
    void tensorMapsDescribeTheTilesTheKernelLoads() {
        TensorMapSpec a = TensorMapSpec.forA(DType.BF16, 0x1000, 1000, 200, 208);
        assertEquals(TensorMapSpec.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, a.dataType());
        assertArrayEquals(new long[]{200, 1000}, a.dims());
        assertEquals(416, a.outerStride());
        assertArrayEquals(new int[]{64, 128}, a.box());

        TensorMapSpec nk = TensorMapSpec.forB(DType.FP16, BLayout.NK, 0x2000, 200, 300, 200);
        assertEquals(TensorMapSpec.CU_TENSOR_MAP_DATA_TYPE_FLOAT16, nk.dataType());
        assertArrayEquals(new long[]{200, 300}, nk.dims());
        assertEquals(400, nk.outerStride());
        assertArrayEquals(new int[]{64, 256}, nk.box());

        TensorMapSpec kn = TensorMapSpec.forB(DType.BF16, BLayout.KN, 0x3000, 200, 300, 304);
        assertArrayEquals(new long[]{300, 200}, kn.dims());
        assertEquals(608, kn.outerStride());
        assertArrayEquals(new int[]{64, 64}, kn.box());
        // Every box's inner extent is the 128-byte swizzle span, and the kernel's stage sizes follow from the boxes.
        for (TensorMapSpec s : new TensorMapSpec[]{a, nk, kn}) {
            assertEquals(128, s.box()[0] * 2);
        }
        assertEquals(16384 + 32768, a.box()[0] * a.box()[1] * 2 + nk.box()[0] * nk.box()[1] * 2);
        assertEquals(nk.box()[0] * nk.box()[1], 4 * kn.box()[0] * kn.box()[1]);
        assertTrue(AtomicGemmKernel.SMEM_BYTES <= 227 * 1024);
    }
}

package dev.ubuf.devicekernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceMemory;
import dev.ubuf.fp8.Fp8Format;
import dev.ubuf.fp8.Fp8Recipe;
import dev.ubuf.kernels.Fp8KernelNames;
import dev.ubuf.kernels.KernelImage;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * The FP8 kernel launchers on the CPU: what they launch (kernel, grid, block, arguments in the kernel's parameter
 * order and types as the build read them from the PTX), and every bad argument rejected before any launch.
 */
class Fp8KernelsTest {
    private static final int SMS = 132;

    record Launch(String name, int grid, int block, List<Object> args) {
    }

    /** Device memory that is never dereferenced: only its addresses reach the recorder. */
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

    final List<Launch> launches = new ArrayList<>();
    final Fp8Kernels kernels = new Fp8Kernels(
            (name, grid, block, stream, args) -> launches.add(new Launch(name, grid, block, Arrays.asList(args))), SMS);
    final CudaStream stream = null; // the recorder ignores it
    private long next = 0x7f0000000000L;

    TensorView matrix(long rows, long cols, DType t) {
        long bytes = rows * cols * t.bytes();
        FakeMemory m = new FakeMemory(next, bytes);
        next += (bytes + 255) / 256 * 256 + 256;
        return TensorView.of(m, rows, cols, t);
    }

    TensorView scalar() {
        return matrix(1, 1, DType.FP32);
    }

    void assertRejected(String message, Executable call) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
        assertTrue(e.getMessage().contains(message), () -> "'" + message + "' missing from: " + e.getMessage());
        assertEquals(List.of(), launches, "nothing may be launched when an argument is bad");
    }

    @Test
    void quantizeLaunchesTheKernelOfItsTypesWithTheArgumentsInKernelOrder() {
        TensorView wide = matrix(64, 512, DType.BF16);
        TensorView x = wide.cols(0, 256);
        TensorView y = matrix(64, 256, DType.FP8_E5M2);
        TensorView scale = scalar();
        TensorView amax = scalar();
        kernels.quantize(x, scale, y, amax, null, stream);
        Launch l = launches.getFirst();
        assertEquals("ubuf_fp8_quantize_bf16_to_e5m2", l.name());
        assertEquals(List.of(64L, 256L, x.address(), 512L, scale.address(), y.address(), 256L, amax.address(), 0L),
                l.args());
        assertEquals(16, l.grid(), "4 elements per thread, at most 8 blocks per SM");
        assertEquals(256, l.block());
    }

    @Test
    void theTransposedQuantizeRunsATileOf32x32PerBlockAndMayLeaveOutTheStraightCopy() {
        TensorView x = matrix(100, 70, DType.FP32);
        TensorView yT = matrix(70, 100, DType.FP8_E4M3);
        TensorView scale = scalar();
        TensorView inv = scalar();
        kernels.quantizeTransposed(x, scale, null, yT, null, inv, stream);
        Launch l = launches.getFirst();
        assertEquals("ubuf_fp8_quantize_transpose_f32_to_e4m3", l.name());
        assertEquals(4 * 3, l.grid(), "ceil(100/32) x ceil(70/32) tiles");
        assertEquals(List.of(100L, 70L, x.address(), 70L, scale.address(), 0L, 0L, yT.address(), 100L, 0L,
                inv.address()), l.args());
    }

    @Test
    void theCodeTransposeRunsATileAPerBlockUpToEightBlocksAnSm() {
        TensorView wide = matrix(100, 80, DType.FP8_E5M2);
        TensorView x = wide.cols(0, 70);
        TensorView yT = matrix(70, 100, DType.FP8_E5M2);
        kernels.transpose(x, yT, stream);
        Launch l = launches.getFirst();
        assertEquals("ubuf_fp8_transpose", l.name());
        assertEquals(4 * 3, l.grid(), "ceil(100/32) x ceil(70/32) byte tiles: 70 columns are not whole 16-byte words");
        assertEquals(256, l.block());
        assertEquals(List.of(100L, 70L, x.address(), 80L, yT.address(), 100L), l.args());
        launches.clear();
        kernels.transpose(matrix(2048, 1024, DType.FP8_E4M3), matrix(1024, 2048, DType.FP8_E4M3), stream);
        assertEquals(32 * 16, launches.getFirst().grid(), "2048/64 x 1024/64 vector tiles");
        launches.clear();
        kernels.transpose(matrix(8192, 4096, DType.FP8_E4M3), matrix(4096, 8192, DType.FP8_E4M3), stream);
        assertEquals(8 * SMS, launches.getFirst().grid(), "more tiles than 8 blocks an SM: a grid-stride loop");
    }

    @Test
    void currentScalingOnTheDevicePassesTheFormatsLargestValue() {
        TensorView amax = scalar();
        TensorView scale = scalar();
        kernels.scaleFromAmax(amax, Fp8Format.E5M2, scale, null, stream);
        assertEquals(List.of(amax.address(), 57344f, scale.address(), 0L), launches.getFirst().args());
        assertEquals(1, launches.getFirst().grid());
    }

    @Test
    void delayedScalingsUpdateRunsABlockPerSlotWithTheRecipesWindowMarginAndAmaxRule() {
        var max = new Fp8Recipe.DelayedScaling(Fp8Recipe.Formats.HYBRID, 16, 2, Fp8Recipe.AmaxCompute.MAX);
        var recent = new Fp8Recipe.DelayedScaling(Fp8Recipe.Formats.HYBRID, 16, 0, Fp8Recipe.AmaxCompute.MOST_RECENT);
        TensorView table = matrix(1, 3 * 5 * 4, DType.FP32);
        TensorView window = matrix(5, 16, DType.FP32);
        TensorView fp8Max = matrix(1, 5, DType.FP32);
        kernels.delayedUpdate(table, 5, 4, window, 7, max, fp8Max, stream);
        kernels.delayedUpdate(table, 5, 4, window, 15, recent, fp8Max, stream);
        assertEquals(List.of(table.address(), 5, 4, window.address(), 16, 7, 0, 2, fp8Max.address(), 0L),
                launches.get(0).args());
        assertEquals(List.of(table.address(), 5, 4, window.address(), 16, 15, 1, 0, fp8Max.address(), 0L),
                launches.get(1).args());
        assertEquals(5, launches.get(0).grid(), "a block per slot");
        assertThrows(IllegalArgumentException.class,
                () -> kernels.delayedUpdate(table, 5, 4, window, 16, max, fp8Max, stream), "column outside the window");
        assertThrows(IllegalArgumentException.class,
                () -> kernels.delayedUpdate(table, 5, 4, matrix(5, 8, DType.FP32), 0, max, fp8Max, stream),
                "a window shorter than the recipe's history");
        assertThrows(IllegalArgumentException.class,
                () -> kernels.delayedUpdate(matrix(1, 3 * 5 * 4 - 1, DType.FP32), 5, 4, window, 0, max, fp8Max,
                        stream), "a table too small for its slots");
        assertThrows(IllegalArgumentException.class,
                () -> kernels.delayedUpdate(table, 6, 4, matrix(6, 16, DType.FP32), 0, max, fp8Max, stream),
                "fewer format maxima than slots");
        assertThrows(IllegalArgumentException.class,
                () -> kernels.delayedUpdate(table, 5, 4, table.rows(0, 1), 0,
                        new Fp8Recipe.DelayedScaling(Fp8Recipe.Formats.HYBRID, 1, 0, Fp8Recipe.AmaxCompute.MAX),
                        fp8Max, stream), "window and table overlapping");
        TensorView strided = new TensorView(table.memory(), 0, 2, 15, 30, DType.FP32);
        assertThrows(IllegalArgumentException.class,
                () -> kernels.delayedUpdate(strided, 5, 4, window, 0, max, fp8Max, stream), "a table with gaps");
        assertEquals(2, launches.size(), "nothing launched for a refused call");
    }

    @Test
    void aGraphCapturableUpdateReadsItsColumnFromTheDevicesStepCountWhichOneThreadAdvances() {
        var max = new Fp8Recipe.DelayedScaling(Fp8Recipe.Formats.HYBRID, 16, 2, Fp8Recipe.AmaxCompute.MAX);
        TensorView table = matrix(1, 3 * 5 * 4, DType.FP32);
        TensorView window = matrix(5, 16, DType.FP32);
        TensorView fp8Max = matrix(1, 5, DType.FP32);
        long steps = matrix(1, 2, DType.FP32).address();
        kernels.delayedUpdate(table, 5, 4, window, steps, max, fp8Max, stream);
        kernels.countStep(steps, stream);
        assertEquals(List.of(table.address(), 5, 4, window.address(), 16, 0, 0, 2, fp8Max.address(), steps),
                launches.get(0).args());
        assertEquals(new Launch("ubuf_fp8_count_step", 1, 32, List.of(steps)), launches.get(1));
        assertThrows(IllegalArgumentException.class,
                () -> kernels.delayedUpdate(table, 5, 4, window, 0L, max, fp8Max, stream), "no count");
        assertThrows(IllegalArgumentException.class,
                () -> kernels.delayedUpdate(table, 5, 4, window, steps + 4, max, fp8Max, stream), "unaligned");
        assertThrows(IllegalArgumentException.class,
                () -> kernels.delayedUpdate(table, 5, 4, window, window.address() + 8, max, fp8Max, stream),
                "the count inside the window");
        assertThrows(IllegalArgumentException.class, () -> kernels.countStep(steps + 2, stream), "unaligned");
        assertEquals(2, launches.size(), "nothing launched for a refused call");
    }

    /** Every launch's arguments have the types the kernel declares (u64: Long, u32: Integer, f32: Float). */
    @Test
    void everyLaunchMatchesTheKernelsParameterListInTheFatbin() {
        Properties info = KernelImage.buildInfo();
        assumeTrue("true".equals(info.getProperty("built")), "built without nvcc: no kernel parameter lists");
        for (DType t : List.of(DType.FP32, DType.FP16, DType.BF16)) {
            for (DType f : List.of(DType.FP8_E4M3, DType.FP8_E5M2)) {
                TensorView x = matrix(48, 64, t);
                kernels.quantize(x, scalar(), matrix(48, 64, f), scalar(), scalar(), stream);
                kernels.quantizeTransposed(x, scalar(), matrix(48, 64, f), matrix(64, 48, f), scalar(), scalar(),
                        stream);
                kernels.dequantize(matrix(48, 64, f), scalar(), x, stream);
            }
            kernels.amax(matrix(8, 8, t), scalar(), stream);
        }
        kernels.scaleFromAmax(scalar(), Fp8Format.E4M3, scalar(), scalar(), stream);
        kernels.delayedUpdate(matrix(1, 3 * 2 * 4, DType.FP32), 2, 4, matrix(2, 8, DType.FP32), 0,
                new Fp8Recipe.DelayedScaling(Fp8Recipe.Formats.HYBRID, 8, 0, Fp8Recipe.AmaxCompute.MAX),
                matrix(1, 2, DType.FP32), stream);
        long steps = matrix(1, 2, DType.FP32).address();
        kernels.delayedUpdate(matrix(1, 3 * 2 * 4, DType.FP32), 2, 4, matrix(2, 8, DType.FP32), steps,
                new Fp8Recipe.DelayedScaling(Fp8Recipe.Formats.HYBRID, 8, 0, Fp8Recipe.AmaxCompute.MAX),
                matrix(1, 2, DType.FP32), stream);
        kernels.countStep(steps, stream);
        kernels.transpose(matrix(48, 64, DType.FP8_E4M3), matrix(64, 48, DType.FP8_E4M3), stream);
        Set<String> launched = new TreeSet<>();
        for (Launch l : launches) {
            String declared = info.getProperty("params." + l.name());
            assertTrue(declared != null, l.name() + " is not in the fatbin");
            List<String> marshalled = l.args().stream().map(a -> switch (a) {
                case Long v -> "u64";
                case Integer v -> "u32";
                case Float v -> "f32";
                default -> "unsupported " + a.getClass();
            }).toList();
            assertEquals(List.of(declared.split(",")), marshalled, l.name());
            assertTrue(l.block() % 32 == 0 && l.block() <= 512, "whole warps, at most 512 threads");
            launched.add(l.name());
        }
        assertEquals(new TreeSet<>(Fp8KernelNames.all()), launched, "every fp8 kernel is launched by some method");
    }

    @Test
    void badArgumentsAreRejectedBeforeAnyLaunch() {
        TensorView x = matrix(16, 32, DType.BF16);
        TensorView y = matrix(16, 32, DType.FP8_E4M3);
        TensorView s = scalar();
        assertRejected("x must be fp32, fp16 or bf16, got fp8e4m3", () -> kernels.quantize(y, s, y, null, null, stream));
        assertRejected("y must be fp8e4m3 or fp8e5m2, got bf16",
                () -> kernels.quantize(x, s, matrix(16, 32, DType.BF16), null, null, stream));
        assertRejected("y", () -> kernels.quantize(x, s, matrix(32, 16, DType.FP8_E4M3), null, null, stream));
        assertRejected("yT (the transpose)", () -> kernels.quantizeTransposed(x, s, null, matrix(16, 32,
                DType.FP8_E4M3), null, null, stream));
        assertRejected("y", () -> kernels.quantizeTransposed(x, s, matrix(16, 32, DType.FP8_E5M2),
                matrix(32, 16, DType.FP8_E4M3), null, null, stream));
        assertRejected("scale", () -> kernels.quantize(x, matrix(1, 2, DType.FP32), y, null, null, stream));
        assertRejected("scale", () -> kernels.quantize(x, matrix(1, 1, DType.BF16), y, null, null, stream));
        assertRejected("scale and scaleInv overlap", () -> kernels.quantize(x, s, y, null, s, stream));
        assertRejected("scale and amax overlap", () -> kernels.quantize(x, s, y, s, null, stream));
        TensorView bytes = matrix(16, 64, DType.FP8_E4M3);
        assertRejected("x and y overlap", () -> kernels.quantize(new TensorView(bytes.memory(), 0, 16, 16, 32,
                DType.BF16), s, new TensorView(bytes.memory(), 0, 16, 16, 64, DType.FP8_E4M3), null, null, stream));
        assertRejected("amax", () -> kernels.amax(x, matrix(2, 1, DType.FP32), stream));
        assertRejected("x must be fp8e4m3 or fp8e5m2", () -> kernels.dequantize(x, s, x, stream));
        assertRejected("x must be fp8e4m3 or fp8e5m2", () -> kernels.transpose(x, matrix(32, 16, DType.BF16), stream));
        assertRejected("yT (the transpose)", () -> kernels.transpose(y, matrix(16, 32, DType.FP8_E4M3), stream));
        assertRejected("yT", () -> kernels.transpose(y, matrix(32, 16, DType.FP8_E5M2), stream));
        assertRejected("x and yT overlap", () -> kernels.transpose(new TensorView(bytes.memory(), 0, 16, 16, 64,
                DType.FP8_E4M3), new TensorView(bytes.memory(), 32, 16, 16, 64, DType.FP8_E4M3), stream));
    }
}

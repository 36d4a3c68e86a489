package dev.ubuf.layers.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceMemory;
import dev.ubuf.kernels.KernelImage;
import dev.ubuf.kernels.LayerKernelNames;
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
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The layer-kernel launchers on the CPU: what they would launch (kernel, grid, block, arguments in the kernel's
 * parameter order and types, as the build read them from the PTX), and every bad argument rejected before any
 * launch.
 */
class LayerKernelsTest {
    private static final int SMS = 132;

    record Launch(String name, int grid, int block, List<Object> args) {
    }

    final List<Launch> launches = new ArrayList<>();
    /** The dynamic shared memory of each launch, in order. */
    final List<Integer> sharedBytes = new ArrayList<>();
    final LayerKernels kernels = new LayerKernels((name, grid, block, shared, stream, args) -> {
        launches.add(new Launch(name, grid, block, Arrays.asList(args)));
        sharedBytes.add(shared);
    }, SMS);
    final CudaStream stream = null; // the recorder ignores it

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

    private long next = 0x7f0000000000L;

    /** A dense rows x cols view in fresh memory (256-byte aligned like cuMemAlloc). */
    TensorView matrix(long rows, long cols, DType t) {
        long bytes = rows * cols * t.bytes();
        FakeMemory m = new FakeMemory(next, bytes);
        next += (bytes + 255) / 256 * 256 + 256;
        return TensorView.of(m, rows, cols, t);
    }

    TensorView vector(long n, DType t) {
        return matrix(1, n, t);
    }

    void assertRejected(String message, Executable call) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
        assertTrue(e.getMessage().contains(message), () -> "'" + message + "' missing from: " + e.getMessage());
        assertEquals(List.of(), launches, "nothing may be launched when an argument is bad");
    }

    // --- what is launched ---

    @Test
    void layerNormForwardLaunchesOneBlockPerRowWithTheArgumentsInKernelOrder() {
        TensorView x = matrix(100, 4096, DType.BF16);
        TensorView gamma = vector(4096, DType.BF16);
        TensorView beta = vector(4096, DType.BF16);
        TensorView y = matrix(100, 4096, DType.BF16);
        TensorView mean = vector(100, DType.FP32);
        TensorView rstd = vector(100, DType.FP32);
        kernels.layerNormForward(x, gamma, beta, 1e-5f, true, y, mean, rstd, stream);
        // 4096 bf16 columns = 512 groups of 8, four per thread: 128 threads hold the row; every row whole aligned
        // words: the kernel without the scalar path.
        assertEquals(List.of(new Launch("ubuf_layernorm_fwd_words_bf16", 100, 128, List.of(100L, 4096L, x.address(),
                4096L, gamma.address(), beta.address(), 1e-5f, 1, y.address(), 4096L, mean.address(),
                rstd.address()))), launches);
    }

    @Test
    void layerNormForwardRunsPairedWhereOnlyHalfWidthBlocksHoldItsRowsInOneWave() {
        // 4096 bf16 columns: blocks of 128 threads; the default model (the launch bounds' floor) 1024 / 128 = 8
        // resident an SM, 1056 on 132 SMs; paired, 64 threads, 16 an SM, 2112.
        for (long rows : new long[] {1056, 1057, 2048, 2112, 2113}) {
            launches.clear();
            TensorView x = matrix(rows, 4096, DType.BF16);
            kernels.layerNormForward(x, vector(4096, DType.BF16), vector(4096, DType.BF16), 1e-5f, false, x, null,
                    null, stream);
            boolean paired = rows > 1056 && rows <= 2112;
            assertEquals(new Launch(paired ? "ubuf_layernorm_fwd_words2_bf16" : "ubuf_layernorm_fwd_words_bf16",
                    (int) rows, paired ? 64 : 128, List.of(rows, 4096L, x.address(), 4096L, launches.getFirst().args()
                    .get(4), launches.getFirst().args().get(5), 1e-5f, 0, x.address(), 4096L, 0L, 0L)),
                    launches.getFirst(), "rows " + rows);
        }
        // Blocks of 96 threads (3 warps, 3072 bf16 columns) have no half-width twin of whole warps; 8192 columns
        // (256 threads, at least 4 an SM) pair from 529 to 1056 rows.
        launches.clear();
        TensorView narrow = matrix(2048, 3072, DType.BF16);
        kernels.layerNormForward(narrow, vector(3072, DType.BF16), vector(3072, DType.BF16), 0f, false, narrow, null,
                null, stream);
        TensorView wide = matrix(1000, 8192, DType.BF16);
        kernels.layerNormForward(wide, vector(8192, DType.BF16), vector(8192, DType.BF16), 0f, false, wide, null,
                null, stream);
        assertEquals(List.of("ubuf_layernorm_fwd_words_bf16/96", "ubuf_layernorm_fwd_words2_bf16/128"),
                launches.stream().map(l -> l.name() + "/" + l.block()).toList());
    }

    @Test
    void layerNormForwardPairsByTheOccupancyItIsGiven() {
        // The H200's at 092a5ef: the word kernel (56 registers) held 9 blocks of 128 an SM, the paired one 16 of 64.
        // Between 8 and 9 blocks' worth (1057-1188 rows) the word kernel holds every row at once and runs.
        List<String> asked = new ArrayList<>();
        LayerKernels gpuLike = new LayerKernels((name, grid, block, shared, stream, args) ->
                launches.add(new Launch(name, grid, block, Arrays.asList(args))), (kernel, block) -> {
                    asked.add(kernel + "/" + block);
                    return kernel.startsWith("ubuf_layernorm_fwd_words2") ? 16 : 9;
                }, SMS);
        for (long rows : new long[] {1100, 1188, 1189, 2112, 2113}) {
            TensorView x = matrix(rows, 4096, DType.BF16);
            gpuLike.layerNormForward(x, vector(4096, DType.BF16), vector(4096, DType.BF16), 0f, false, x, null, null,
                    stream);
        }
        assertEquals(List.of("ubuf_layernorm_fwd_words_bf16/128", "ubuf_layernorm_fwd_words_bf16/128",
                "ubuf_layernorm_fwd_words2_bf16/64", "ubuf_layernorm_fwd_words2_bf16/64",
                "ubuf_layernorm_fwd_words_bf16/128"), launches.stream().map(l -> l.name() + "/" + l.block()).toList());
        assertTrue(asked.contains("ubuf_layernorm_fwd_words_bf16/128") && asked.contains(
                "ubuf_layernorm_fwd_words2_bf16/64"), "asked about the kernels it launches: " + asked);
    }

    @Test
    void layerNormForwardTakesTheScalarPathWhereAnyRowOrVectorIsNotWholeAlignedWords() {
        TensorView gamma = vector(4096, DType.BF16);
        TensorView beta = vector(4096, DType.BF16);
        // Rows 16-byte aligned only every other row (ld 4100), a misaligned gamma, a misaligned y, cols not a
        // multiple of 8, rows longer than 4 words a thread of 512 threads.
        kernels.layerNormForward(matrix(8, 4100, DType.BF16).cols(0, 4096), gamma, beta, 0f, false,
                matrix(8, 4096, DType.BF16), null, null, stream);
        kernels.layerNormForward(matrix(8, 4096, DType.BF16), matrix(1, 4100, DType.BF16).cols(4, 4096), beta, 0f,
                false, matrix(8, 4096, DType.BF16), null, null, stream);
        kernels.layerNormForward(matrix(8, 4096, DType.BF16), gamma, beta, 0f, false,
                matrix(8, 4100, DType.BF16).cols(2, 4096), null, null, stream);
        kernels.layerNormForward(matrix(8, 4092, DType.BF16), vector(4092, DType.BF16), vector(4092, DType.BF16), 0f,
                false, matrix(8, 4092, DType.BF16), null, null, stream);
        kernels.layerNormForward(matrix(8, 16392, DType.BF16), vector(16392, DType.BF16), vector(16392, DType.BF16),
                0f, false, matrix(8, 16392, DType.BF16), null, null, stream);
        assertEquals(List.of("ubuf_layernorm_fwd_bf16", "ubuf_layernorm_fwd_bf16", "ubuf_layernorm_fwd_bf16",
                "ubuf_layernorm_fwd_bf16", "ubuf_layernorm_fwd_bf16"), launches.stream().map(Launch::name).toList());
        launches.clear();
        kernels.layerNormForward(matrix(8, 16384, DType.BF16), vector(16384, DType.BF16), vector(16384, DType.BF16),
                0f, false, matrix(8, 16384, DType.BF16), null, null, stream);
        assertEquals("ubuf_layernorm_fwd_words_bf16", launches.getFirst().name(), "4 words a thread of 512: in");
    }

    @Test
    void layerNormLaunchesOneBlockPerRowOfWarpsThatHoldTheRow() {
        TensorView x = matrix(16384, 64, DType.FP32);
        kernels.layerNormForward(x, vector(64, DType.FP32), vector(64, DType.FP32), 0f, false, x, null, null, stream);
        assertEquals(16384, launches.getFirst().grid());
        assertEquals(32, launches.getFirst().block(), "16 groups of 4 fp32: at least one warp");
        assertEquals(0L, launches.getFirst().args().get(10), "no mean: a null pointer");
        assertEquals(0L, launches.getFirst().args().get(11), "no rstd: a null pointer");
    }

    @Test
    void layerNormBlocksHoldTheRowInRegistersUpTo512Threads() {
        assertEquals(128, LayerKernels.layerNormBlock(4096, DType.BF16, LayerKernels.LAYER_NORM_FORWARD_GROUPS));
        assertEquals(256, LayerKernels.layerNormBlock(8192, DType.BF16, LayerKernels.LAYER_NORM_FORWARD_GROUPS));
        assertEquals(256, LayerKernels.layerNormBlock(4096, DType.BF16, LayerKernels.LAYER_NORM_BACKWARD_GROUPS));
        assertEquals(512, LayerKernels.layerNormBlock(8192, DType.BF16, LayerKernels.LAYER_NORM_BACKWARD_GROUPS));
        assertEquals(64, LayerKernels.layerNormBlock(1003, DType.FP32, LayerKernels.LAYER_NORM_FORWARD_GROUPS),
                "251 groups of 4 (the last partial): 63 threads, rounded up to whole warps");
        assertEquals(512, LayerKernels.layerNormBlock(1 << 20, DType.FP32, LayerKernels.LAYER_NORM_FORWARD_GROUPS),
                "longer rows: 512 threads and the looped path");
        assertTrue(LayerKernels.layerNormBackwardFused(8192, DType.BF16));
        assertTrue(LayerKernels.layerNormBackwardFused(4096, DType.FP32));
        assertFalse(LayerKernels.layerNormBackwardFused(4100, DType.FP32));
        assertFalse(LayerKernels.layerNormBackwardFused(8200, DType.FP16));
    }

    @Test
    void layerNormBackwardIsOneFusedKernelAndTheFinishingColumnSums() {
        long rows = 1000;
        long cols = 300;
        TensorView dy = matrix(rows, cols, DType.FP16);
        TensorView x = matrix(rows, cols, DType.FP16);
        TensorView mean = vector(rows, DType.FP32);
        TensorView rstd = vector(rows, DType.FP32);
        TensorView gamma = vector(cols, DType.FP16);
        TensorView dgamma = vector(cols, DType.FP32);
        TensorView dbeta = vector(cols, DType.FP16);
        long parts = LayerKernels.layerNormParts(rows);
        assertEquals(8, LayerKernels.layerNormRowsPerPart(rows));
        assertEquals(125, parts);
        TensorView ws = matrix(LayerKernels.layerNormBackwardWorkspaceRows(rows), cols, DType.FP32);
        kernels.layerNormBackward(dy, x, mean, rstd, gamma, false, dy, dgamma, dbeta, true, ws, stream);
        long dbetaPart = ws.address() + parts * cols * 4;
        // 300 fp16 columns = 38 groups, two per thread: one warp; a block per part; 10 tiles of 32 columns.
        assertEquals(List.of(
                new Launch("ubuf_layernorm_bwd_f16", 125, 32, List.of(rows, cols, dy.address(), cols, x.address(),
                        cols, mean.address(), rstd.address(), gamma.address(), 0, dy.address(), cols, 8L, ws.address(),
                        dbetaPart, cols)),
                new Launch("ubuf_col_sums_f32_to_f32", 10, 512, List.of(parts, cols, ws.address(), cols,
                        dgamma.address(), 1)),
                new Launch("ubuf_col_sums_f32_to_f16", 10, 512, List.of(parts, cols, dbetaPart, cols,
                        dbeta.address(), 1))), launches);
    }

    @Test
    void layerNormBackwardOfLongRowsReadsDyAndXForTheParametersBeforeDxMayOverwriteThem() {
        long rows = 100;
        long cols = 4100; // 1025 fp32 groups: more than 2 per thread of 512
        TensorView dy = matrix(rows, cols, DType.FP32);
        TensorView x = matrix(rows, cols, DType.FP32);
        TensorView mean = vector(rows, DType.FP32);
        TensorView rstd = vector(rows, DType.FP32);
        TensorView gamma = vector(cols, DType.FP32);
        TensorView dgamma = vector(cols, DType.FP32);
        TensorView dbeta = vector(cols, DType.FP32);
        long parts = LayerKernels.layerNormParts(rows);
        assertEquals(8, LayerKernels.layerNormRowsPerPart(rows));
        assertEquals(13, parts);
        TensorView ws = matrix(LayerKernels.layerNormBackwardWorkspaceRows(rows), cols, DType.FP32);
        kernels.layerNormBackward(dy, x, mean, rstd, gamma, false, dy, dgamma, dbeta, true, ws, stream);
        long dbetaPart = ws.address() + parts * cols * 4;
        // Partial sums: 13 parts x ceil(4100 / 256) column tiles; then one block per row.
        assertEquals(List.of(
                new Launch("ubuf_layernorm_bwd_params_partial_f32", 13 * 17, 256, List.of(rows, cols, dy.address(),
                        cols, x.address(), cols, mean.address(), rstd.address(), 8L, ws.address(), dbetaPart, cols)),
                new Launch("ubuf_layernorm_bwd_dx_f32", 100, 256, List.of(rows, cols, dy.address(), cols, x.address(),
                        cols, mean.address(), rstd.address(), gamma.address(), 0, dy.address(), cols)),
                // Both fp32: dgamma's and dbeta's sums in one launch, 129 tiles of 32 columns each.
                new Launch("ubuf_col_sums2_f32_to_f32", 258, 512, List.of(parts, cols, ws.address(), dbetaPart,
                        cols, dgamma.address(), dbeta.address(), 1))), launches);
    }

    @Test
    void columnSumsSplitRowsIntoAtMost256PartsOfAtLeast32Rows() {
        assertEquals(1, LayerKernels.parts(1));
        assertEquals(1, LayerKernels.parts(32));
        assertEquals(2, LayerKernels.parts(33));
        assertEquals(256, LayerKernels.parts(8192));
        assertEquals(64, LayerKernels.rowsPerPart(16384));
        assertEquals(256, LayerKernels.parts(16384));
        assertEquals(256, LayerKernels.parts(16383));
        assertEquals(2 * 256, LayerKernels.layerNormBackwardWorkspaceRows(16384));
        assertEquals(64, LayerKernels.layerNormRowsPerPart(16384));
        assertEquals(2 * 3, LayerKernels.layerNormBackwardWorkspaceRows(17), "3 parts of 8 rows");
        for (long rows = 1; rows < 5000; rows += 7) {
            long parts = LayerKernels.parts(rows);
            assertTrue(parts <= 256 && (parts - 1) * LayerKernels.rowsPerPart(rows) < rows
                    && parts * LayerKernels.rowsPerPart(rows) >= rows, "rows " + rows);
            long lnParts = LayerKernels.layerNormParts(rows);
            long lnRows = LayerKernels.layerNormRowsPerPart(rows);
            assertTrue(lnParts <= 256 && lnRows >= 8 && (lnParts - 1) * lnRows < rows && lnParts * lnRows >= rows,
                    "rows " + rows);
            assertTrue(2 * lnParts <= LayerKernels.layerNormBackwardWorkspaceRowsUpTo(rows + 100), "rows " + rows);
        }
    }

    @Test
    void biasGradSumsColumnsIntoTheBiasDtype() {
        TensorView dy = matrix(4096, 1024, DType.BF16);
        TensorView db = vector(1024, DType.BF16);
        TensorView ws = matrix(LayerKernels.biasGradWorkspaceRows(4096), 1024, DType.FP32);
        kernels.biasGrad(dy, db, false, ws, stream);
        assertEquals(List.of(
                // 128 parts x one tile of 256 groups of 8 columns; 32 tiles of 32 columns
                new Launch("ubuf_col_sums_partial_bf16", 128, 256, List.of(4096L, 1024L, dy.address(), 1024L, 32L,
                        ws.address(), 1024L)),
                new Launch("ubuf_col_sums_f32_to_bf16", 32, 512, List.of(128L, 1024L, ws.address(), 1024L,
                        db.address(), 0))), launches);
    }

    @Test
    void theBiasedActivationsAddTheBiasOnTheFlyAndSumItsGradientBesideDx() {
        // 8B's fc1 at tp 4: 8192 rows of 2 x 3584.
        TensorView x = matrix(8192, 7168, DType.BF16);
        TensorView bias = vector(7168, DType.BF16);
        TensorView a = matrix(8192, 3584, DType.BF16);
        TensorView db = vector(7168, DType.FP32);
        TensorView ws = matrix(LayerKernels.biasGradWorkspaceRows(8192), 7168, DType.FP32);
        kernels.biasSwiglu(x, bias, a, stream);
        kernels.biasSwigluBackward(a, x, bias, x, db, true, ws, stream);
        assertEquals(List.of(
                // a thread per 16-byte word of a: 8192 x 3584 / 8 words, blocks of 128
                new Launch("ubuf_swiglu_fwd_words_bf16", 28672, 128, List.of(8192L, 3584L, x.address(), 7168L,
                        bias.address(), a.address(), 3584L)),
                // 75 parts of 110 rows x seven tiles of 64 groups (4 row lanes a block), in place over x: 525 items,
                // one wave of four blocks an SM
                new Launch("ubuf_bias_swiglu_bwd_partial_bf16", 525, 256, List.of(8192L, 3584L, a.address(), 3584L,
                        x.address(), 7168L, bias.address(), x.address(), 7168L, 110L, ws.address(), 7168L)),
                new Launch("ubuf_col_sums_f32_to_f32", 224, 512, List.of(75L, 7168L, ws.address(), 7168L,
                        db.address(), 1))), launches);
        launches.clear();
        TensorView gx = matrix(100, 48, DType.FP32);
        TensorView gdy = matrix(100, 48, DType.FP32);
        TensorView gb = vector(48, DType.FP32);
        TensorView gdb = vector(48, DType.FP32);
        TensorView gws = matrix(LayerKernels.biasGradWorkspaceRows(100), 48, DType.FP32);
        kernels.biasGeluBackward(gdy, gx, gb, gx, gdb, false, gws, stream);
        assertEquals(List.of(
                // 4 parts of 32 rows (the last of 4) x one tile of 12 groups of 4 columns
                new Launch("ubuf_bias_gelu_bwd_partial_f32", 4, 256, List.of(100L, 48L, gdy.address(), 48L,
                        gx.address(), 48L, gb.address(), gx.address(), 48L, 32L, gws.address(), 48L)),
                new Launch("ubuf_col_sums_f32_to_f32", 2, 512, List.of(4L, 48L, gws.address(), 48L, gdb.address(),
                        0))), launches);
        // Rows of x not 16-byte aligned: the column-tile forward, 512 items of 16 rows x two tiles of 256 groups of
        // 8 columns (448 groups a half).
        launches.clear();
        TensorView odd = matrix(8192, 7169, DType.BF16).cols(0, 7168);
        kernels.biasSwiglu(odd, bias, a, stream);
        assertEquals(List.of(new Launch("ubuf_bias_swiglu_fwd_bf16", 1024, 256, List.of(8192L, 3584L, odd.address(),
                7169L, bias.address(), a.address(), 3584L, 16L))), launches);
    }

    @Test
    void theBiasedActivationsRejectBadOperandsBeforeAnyLaunch() {
        TensorView x = matrix(64, 32, DType.BF16);
        TensorView dy = matrix(64, 16, DType.BF16);
        TensorView bias = vector(32, DType.BF16);
        TensorView db = vector(32, DType.FP32);
        TensorView ws = matrix(LayerKernels.biasGradWorkspaceRows(64), 32, DType.FP32);
        assertRejected("bias must be a 1x32 vector", () -> kernels.biasSwiglu(x, vector(16, DType.BF16),
                matrix(64, 16, DType.BF16), stream));
        assertRejected("bias", () -> kernels.biasSwiglu(x, vector(32, DType.FP32), matrix(64, 16, DType.BF16),
                stream));
        assertRejected("workspace must be at least", () -> kernels.biasSwigluBackward(dy, x, bias, x, db, true,
                matrix(1, 32, DType.FP32), stream));
        assertRejected("dbias must be a 1x32 vector", () -> kernels.biasSwigluBackward(dy, x, bias, x,
                vector(16, DType.FP32), true, ws, stream));
        assertRejected("dy (rows x F for x of rows x 2F) must be 64x16", () -> kernels.biasSwigluBackward(x, x, bias,
                x, db, true, ws, stream));
        // dx over part of x (not x itself): a partial overlap.
        TensorView both = matrix(65, 32, DType.BF16);
        assertRejected("overlap in memory", () -> kernels.biasSwigluBackward(dy, both.rows(0, 64), bias,
                both.rows(1, 64), db, true, ws, stream));
        assertRejected("dy", () -> kernels.biasGeluBackward(dy, x, bias, x, db, true, ws, stream));
        assertTrue(launches.isEmpty(), "nothing launched: " + launches);
    }

    @Test
    void theFusedActivationBackwardsTakeTheLongestPartsThatFillWholeWaves() {
        // 8192 rows; halves of 3584, 7168 and 14336 columns: 7, 14 and 28 tiles of 64 groups. Parts of at most 512
        // rows, so at least 16 parts. Two resident blocks an SM (2 x 132):
        assertEquals(222, kernels.biasActivationRowsPerPart(8192, 3584, DType.BF16, 2), "37 x 7 = 259 <= 264");
        assertEquals(456, kernels.biasActivationRowsPerPart(8192, 7168, DType.BF16, 2), "18 x 14 = 252 <= 264");
        assertEquals(456, kernels.biasActivationRowsPerPart(8192, 14336, DType.BF16, 2),
                "one wave holds 9 parts (911 rows, too long); two hold 18 x 28 = 504 <= 528");
        assertEquals(32, kernels.biasActivationRowsPerPart(8192, 512, DType.BF16, 2), "264 parts: 32 rows");
        // The fused SwiGLU backward's four (4 x 132 = 528): one wave at each width.
        int swiglu = LayerKernels.BIAS_SWIGLU_BACKWARD_BLOCKS_PER_SM;
        assertEquals(4, swiglu);
        assertEquals(110, kernels.biasActivationRowsPerPart(8192, 3584, DType.BF16, swiglu), "75 x 7 = 525 <= 528");
        assertEquals(222, kernels.biasActivationRowsPerPart(8192, 7168, DType.BF16, swiglu), "37 x 14 = 518 <= 528");
        assertEquals(456, kernels.biasActivationRowsPerPart(8192, 14336, DType.BF16, swiglu), "18 x 28 = 504 <= 528");
        assertEquals(32, kernels.biasActivationRowsPerPart(8192, 512, DType.BF16, swiglu), "528 parts: 16 rows, < 32");
        assertEquals(32, kernels.biasActivationRowsPerPart(100, 48, DType.FP32, swiglu), "never below rowsPerPart");
        // The fused GELU backward, 3 x 132 resident blocks: 28 parts x 14 tiles = 392 <= 396.
        TensorView dy = matrix(8192, 7168, DType.BF16);
        TensorView x = matrix(8192, 7168, DType.BF16);
        TensorView ws = matrix(LayerKernels.biasGradWorkspaceRows(8192), 7168, DType.FP32);
        kernels.biasGeluBackward(dy, x, vector(7168, DType.BF16), x, vector(7168, DType.FP32), false, ws, stream);
        assertEquals(293L, launches.getFirst().args().get(9));
        assertEquals(28 * 14, launches.getFirst().grid());
        assertEquals(28L, launches.get(1).args().getFirst(), "28 parts summed");
        for (int blocks : new int[]{swiglu, LayerKernels.BIAS_GELU_BACKWARD_BLOCKS_PER_SM}) {
            for (long cols : new long[]{8, 3584, 7168, 14336, 57344, 1L << 20}) {
                long tiles = (cols / 8 + 63) / 64;
                long resident = (long) blocks * SMS;
                for (long rows = 1; rows < 40000; rows += 97) {
                    long rpp = kernels.biasActivationRowsPerPart(rows, cols, DType.BF16, blocks);
                    long least = LayerKernels.rowsPerPart(rows);
                    long parts = (rows + rpp - 1) / rpp;
                    String at = "rows " + rows + ", cols " + cols + ", rpp " + rpp;
                    assertTrue(rpp >= least && (rpp <= LayerKernels.MAX_BIAS_ACTIVATION_ROWS_PER_PART || rpp == least),
                            at);
                    assertTrue(parts <= LayerKernels.biasGradWorkspaceRows(rows), at);
                    // Whole waves: the items fill at most k waves, and one row shorter parts would need more.
                    long waves = (parts * tiles + resident - 1) / resident;
                    if (rpp > least) {
                        long shorter = (rows + rpp - 2) / (rpp - 1);
                        assertTrue(shorter * tiles > waves * resident || rpp - 1 < least, at);
                        // ... and the least such k: one wave fewer only holds parts that are too long.
                        long fewer = (waves - 1) * resident / tiles;
                        assertTrue(fewer < 1 || (rows + fewer - 1) / fewer
                                > LayerKernels.MAX_BIAS_ACTIVATION_ROWS_PER_PART, at);
                    }
                }
            }
        }
    }

    @Test
    void biasGradLengthensItsPartsWhileThreeItemsPerSmRemain() {
        // 8192 x 14336 bf16: 1792 groups = 7 tiles; 64 parts of 128 rows leave 448 items >= 3 x 132.
        TensorView dy = matrix(8192, 14336, DType.BF16);
        TensorView db = vector(14336, DType.FP32);
        TensorView ws = matrix(LayerKernels.biasGradWorkspaceRows(8192), 14336, DType.FP32);
        kernels.biasGrad(dy, db, false, ws, stream);
        assertEquals(new Launch("ubuf_col_sums_partial_bf16", 448, 256, List.of(8192L, 14336L, dy.address(), 14336L,
                128L, ws.address(), 14336L)), launches.getFirst());
        assertEquals(64L, launches.get(1).args().getFirst(), "64 parts summed");
        // 8192 x 7168: 4 tiles; 128-row parts would leave 256 items, so 64 rows (512 items).
        launches.clear();
        TensorView dy2 = matrix(8192, 7168, DType.BF16);
        TensorView db2 = vector(7168, DType.FP32);
        kernels.biasGrad(dy2, db2, false, ws.cols(0, 7168), stream);
        assertEquals(64L, launches.getFirst().args().get(4));
        assertEquals(128L, launches.get(1).args().getFirst());
        // 8192 x 28672 (70B's fc1 at tp 2): 14 tiles; 128-row parts would make 896 items, just over one wave of
        // 6 resident blocks on 132 SMs (792), so 256-row parts, 448 items in one wave.
        launches.clear();
        TensorView dy3 = matrix(8192, 28672, DType.BF16);
        TensorView ws3 = matrix(LayerKernels.biasGradWorkspaceRows(8192), 28672, DType.FP32);
        kernels.biasGrad(dy3, vector(28672, DType.FP32), false, ws3, stream);
        assertEquals(448, launches.getFirst().grid());
        assertEquals(256L, launches.getFirst().args().get(4));
        assertEquals(32L, launches.get(1).args().getFirst(), "32 parts summed");
        for (long cols : new long[]{4096, 14336, 28672, 57344}) {
            for (long rows = 1; rows < 20000; rows += 97) {
                long rpp = kernels.biasGradRowsPerPart(rows, cols, DType.BF16);
                assertTrue(rpp >= LayerKernels.rowsPerPart(rows) && rpp <= Math.max(256, LayerKernels.rowsPerPart(rows)),
                        "rows " + rows);
                assertTrue((rows + rpp - 1) / rpp <= LayerKernels.biasGradWorkspaceRows(rows), "rows " + rows);
            }
        }
    }

    @Test
    void layerNormBackwardOfAlignedRowsStagesThemInSharedMemory() {
        long rows = 4096;
        long cols = 4096;
        TensorView dy = matrix(rows, cols, DType.BF16);
        TensorView x = matrix(rows, cols, DType.BF16);
        TensorView mean = vector(rows, DType.FP32);
        TensorView rstd = vector(rows, DType.FP32);
        TensorView gamma = vector(cols, DType.BF16);
        TensorView dgamma = vector(cols, DType.FP32);
        TensorView dbeta = vector(cols, DType.FP32);
        long parts = LayerKernels.layerNormParts(rows);
        assertEquals(256, parts);
        assertEquals(16, LayerKernels.layerNormRowsPerPart(rows));
        TensorView ws = matrix(LayerKernels.layerNormBackwardWorkspaceRows(rows), cols, DType.FP32);
        TensorView dx = matrix(rows, cols, DType.BF16);
        kernels.layerNormBackward(dy, x, mean, rstd, gamma, false, dx, dgamma, dbeta, false, ws, stream);
        long dbetaPart = ws.address() + parts * cols * 4;
        // 512 groups, two per thread: 256 threads, two blocks an SM; three slots of a dy and an x row (8 KiB each).
        assertEquals(new Launch("ubuf_layernorm_bwd_staged_bf16", 256, 256, List.of(rows, cols, dy.address(), cols,
                x.address(), cols, mean.address(), rstd.address(), gamma.address(), 0, dx.address(), cols, 16L,
                ws.address(), dbetaPart, cols)), launches.getFirst());
        assertEquals(new Launch("ubuf_col_sums2_f32_to_f32", 256, 512, List.of(parts, cols, ws.address(), dbetaPart,
                cols, dgamma.address(), dbeta.address(), 0)), launches.get(1));
        assertEquals(List.of(3 * 2 * 8192, 0), sharedBytes);
        // 8192 columns: 512 threads, one block an SM, so parts of at least 4096 / 132 rows (32, not 16): 128 parts,
        // one a block, and the finishing sums add 128 parts.
        launches.clear();
        sharedBytes.clear();
        TensorView dy8 = matrix(rows, 8192, DType.BF16);
        TensorView x8 = matrix(rows, 8192, DType.BF16);
        TensorView ws8 = matrix(LayerKernels.layerNormBackwardWorkspaceRows(rows), 8192, DType.FP32);
        kernels.layerNormBackward(dy8, x8, mean, rstd, vector(8192, DType.BF16), false, dy8, vector(8192, DType.FP32),
                vector(8192, DType.FP32), false, ws8, stream);
        assertEquals("ubuf_layernorm_bwd_staged_bf16", launches.getFirst().name());
        assertEquals(128, launches.getFirst().grid());
        assertEquals(512, launches.getFirst().block());
        assertEquals(32L, launches.getFirst().args().get(12));
        assertEquals(3 * 2 * 16384, sharedBytes.getFirst());
        assertEquals("ubuf_col_sums2_f32_to_f32", launches.get(1).name());
        assertEquals(128L, launches.get(1).args().getFirst());
        // Rows one element apart (not 16-byte aligned): the register-only kernel, on the same parts, so both
        // kernels add the same sums in the same order.
        launches.clear();
        TensorView odd = matrix(rows, 8193, DType.BF16).cols(0, 8192);
        kernels.layerNormBackward(odd, odd, mean, rstd, vector(8192, DType.BF16), false, odd,
                vector(8192, DType.FP32), vector(8192, DType.FP32), false, ws8, stream);
        assertEquals("ubuf_layernorm_bwd_bf16", launches.getFirst().name());
        assertEquals(128, launches.getFirst().grid());
        assertEquals(512, launches.getFirst().block());
        assertEquals(32L, launches.getFirst().args().get(12));
        assertEquals(128L, launches.get(1).args().getFirst());
    }

    @Test
    void activationsLaunchElementwiseKernels() {
        TensorView x = matrix(64, 2048, DType.BF16);
        TensorView y = matrix(64, 1024, DType.BF16);
        kernels.swiglu(x, y, stream);
        kernels.swigluBackward(y, x, x, stream);
        kernels.gelu(y, y, stream);
        kernels.geluBackward(y, y, y, stream);
        TensorView bias = vector(1024, DType.BF16);
        kernels.biasGelu(y, bias, y, null, stream);
        assertEquals(List.of(
                // a thread per 16-byte word of y: 64 x 1024 / 8 words, blocks of 128; no bias
                new Launch("ubuf_swiglu_fwd_words_bf16", 64, 128, List.of(64L, 1024L, x.address(), 2048L, 0L,
                        y.address(), 1024L)),
                new Launch("ubuf_swiglu_bwd_bf16", 32, 256, List.of(64L, 1024L, y.address(), 1024L, x.address(), 2048L,
                        x.address(), 2048L)),
                // two 16-byte words a thread: 65536 / 8 / 2 / 128 blocks
                new Launch("ubuf_gelu_fwd_dense_bf16", 32, 128, List.of(65536L, y.address(), y.address())),
                new Launch("ubuf_gelu_bwd_dense_bf16", 32, 128, List.of(65536L, y.address(), y.address(), y.address())),
                // without pre: a thread to a word column, 64 x 1024 / 8 words in blocks of 256
                new Launch("ubuf_bias_gelu_fwd_cols_bf16", 32, 256, List.of(64L, 1024L, y.address(), 1024L,
                        bias.address(), y.address(), 1024L))), launches);
    }

    @Test
    void theBiasedGeluForwardTakesTheColumnKernelWhereItsViewsAllowAndTheMapOtherwise() {
        TensorView x = matrix(8192, 7168, DType.BF16);
        TensorView y = matrix(8192, 7168, DType.BF16);
        TensorView pre = matrix(8192, 7168, DType.BF16);
        TensorView bias = vector(7168, DType.BF16);
        kernels.biasGelu(x, bias, y, null, stream);
        kernels.biasGelu(x, bias, y, pre, stream);
        TensorView odd = matrix(8192, 7169, DType.BF16).cols(0, 7168); // rows 2 bytes off 16
        kernels.biasGelu(odd, bias, y, null, stream);
        TensorView x32 = matrix(3, 30, DType.FP32); // 30 columns: not whole 16-byte words
        TensorView b32 = vector(30, DType.FP32);
        kernels.biasGelu(x32, b32, x32, null, stream);
        assertEquals(List.of(
                // 7340032 words: eight blocks of 256 an SM, each thread down one word column
                new Launch("ubuf_bias_gelu_fwd_cols_bf16", 8 * SMS, 256, List.of(8192L, 7168L, x.address(), 7168L,
                        bias.address(), y.address(), 7168L)),
                new Launch("ubuf_bias_gelu_fwd_bf16", 8 * SMS, 256, List.of(8192L, 7168L, x.address(), 7168L,
                        bias.address(), y.address(), 7168L, pre.address(), 7168L)),
                new Launch("ubuf_bias_gelu_fwd_bf16", 8 * SMS, 256, List.of(8192L, 7168L, odd.address(), 7169L,
                        bias.address(), y.address(), 7168L, 0L, 0L)),
                new Launch("ubuf_bias_gelu_fwd_f32", 1, 256, List.of(3L, 30L, x32.address(), 30L,
                        b32.address(), x32.address(), 30L, 0L, 0L))), launches);
    }

    @Test
    void geluOverDenseViewsTakesTheDenseKernelsAThreadTwo16ByteWordsAndStridedViewsTheMap() {
        TensorView x = matrix(8192, 7168, DType.BF16);
        TensorView y = matrix(8192, 7168, DType.BF16);
        kernels.gelu(x, y, stream);
        kernels.geluBackward(x, x, y, stream);
        TensorView wide = matrix(8192, 7200, DType.BF16);
        kernels.gelu(wide.cols(0, 7168), y, stream);
        TensorView x32 = matrix(100, 30, DType.FP32); // 3000 elements = 750 words of 4: three blocks of 128 x 2
        kernels.gelu(x32, x32, stream);
        TensorView row = wide.rows(0, 1).cols(0, 7199); // one row is dense whatever its ld: 900 words, 4 blocks
        kernels.gelu(row, matrix(1, 7199, DType.BF16), stream);
        assertEquals(List.of(
                new Launch("ubuf_gelu_fwd_dense_bf16", 8192 * 7168 / 8 / 2 / 128, 128,
                        List.of(8192L * 7168, x.address(), y.address())),
                new Launch("ubuf_gelu_bwd_dense_bf16", 8192 * 7168 / 8 / 2 / 128, 128,
                        List.of(8192L * 7168, x.address(), x.address(), y.address())),
                new Launch("ubuf_gelu_fwd_bf16", 8 * SMS, 256,
                        List.of(8192L, 7168L, wide.address(), 7200L, y.address(), 7168L)),
                new Launch("ubuf_gelu_fwd_dense_f32", 3, 128, List.of(3000L, x32.address(), x32.address()))),
                launches.subList(0, 4));
        assertEquals("ubuf_gelu_fwd_dense_bf16", launches.get(4).name());
        assertEquals(4, launches.get(4).grid());
        assertEquals(7199L, launches.get(4).args().getFirst());
    }

    @Test
    void stridedViewsPassTheirLeadingDimension() {
        TensorView wide = matrix(8, 100, DType.FP32);
        TensorView left = wide.cols(0, 40);
        TensorView out = matrix(8, 40, DType.FP32);
        kernels.gelu(left, out, stream);
        assertEquals(List.of(8L, 40L, wide.address(), 100L, out.address(), 40L), launches.getFirst().args());
    }

    /** Every launch's arguments have the types the kernel declares (u64: Long, u32: Integer, f32: Float). */
    @ParameterizedTest
    @EnumSource(value = DType.class, names = {"FP32", "FP16", "BF16"})
    void everyLaunchMatchesTheKernelsParameterListInTheFatbin(DType t) {
        Properties info = KernelImage.buildInfo();
        assumeTrue("true".equals(info.getProperty("built")), "built without nvcc: no kernel parameter lists");
        long rows = 64;
        long cols = 256;
        TensorView x = matrix(rows, cols, t);
        TensorView dy = matrix(rows, cols, t);
        TensorView vec = vector(cols, t);
        TensorView beta = vector(cols, t);
        TensorView mean = vector(rows, DType.FP32);
        TensorView rstd = vector(rows, DType.FP32);
        TensorView ws = matrix(LayerKernels.layerNormBackwardWorkspaceRows(rows), cols, DType.FP32);
        TensorView out = matrix(rows, cols, t);
        TensorView dgamma = vector(cols, DType.FP32);
        TensorView dbeta = vector(cols, t);
        kernels.layerNormForward(x, vec, beta, 1e-5f, false, out, mean, rstd, stream);
        kernels.layerNormBackward(dy, x, mean, rstd, vec, false, out, dgamma, dbeta, false, ws, stream);
        // Rows not 16-byte aligned (one more column of leading dimension): the register-only fused backward.
        TensorView odd = matrix(rows, cols + 1, t).cols(0, cols);
        kernels.layerNormBackward(dy, odd, mean, rstd, vec, false, out, dgamma, dbeta, false, ws, stream);
        // dgamma and dbeta of one type: both finishing sums in one launch.
        kernels.layerNormBackward(dy, x, mean, rstd, vec, false, out, vector(cols, t), dbeta, false, ws, stream);
        // Rows too long for the fused backward: the two-kernel path.
        long longCols = 8200;
        TensorView lx = matrix(rows, longCols, t);
        TensorView lws = matrix(LayerKernels.layerNormBackwardWorkspaceRows(rows), longCols, DType.FP32);
        kernels.layerNormBackward(matrix(rows, longCols, t), lx, mean, rstd, vector(longCols, t), false,
                matrix(rows, longCols, t), vector(longCols, DType.FP32), vector(longCols, t), false, lws, stream);
        kernels.biasGrad(dy, dgamma, false, ws, stream);
        kernels.biasGrad(dy, dbeta, true, ws, stream);
        kernels.gelu(x, out, stream);
        kernels.geluBackward(dy, x, out, stream);
        // Strided views: the row/column kernels.
        kernels.layerNormForward(odd, vec, beta, 1e-5f, false, out, mean, rstd, stream);
        // More rows than resident blocks of the word kernel, not than those of its paired twin (blocks of 256 threads
        // for fp32's 4096 columns, of 128 for the 16-bit types').
        long pairedRows = t == DType.FP32 ? 1000 : 2048;
        TensorView px = matrix(pairedRows, 4096, t);
        kernels.layerNormForward(px, vector(4096, t), vector(4096, t), 1e-5f, false, px,
                vector(pairedRows, DType.FP32), vector(pairedRows, DType.FP32), stream);
        kernels.gelu(odd, out, stream);
        kernels.geluBackward(dy, odd, out, stream);
        kernels.biasGelu(x, vec, out, dy, stream);
        kernels.biasGelu(x, vec, out, null, stream);
        kernels.swiglu(x, matrix(rows, cols / 2, t), stream);
        kernels.swigluBackward(matrix(rows, cols / 2, t), x, out, stream);
        TensorView bws = matrix(LayerKernels.biasGradWorkspaceRows(rows), cols, DType.FP32);
        kernels.biasSwiglu(x, vec, matrix(rows, cols / 2, t), stream);
        // Strided x (rows not 16-byte aligned): the SwiGLU forwards' row/column and column-tile kernels.
        TensorView oddX = matrix(rows, cols + 1, t).cols(0, cols);
        kernels.swiglu(oddX, matrix(rows, cols / 2, t), stream);
        kernels.biasSwiglu(oddX, vec, matrix(rows, cols / 2, t), stream);
        kernels.biasSwigluBackward(matrix(rows, cols / 2, t), x, vec, x, dgamma, true, bws, stream);
        kernels.biasGeluBackward(dy, x, vec, out, dbeta, false, bws, stream);
        kernels.mseGrad(x, dy, 2f / (rows * cols), out, mean, stream);
        kernels.sgdStep(out, matrix(rows, cols, DType.FP32), 0.01f, stream);
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
            assertTrue(l.grid() >= 1);
            launched.add(l.name());
        }
        Set<String> expected = new TreeSet<>(LayerKernelNames.all());
        expected.removeIf(n -> !n.endsWith("_" + dev.ubuf.kernels.KernelType.valueOf(
                t == DType.FP32 ? "F32" : t == DType.FP16 ? "F16" : "BF16").suffix()));
        expected.add("ubuf_col_sums_f32_to_f32");
        assertEquals(expected, launched, "every " + t.shortName() + " layer kernel is launched by some method");
    }

    @Test
    void mseGradIsARowKernelAndSgdAnElementKernelWithTheArgumentsInKernelOrder() {
        TensorView y = matrix(100, 64, DType.BF16);
        TensorView target = matrix(100, 64, DType.BF16);
        TensorView sq = vector(100, DType.FP32);
        kernels.mseGrad(y, target, 0.5f, y, sq, stream); // in place: dy = y is allowed
        TensorView w = matrix(64, 300, DType.FP16);
        TensorView g = matrix(64, 300, DType.FP32);
        kernels.sgdStep(w, g, 0.25f, stream);
        kernels.sgdStep(w, g, 0.25f, true, stream);
        assertEquals(List.of(
                new Launch("ubuf_mse_grad_bf16", 100, 256, List.of(100L, 64L, y.address(), 64L, target.address(), 64L,
                        0.5f, y.address(), 64L, sq.address())),
                new Launch("ubuf_sgd_f16", 10, 256, List.of(64L, 300L, w.address(), 300L, g.address(), 300L,
                        0.25f, 0)),
                new Launch("ubuf_sgd_f16", 10, 256, List.of(64L, 300L, w.address(), 300L, g.address(), 300L,
                        0.25f, 1))), launches);
    }

    @Test
    void mseGradAndSgdRejectBadArgumentsBeforeAnyLaunch() {
        TensorView y = matrix(8, 16, DType.FP32);
        assertRejected("rowSquares", () -> kernels.mseGrad(y, matrix(8, 16, DType.FP32), 1f, matrix(8, 16,
                DType.FP32), vector(7, DType.FP32), stream));
        assertRejected("target", () -> kernels.mseGrad(y, matrix(8, 16, DType.FP16), 1f, matrix(8, 16,
                DType.FP32), vector(8, DType.FP32), stream));
        assertRejected("scale", () -> kernels.mseGrad(y, matrix(8, 16, DType.FP32), Float.NaN, matrix(8, 16,
                DType.FP32), vector(8, DType.FP32), stream));
        assertRejected("grad", () -> kernels.sgdStep(matrix(8, 16, DType.BF16), matrix(8, 16, DType.BF16), 0.1f,
                stream));
        assertRejected("lr", () -> kernels.sgdStep(y, matrix(8, 16, DType.FP32), Float.POSITIVE_INFINITY, stream));
    }

    // --- what is rejected ---

    @Test
    void fp8IsRejected() {
        TensorView x = matrix(4, 16, DType.FP8_E4M3);
        assertRejected("x is fp8e4m3: the layer kernels take fp32, fp16 or bf16", () -> kernels.gelu(x, x, stream));
    }

    @Test
    void mixedDtypesAreRejected() {
        TensorView x = matrix(4, 16, DType.BF16);
        assertRejected("y must be bf16, got fp16", () -> kernels.gelu(x, matrix(4, 16, DType.FP16), stream));
        assertRejected("gamma must be bf16, got fp32", () -> kernels.layerNormForward(x, vector(16, DType.FP32),
                vector(16, DType.BF16), 1e-5f, false, matrix(4, 16, DType.BF16), null, null, stream));
        assertRejected("mean must be fp32, got bf16", () -> kernels.layerNormForward(x, vector(16, DType.BF16),
                vector(16, DType.BF16), 1e-5f, false, matrix(4, 16, DType.BF16), vector(4, DType.BF16), null, stream));
    }

    @Test
    void shapesAreChecked() {
        TensorView x = matrix(4, 16, DType.FP32);
        assertRejected("y must be 4x16, got 4x8", () -> kernels.gelu(x, matrix(4, 8, DType.FP32), stream));
        assertRejected("gamma must be a 1x16 vector, got 16x1", () -> kernels.layerNormForward(x,
                matrix(16, 1, DType.FP32), vector(16, DType.FP32), 1e-5f, false, matrix(4, 16, DType.FP32), null, null,
                stream));
        assertRejected("rstd must be a 1x4 vector, got 1x5", () -> kernels.layerNormForward(x, vector(16, DType.FP32),
                vector(16, DType.FP32), 1e-5f, false, matrix(4, 16, DType.FP32), null, vector(5, DType.FP32), stream));
        assertRejected("bias must be a 1x16 vector", () -> kernels.biasGelu(x, vector(8, DType.FP32),
                matrix(4, 16, DType.FP32), null, stream));
        assertRejected("x must have an even number of columns", () -> kernels.swiglu(matrix(4, 15, DType.FP32),
                matrix(4, 7, DType.FP32), stream));
        assertRejected("y (rows x F for x of rows x 2F) must be 4x8, got 4x16", () -> kernels.swiglu(x,
                matrix(4, 16, DType.FP32), stream));
        assertRejected("dy (rows x F for x of rows x 2F) must be 4x8", () -> kernels.swigluBackward(x, x,
                matrix(4, 16, DType.FP32), stream));
    }

    @Test
    void epsMustBeFiniteAndNotNegative() {
        TensorView x = matrix(4, 16, DType.FP32);
        for (float eps : new float[] {-1e-5f, Float.NaN, Float.POSITIVE_INFINITY}) {
            assertRejected("eps must be finite and >= 0", () -> kernels.layerNormForward(x, vector(16, DType.FP32),
                    vector(16, DType.FP32), eps, false, matrix(4, 16, DType.FP32), null, null, stream));
        }
    }

    @Test
    void workspacesMustBeLargeEnoughFp32() {
        TensorView dy = matrix(1000, 64, DType.BF16);
        TensorView db = vector(64, DType.FP32);
        assertRejected("biasGrad workspace must be at least 32x64 fp32 (see biasGradWorkspaceRows), got 31x64",
                () -> kernels.biasGrad(dy, db, false, matrix(31, 64, DType.FP32), stream));
        assertRejected("biasGrad workspace must be fp32, got bf16",
                () -> kernels.biasGrad(dy, db, false, matrix(32, 64, DType.BF16), stream));
        TensorView x = matrix(1000, 64, DType.BF16);
        assertRejected("layerNormBackward workspace must be at least 250x64", () -> kernels.layerNormBackward(dy, x,
                vector(1000, DType.FP32), vector(1000, DType.FP32), vector(64, DType.BF16), false,
                matrix(1000, 64, DType.BF16), vector(64, DType.FP32), vector(64, DType.FP32), false,
                matrix(32, 64, DType.FP32), stream));
    }

    @Test
    void parameterGradientsAreFp32OrTheInputsDtype() {
        TensorView dy = matrix(10, 64, DType.BF16);
        assertRejected("dbias must be fp32 or bf16, got fp16", () -> kernels.biasGrad(dy, vector(64, DType.FP16),
                false, matrix(1, 64, DType.FP32), stream));
    }

    @Test
    void partialOverlapsAndUnsupportedInPlaceUseAreRejected() {
        TensorView big = matrix(8, 64, DType.FP32);
        TensorView top = big.rows(0, 4);
        TensorView shifted = big.rows(2, 4);
        assertRejected("overlap in memory", () -> kernels.gelu(top, shifted, stream));
        TensorView x = matrix(4, 32, DType.FP32);
        assertRejected("x fp32[4x32] and y fp32[4x16, ld 32] overlap in memory",
                () -> kernels.swiglu(x, x.cols(0, 16), stream));
        TensorView stats = vector(4, DType.FP32);
        assertRejected("mean fp32[1x4] and rstd fp32[1x4] overlap in memory (this operand cannot be computed in place)",
                () -> kernels.layerNormForward(x, vector(32, DType.FP32), vector(32, DType.FP32), 0f, false,
                        matrix(4, 32, DType.FP32), stats, stats, stream));
        TensorView vec = vector(32, DType.FP32);
        assertRejected("y fp32[4x32] and pre fp32[4x32] overlap in memory",
                () -> kernels.biasGelu(x, vec, x, x, stream));
        TensorView gamma = matrix(1, 32, DType.FP32);
        assertRejected("overlap in memory", () -> kernels.layerNormForward(x, gamma, vector(32, DType.FP32), 0f, false,
                matrix(4, 32, DType.FP32), gamma.cols(0, 4), null, stream));
    }

    @Test
    void inPlaceUseTheKernelsAllowIsAccepted() {
        TensorView x = matrix(4, 32, DType.BF16);
        TensorView dy = matrix(4, 32, DType.BF16);
        kernels.gelu(x, x, stream);
        kernels.geluBackward(dy, x, dy, stream);
        kernels.geluBackward(dy, x, x, stream);
        kernels.biasGelu(x, vector(32, DType.BF16), matrix(4, 32, DType.BF16), x, stream);
        kernels.swigluBackward(matrix(4, 16, DType.BF16), x, x, stream);
        kernels.layerNormForward(x, vector(32, DType.BF16), vector(32, DType.BF16), 1e-5f, false, x, null, null,
                stream);
        assertEquals(6, launches.size());
        assertFalse(launches.stream().anyMatch(l -> l.grid() < 1));
    }
}

package dev.ubuf.layers.kernels;

import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.KernelLibrary;
import dev.ubuf.kernels.KernelType;
import dev.ubuf.kernels.LayerKernelNames;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;

import java.util.Objects;

/**
 * Typed launches of the layer kernels (kernels/README.md, "Layer kernels"): LayerNorm forward and backward, GELU
 * (tanh approximation) forward and backward, fused bias + GELU, SwiGLU forward and backward, bias gradients, and a
 * training step's mean-squared-error gradient and SGD update.
 * Every argument is checked here, before any launch: dtypes (fp32, fp16, bf16; one dtype per call), shapes,
 * vector operands as {@code 1 x n} views, and overlaps (an output may be an input exactly where the kernel allows
 * it, never a partial overlap). Math is fp32 inside; {@link dev.ubuf.layers.reference.HostLayerMath} is the
 * float64 reference.
 */
public final class LayerKernels {
    /** Threads per block: a multiple of 32 (the row kernels' block reductions need whole warps), at most 512. */
    static final int BLOCK = 256;
    /** Threads a block of the dense GELU kernels: 0.6-0.8% faster forwards than 256 on an H100 (gelu_probe.cu). */
    static final int DENSE_BLOCK = 128;
    /** The biased GELU forward's column-stationary kernel: 256-thread blocks, eight an SM (its launch bounds). */
    static final int COLS_BLOCK = 256;
    static final int COLS_BLOCKS_PER_SM = 8;
    /** Whether the SwiGLU forwards run their word kernel where the views allow (see swigluWords). */
    static final boolean SWIGLU_WORDS = !"false".equals(System.getProperty("ubuf.swigluWords"));
    /** The column-sum kernels split the rows into at most this many parts (fp32 partial sums, then one pass). */
    static final int MAX_PARTS = 256;
    /** ... of at least this many rows each, so a part's partial sum amortises its store. */
    static final int MIN_ROWS_PER_PART = 32;
    /**
     * The fused LayerNorm backward runs a block per part, so it takes more, shorter parts than the column sums: at
     * most this many ...
     */
    static final int MAX_LAYER_NORM_PARTS = 256;
    /** ... of at least this many rows each (the fp32 partial rows stay small beside the rows they sum). */
    static final int MIN_LAYER_NORM_ROWS_PER_PART = 8;
    /** Column groups (16 bytes' worth of columns) per thread that the LayerNorm forward holds in registers. */
    static final int LAYER_NORM_FORWARD_GROUPS = 4;
    /** ... and the fused backward (it also holds dy and the per-column dgamma/dbeta sums). */
    static final int LAYER_NORM_BACKWARD_GROUPS = 2;
    /** The most threads per block the kernels take (kernels/README.md). */
    static final int MAX_BLOCK = 512;
    /** The row kernels launch one block per row up to this many blocks, grid-stride beyond. */
    static final int MAX_ROW_BLOCKS = 1 << 20;

    /** Launches one kernel: the {@link KernelLibrary} on a GPU, a recorder in CPU tests. */
    @FunctionalInterface
    interface Launcher {
        void launch(String name, int grid, int block, int sharedBytes, CudaStream stream, Object... args);
    }

    /**
     * Blocks of a kernel an SM holds at once at a block size: the driver's occupancy on a GPU
     * ({@link KernelLibrary#residentBlocksPerSm}), a model in CPU tests.
     */
    @FunctionalInterface
    interface Occupancy {
        int blocksPerSm(String kernel, int block);
    }

    /**
     * The least occupancy of the kernels' launch bounds: 64 registers a thread at most, so 1024 threads an SM. The CPU
     * tests' default model; on a GPU a kernel that takes fewer registers holds more.
     */
    static final Occupancy LAUNCH_BOUNDS_FLOOR = (kernel, block) -> Math.max(1, 1024 / block);

    /** Shared-memory row slots of the staged LayerNorm backward (LN_BWD_STAGES in ubuf_layernorm.cu). */
    static final int LAYER_NORM_BACKWARD_STAGES = 3;
    /** The bias gradient's parts grow up to this many rows while enough (part, column tile) items stay ... */
    static final int MAX_BIAS_GRAD_ROWS_PER_PART = 128;
    /** ... this many per SM: longer parts write and re-read fewer fp32 partial rows. */
    static final int BIAS_GRAD_ITEMS_PER_SM = 3;
    /**
     * Blocks of {@code BLOCK} threads of ubuf_col_sums_partial resident an SM: 37 registers a thread (sm_90, nvcc 13.0)
     * leave room for 6.
     */
    static final int COL_SUMS_PARTIAL_BLOCKS_PER_SM = 6;

    /**
     * Rows of each item of the fused bias + SwiGLU forward (a thread walks them down one column group): short
     * items, so the last of several waves of blocks is a small one.
     */
    static final int BIAS_ACTIVATION_FORWARD_ROWS = 16;
    /** Row lanes of the fused activation backwards' blocks (ACT_LANES in ubuf_activation.cu; BLOCK threads). */
    static final int BIAS_ACTIVATION_LANES = 4;
    /** Resident blocks an SM of the fused SwiGLU backward (its launch bounds, ACT_SWIGLU_BWD_BLOCKS_PER_SM). */
    static final int BIAS_SWIGLU_BACKWARD_BLOCKS_PER_SM = 4;
    /** ... and of the fused GELU backward (ACT_GELU_BWD_BLOCKS_PER_SM). */
    static final int BIAS_GELU_BACKWARD_BLOCKS_PER_SM = 3;
    /** The fused activation backwards' parts are at most this many rows long. */
    static final int MAX_BIAS_ACTIVATION_ROWS_PER_PART = 512;

    private final Launcher launcher;
    private final Occupancy occupancy;
    private final int smCount;
    private final int maxBlocks;

    public LayerKernels(KernelLibrary library) {
        this((name, grid, block, shared, stream, args) -> library.launch(name, grid, block, shared,
                Objects.requireNonNull(stream, "stream"), args), library::residentBlocksPerSm,
                library.context().device().smCount());
    }

    LayerKernels(Launcher launcher, int smCount) {
        this(launcher, LAUNCH_BOUNDS_FLOOR, smCount);
    }

    LayerKernels(Launcher launcher, Occupancy occupancy, int smCount) {
        this.launcher = Objects.requireNonNull(launcher, "launcher");
        this.occupancy = Objects.requireNonNull(occupancy, "occupancy");
        if (smCount < 1) {
            throw new IllegalArgumentException("smCount must be >= 1, got " + smCount);
        }
        this.smCount = smCount;
        // 8 blocks of 256 threads fill an SM's 2048 thread slots.
        this.maxBlocks = smCount * 8;
    }

    /** Rows of each fp32 partial-sum part for a matrix of {@code rows} rows. */
    public static long rowsPerPart(long rows) {
        requirePositive(rows, "rows");
        return Math.max(MIN_ROWS_PER_PART, ceilDiv(rows, MAX_PARTS));
    }

    /** Parts of {@code rows} rows: the rows of {@link #biasGrad}'s workspace. */
    public static long parts(long rows) {
        return ceilDiv(rows, rowsPerPart(rows));
    }

    /** Rows of the fp32 workspace (of {@code cols} columns) that {@link #biasGrad} needs. */
    public static long biasGradWorkspaceRows(long rows) {
        return parts(rows);
    }

    /**
     * Rows of a {@link #biasGrad} workspace that serves every row count up to {@code maxRows}: parts never exceed
     * the cap on parts nor one per {@code MIN_ROWS_PER_PART} rows (parts(rows) is not monotonic in rows).
     */
    public static long biasGradWorkspaceRowsUpTo(long maxRows) {
        requirePositive(maxRows, "maxRows");
        return Math.min(MAX_PARTS, ceilDiv(maxRows, MIN_ROWS_PER_PART));
    }

    /**
     * Rows of each part of {@link #layerNormBackward}'s partial sums for {@code rows} rows, at least: its fused
     * kernels take longer parts where {@code rows} exceeds their resident blocks, so never more parts.
     */
    public static long layerNormRowsPerPart(long rows) {
        requirePositive(rows, "rows");
        return Math.max(MIN_LAYER_NORM_ROWS_PER_PART, ceilDiv(rows, MAX_LAYER_NORM_PARTS));
    }

    /** Parts of {@code rows} rows in {@link #layerNormBackward}, at most: half the rows of its workspace. */
    public static long layerNormParts(long rows) {
        return ceilDiv(rows, layerNormRowsPerPart(rows));
    }

    /** Rows of a {@link #layerNormBackward} workspace that serves every row count up to {@code maxRows}. */
    public static long layerNormBackwardWorkspaceRowsUpTo(long maxRows) {
        requirePositive(maxRows, "maxRows");
        return 2 * Math.min(MAX_LAYER_NORM_PARTS, ceilDiv(maxRows, MIN_LAYER_NORM_ROWS_PER_PART));
    }

    /** Rows of the fp32 workspace (of {@code cols} columns) that {@link #layerNormBackward} needs. */
    public static long layerNormBackwardWorkspaceRows(long rows) {
        return 2 * layerNormParts(rows);
    }

    /**
     * Threads per block of a LayerNorm kernel that holds {@code groupsPerThread} column groups of a row of
     * {@code cols} columns of {@code t} per thread: whole warps, enough to hold the row, at most {@link #MAX_BLOCK}.
     */
    static int layerNormBlock(long cols, DType t, int groupsPerThread) {
        long groups = ceilDiv(cols, 16 / t.bytes());
        long threads = ceilDiv(ceilDiv(groups, groupsPerThread), 32) * 32;
        return (int) Math.min(MAX_BLOCK, Math.max(32, threads));
    }

    /** Whether the fused LayerNorm backward holds a row of {@code cols} columns of {@code t} (else two kernels). */
    static boolean layerNormBackwardFused(long cols, DType t) {
        return ceilDiv(cols, 16 / t.bytes()) <= (long) LAYER_NORM_BACKWARD_GROUPS * MAX_BLOCK;
    }

    /** Dynamic shared memory of the staged LayerNorm backward: its row slots of dy and x. */
    static int layerNormBackwardSharedBytes(long cols, DType t) {
        return (int) (LAYER_NORM_BACKWARD_STAGES * 2 * ceilDiv(cols, 16 / t.bytes()) * 16);
    }

    /**
     * Whether the staged backward can take these views: it copies whole 16-byte groups (cols a multiple of the
     * group, rows 16-byte aligned) and writes the fp32 partial rows four floats at a time.
     */
    private static boolean staged(long cols, DType t, TensorView dy, TensorView x, TensorView dx, TensorView gamma,
                                  TensorView workspace) {
        return cols % (16 / t.bytes()) == 0 && rowsAligned(dy) && rowsAligned(x) && rowsAligned(dx)
                && gamma.address() % 16 == 0 && rowsAligned(workspace);
    }

    /** Whether the forward's rows are whole aligned 16-byte words that its threads hold in registers. */
    static boolean layerNormForwardWords(TensorView x, TensorView gamma, TensorView beta, TensorView y) {
        long word = 16 / x.dtype().bytes();
        return x.cols() % word == 0 && x.cols() / word <= (long) LAYER_NORM_FORWARD_GROUPS * MAX_BLOCK
                && rowsAligned(x) && rowsAligned(y) && gamma.address() % 16 == 0 && beta.address() % 16 == 0;
    }

    /**
     * Whether the forward's word kernel of {@code t} runs paired ({@code ubuf_layernorm_fwd_words2}, a thread for two
     * of a block of {@code block}, the same bits): where the rows outnumber the word kernel's resident blocks but fit
     * in one wave of the paired kernel's, which then read, reduce and write without a second wave behind them. On an
     * H200 ({@code bench kernels}, bf16): 0.987x the word kernel's time at 2048 x 4096 (8B dims, tp 4), 0.89x at
     * 1024 x 8192; where one wave of the word kernel holds the rows 1.16x slower (1024 x 4096), and beyond one wave of
     * either 1.08x (4096 x 4096; kernels/probes/layernorm_fwd_rows_probe.cu).
     */
    boolean layerNormForwardPaired(KernelType t, long rows, int block) {
        if (block % 64 != 0) {
            return false;
        }
        long resident = (long) smCount * occupancy.blocksPerSm(LayerKernelNames.layerNormForwardWords(t), block);
        long residentPaired = (long) smCount
                * occupancy.blocksPerSm(LayerKernelNames.layerNormForwardWordsPaired(t), block / 2);
        return rows > resident && rows <= residentPaired;
    }

    private static boolean rowsAligned(TensorView v) {
        return v.address() % 16 == 0 && (v.ld() * v.dtype().bytes()) % 16 == 0;
    }

    /**
     * Rows of each part of {@link #biasGrad}'s partial sums: {@link #rowsPerPart} doubled, up to
     * {@link #MAX_BIAS_GRAD_ROWS_PER_PART}, while the (part, tile of {@code BLOCK} column groups) items still number
     * {@link #BIAS_GRAD_ITEMS_PER_SM} per SM. Never fewer rows than {@link #rowsPerPart}, so never more parts than
     * {@link #biasGradWorkspaceRows}.
     */
    long biasGradRowsPerPart(long rows, long cols, DType t) {
        long tiles = ceilDiv(ceilDiv(cols, 16 / t.bytes()), BLOCK);
        long rpp = rowsPerPart(rows);
        while (rpp * 2 <= MAX_BIAS_GRAD_ROWS_PER_PART
               && ceilDiv(rows, rpp * 2) * tiles >= (long) BIAS_GRAD_ITEMS_PER_SM * smCount) {
            rpp *= 2;
        }
        // Items just beyond one wave of resident blocks leave a second wave mostly empty (70B's fc1 bias at tp 2:
        // 896 items for 792 places, 1.12x PyTorch's time on an H200): parts twice as long make it one wave.
        long wave = (long) COL_SUMS_PARTIAL_BLOCKS_PER_SM * smCount;
        long items = ceilDiv(rows, rpp) * tiles;
        if (items > wave && items < 2 * wave && ceilDiv(rows, rpp * 2) * tiles <= wave) {
            rpp *= 2;
        }
        return rpp;
    }

    /**
     * LayerNorm forward: {@code y = (x - mean) * rstd * g + beta} per row, g = gamma (+ 1 with
     * {@code zeroCenteredGamma}); saves the fp32 {@code mean} and {@code rstd} (1 x rows each) when given.
     *
     * @param x     rows x cols
     * @param gamma 1 x cols, x's dtype
     * @param beta  1 x cols, x's dtype
     * @param y     rows x cols, x's dtype; may be x itself
     * @param mean  1 x rows fp32, or null
     * @param rstd  1 x rows fp32, or null
     */
    public void layerNormForward(TensorView x, TensorView gamma, TensorView beta, float eps, boolean zeroCenteredGamma,
                                 TensorView y, TensorView mean, TensorView rstd, CudaStream stream) {
        KernelType t = type(x, "x");
        requireVector(gamma, x.cols(), x.dtype(), "gamma");
        requireVector(beta, x.cols(), x.dtype(), "beta");
        requireLike(y, x, "y");
        if (!(eps >= 0) || Float.isInfinite(eps)) {
            throw new IllegalArgumentException("eps must be finite and >= 0, got " + eps);
        }
        if (mean != null) {
            requireVector(mean, x.rows(), DType.FP32, "mean");
        }
        if (rstd != null) {
            requireVector(rstd, x.rows(), DType.FP32, "rstd");
        }
        Overlaps o = new Overlaps().input(x, "x").input(gamma, "gamma").input(beta, "beta")
                .output(y, "y", x).output(mean, "mean").output(rstd, "rstd");
        o.check();
        // One block per row; rows up to LAYER_NORM_FORWARD_GROUPS * MAX_BLOCK groups are read once into registers,
        // by the kernel without the scalar path where every row is whole aligned 16-byte words (the same bits).
        String kernel = LayerKernelNames.layerNormForward(t);
        int block = layerNormBlock(x.cols(), x.dtype(), LAYER_NORM_FORWARD_GROUPS);
        if (layerNormForwardWords(x, gamma, beta, y)) {
            kernel = LayerKernelNames.layerNormForwardWords(t);
            if (layerNormForwardPaired(t, x.rows(), block)) {
                kernel = LayerKernelNames.layerNormForwardWordsPaired(t);
                block /= 2;
            }
        }
        launch(kernel, layerNormGrid(x.rows()), block, stream,
                x.rows(), x.cols(), x.address(), x.ld(), gamma.address(), beta.address(), eps,
                zeroCenteredGamma ? 1 : 0, y.address(), y.ld(), address(mean), address(rstd));
    }

    /**
     * LayerNorm backward from the forward's mean and rstd: dx, and dgamma/dbeta as deterministic column sums
     * (fp32 partial sums in {@code workspace}, then one ordered pass), written or, with {@code accumulateParams},
     * added to their old values. dx may be dy or x itself (the partial sums read both before dx is written).
     *
     * @param dgamma    1 x cols, fp32 or x's dtype
     * @param dbeta     1 x cols, fp32 or x's dtype
     * @param workspace fp32, at least {@link #layerNormBackwardWorkspaceRows}(rows) x cols
     */
    public void layerNormBackward(TensorView dy, TensorView x, TensorView mean, TensorView rstd, TensorView gamma,
                                  boolean zeroCenteredGamma, TensorView dx, TensorView dgamma, TensorView dbeta,
                                  boolean accumulateParams, TensorView workspace, CudaStream stream) {
        KernelType t = type(x, "x");
        requireLike(dy, x, "dy");
        requireVector(mean, x.rows(), DType.FP32, "mean");
        requireVector(rstd, x.rows(), DType.FP32, "rstd");
        requireVector(gamma, x.cols(), x.dtype(), "gamma");
        requireLike(dx, x, "dx");
        KernelType dgammaType = paramGradType(dgamma, x, "dgamma");
        KernelType dbetaType = paramGradType(dbeta, x, "dbeta");
        long parts = layerNormParts(x.rows());
        requireWorkspace(workspace, 2 * parts, x.cols(), "layerNormBackward");
        new Overlaps().input(dy, "dy").input(x, "x").input(mean, "mean").input(rstd, "rstd").input(gamma, "gamma")
                .output(dx, "dx", dy, x).output(dgamma, "dgamma").output(dbeta, "dbeta").output(workspace, "workspace")
                .check();
        TensorView dgammaPart = workspace.rows(0, parts);
        TensorView dbetaPart = workspace.rows(parts, parts);
        long rowsPerPart = layerNormRowsPerPart(x.rows());
        long usedParts = parts;
        int block = layerNormBlock(x.cols(), x.dtype(), LAYER_NORM_BACKWARD_GROUPS);
        long resident = (long) smCount * Math.max(1, MAX_BLOCK / block);
        boolean fused = layerNormBackwardFused(x.cols(), x.dtype());
        if (fused) {
            // Parts of at least rows / resident rows: where one block fills an SM (8192 columns), 256 parts left
            // the staged kernel's blocks two parts each, one of them ragged; a part per block took 8-9% less time
            // on an H200. Both fused kernels take the same parts, so they add the same sums in the same order.
            rowsPerPart = Math.max(rowsPerPart, ceilDiv(x.rows(), resident));
            usedParts = ceilDiv(x.rows(), rowsPerPart);
        }
        if (fused && staged(x.cols(), x.dtype(), dy, x, dx, gamma, workspace)) {
            // One pass over dy and x, rows staged in shared memory a few rows ahead: as many blocks as stay
            // resident (at about 120 registers a thread an SM holds 512 threads), each walking its parts in turn.
            launcher.launch(LayerKernelNames.layerNormBackwardStaged(t), (int) Math.min(usedParts, resident), block,
                    layerNormBackwardSharedBytes(x.cols(), x.dtype()), stream,
                    x.rows(), x.cols(), dy.address(), dy.ld(), x.address(), x.ld(), mean.address(), rstd.address(),
                    gamma.address(), zeroCenteredGamma ? 1 : 0, dx.address(), dx.ld(), rowsPerPart,
                    dgammaPart.address(), dbetaPart.address(), workspace.ld());
        } else if (fused) {
            // One pass over dy and x: dx and the partial sums, a block per part.
            launch(LayerKernelNames.layerNormBackward(t), (int) Math.min(usedParts, MAX_ROW_BLOCKS), block, stream,
                    x.rows(), x.cols(), dy.address(), dy.ld(), x.address(), x.ld(), mean.address(), rstd.address(),
                    gamma.address(), zeroCenteredGamma ? 1 : 0, dx.address(), dx.ld(), rowsPerPart,
                    dgammaPart.address(), dbetaPart.address(), workspace.ld());
        } else {
            // Rows too long for registers: the partial sums first, as dx may overwrite dy or x.
            launch(LayerKernelNames.layerNormBackwardParamsPartial(t), partialGrid(parts, x.cols()), BLOCK,
                    stream, x.rows(), x.cols(), dy.address(), dy.ld(), x.address(), x.ld(), mean.address(),
                    rstd.address(), rowsPerPart, dgammaPart.address(), dbetaPart.address(), workspace.ld());
            launch(LayerKernelNames.layerNormBackwardDx(t), layerNormGrid(x.rows()), BLOCK, stream,
                    x.rows(), x.cols(), dy.address(), dy.ld(), x.address(), x.ld(), mean.address(), rstd.address(),
                    gamma.address(), zeroCenteredGamma ? 1 : 0, dx.address(), dx.ld());
        }
        if (dgammaType == dbetaType) {
            // Both finishing sums in one launch: they are mostly latency, and two launches paid it twice.
            launch(LayerKernelNames.colSums2F32To(dgammaType), (int) Math.min(2 * ceilDiv(x.cols(), 32), maxBlocks),
                    MAX_BLOCK, stream, usedParts, x.cols(), dgammaPart.address(), dbetaPart.address(),
                    workspace.ld(), dgamma.address(), dbeta.address(), accumulateParams ? 1 : 0);
        } else {
            colSums(dgammaType, usedParts, dgammaPart, dgamma, accumulateParams, stream);
            colSums(dbetaType, usedParts, dbetaPart, dbeta, accumulateParams, stream);
        }
    }

    /**
     * Bias gradient: {@code dbias[c] = sum over rows of dy[r][c]} (or added to dbias with {@code accumulate}),
     * deterministic: fp32 partial sums in {@code workspace}, then one ordered pass.
     *
     * @param dbias     1 x cols, fp32 or dy's dtype
     * @param workspace fp32, at least {@link #biasGradWorkspaceRows}(rows) x cols
     */
    public void biasGrad(TensorView dy, TensorView dbias, boolean accumulate, TensorView workspace, CudaStream stream) {
        KernelType t = type(dy, "dy");
        KernelType out = paramGradType(dbias, dy, "dbias");
        long rowsPerPart = biasGradRowsPerPart(dy.rows(), dy.cols(), dy.dtype());
        long parts = ceilDiv(dy.rows(), rowsPerPart);
        requireWorkspace(workspace, parts, dy.cols(), "biasGrad");
        new Overlaps().input(dy, "dy").output(dbias, "dbias").output(workspace, "workspace").check();
        launch(LayerKernelNames.colSumsPartial(t), groupPartialGrid(parts, dy.cols(), dy.dtype()), BLOCK,
                stream,
                dy.rows(), dy.cols(), dy.address(), dy.ld(), rowsPerPart, workspace.address(),
                workspace.ld());
        colSums(out, parts, workspace.rows(0, parts), dbias, accumulate, stream);
    }

    /** {@code y = gelu(x)} (tanh approximation); y may be x itself. */
    public void gelu(TensorView x, TensorView y, CudaStream stream) {
        KernelType t = type(x, "x");
        requireLike(y, x, "y");
        new Overlaps().input(x, "x").output(y, "y", x).check();
        if (dense(x, y)) {
            launch(LayerKernelNames.geluForwardDense(t), denseGrid(x), DENSE_BLOCK, stream,
                    x.elements(), x.address(), y.address());
            return;
        }
        launch(LayerKernelNames.geluForward(t), elementGrid(x.elements()), BLOCK, stream,
                x.rows(), x.cols(), x.address(), x.ld(), y.address(), y.ld());
    }

    /** {@code dx = dy * gelu'(x)}, x the forward's input; dx may be dy or x itself. */
    public void geluBackward(TensorView dy, TensorView x, TensorView dx, CudaStream stream) {
        KernelType t = type(x, "x");
        requireLike(dy, x, "dy");
        requireLike(dx, x, "dx");
        new Overlaps().input(dy, "dy").input(x, "x").output(dx, "dx", dy, x).check();
        if (dense(dy, x, dx)) {
            launch(LayerKernelNames.geluBackwardDense(t), denseGrid(x), DENSE_BLOCK, stream,
                    x.elements(), dy.address(), x.address(), dx.address());
            return;
        }
        launch(LayerKernelNames.geluBackward(t), elementGrid(x.elements()), BLOCK, stream,
                x.rows(), x.cols(), dy.address(), dy.ld(), x.address(), x.ld(), dx.address(), dx.ld());
    }

    /**
     * {@code y = gelu(z)}, {@code z = x + bias} (bias 1 x cols, broadcast over rows) rounded to x's dtype: the bits
     * of a bias add then {@link #gelu}, without rewriting x. With {@code pre} non-null it also stores z for the
     * backward ({@link #geluBackward} on it; {@link #biasGeluBackward} recomputes z from x instead). y or pre may be
     * x itself (not both).
     */
    public void biasGelu(TensorView x, TensorView bias, TensorView y, TensorView pre, CudaStream stream) {
        KernelType t = type(x, "x");
        requireVector(bias, x.cols(), x.dtype(), "bias");
        requireLike(y, x, "y");
        if (pre != null) {
            requireLike(pre, x, "pre");
        }
        new Overlaps().input(x, "x").input(bias, "bias").output(y, "y", x).output(pre, "pre", x).check();
        if (pre == null && biasGeluCols(x, bias, y)) {
            long words = x.rows() * (x.cols() / (16 / x.dtype().bytes()));
            launch(LayerKernelNames.biasGeluForwardCols(t), (int) Math.max(1, Math.min(ceilDiv(words, COLS_BLOCK),
                    (long) COLS_BLOCKS_PER_SM * smCount)), COLS_BLOCK, stream,
                    x.rows(), x.cols(), x.address(), x.ld(), bias.address(), y.address(), y.ld());
            return;
        }
        launch(LayerKernelNames.biasGeluForward(t), elementGrid(x.elements()), BLOCK, stream,
                x.rows(), x.cols(), x.address(), x.ld(), bias.address(), y.address(), y.ld(), address(pre),
                pre == null ? 0L : pre.ld());
    }

    /**
     * Whether the biased GELU forward runs {@code ubuf_bias_gelu_fwd_cols}: whole 16-byte groups in every row of x
     * and y, a 16-byte aligned bias, and each view's rows below 2^31 16-byte words (its 32-bit word offsets).
     */
    private static boolean biasGeluCols(TensorView x, TensorView bias, TensorView y) {
        long group = 16 / x.dtype().bytes();
        return x.cols() % group == 0 && rowsAligned(x) && rowsAligned(y) && bias.address() % 16 == 0
                && x.rows() * (x.ld() / group) < 1L << 31 && y.rows() * (y.ld() / group) < 1L << 31;
    }

    /** SwiGLU: x is rows x 2F, y rows x F: {@code y = silu(x[:, :F]) * x[:, F:]}. */
    public void swiglu(TensorView x, TensorView y, CudaStream stream) {
        KernelType t = type(x, "x");
        long f = halfCols(x);
        y.requireShape(x.rows(), f, "y (rows x F for x of rows x 2F)");
        y.requireDType(x.dtype(), "y");
        new Overlaps().input(x, "x").output(y, "y").check();
        if (swigluWords(x, null, y, f)) {
            launchSwigluWords(t, x, null, y, f, stream);
            return;
        }
        launch(LayerKernelNames.swigluForward(t), elementGrid(x.rows() * f), BLOCK, stream,
                x.rows(), f, x.address(), x.ld(), y.address(), y.ld());
    }

    /**
     * Whether the SwiGLU forward runs {@code ubuf_swiglu_fwd_words}: whole 16-byte groups in every row of x's halves,
     * y and the bias, and fewer than 2^31 of them. {@code -Dubuf.swigluWords=false} keeps the other kernels, for A/B
     * timing in one process.
     */
    private static boolean swigluWords(TensorView x, TensorView bias, TensorView y, long f) {
        long group = 16 / x.dtype().bytes();
        return SWIGLU_WORDS && f % group == 0 && rowsAligned(x) && rowsAligned(y)
                && (bias == null || bias.address() % 16 == 0) && x.rows() * (f / group) < 1L << 31;
    }

    // A thread per 16-byte word of y, one-shot grid (as the dense GELU kernels).
    private void launchSwigluWords(KernelType t, TensorView x, TensorView bias, TensorView y, long f,
                                   CudaStream stream) {
        long words = x.rows() * (f / (16 / x.dtype().bytes()));
        launch(LayerKernelNames.swigluForwardWords(t), (int) Math.max(1, ceilDiv(words, DENSE_BLOCK)), DENSE_BLOCK,
                stream, x.rows(), f, x.address(), x.ld(), address(bias), y.address(), y.ld());
    }

    /**
     * SwiGLU backward: dy is rows x F, x the forward's rows x 2F input, dx rows x 2F ({@code dy * b * silu'(a)} in
     * the first half, {@code dy * silu(a)} in the second); dx may be x itself.
     */
    public void swigluBackward(TensorView dy, TensorView x, TensorView dx, CudaStream stream) {
        KernelType t = type(x, "x");
        long f = halfCols(x);
        dy.requireShape(x.rows(), f, "dy (rows x F for x of rows x 2F)");
        dy.requireDType(x.dtype(), "dy");
        requireLike(dx, x, "dx");
        new Overlaps().input(dy, "dy").input(x, "x").output(dx, "dx", x).check();
        launch(LayerKernelNames.swigluBackward(t), elementGrid(x.rows() * f), BLOCK, stream,
                x.rows(), f, dy.address(), dy.ld(), x.address(), x.ld(), dx.address(), dx.ld());
    }

    /**
     * SwiGLU of fc1's output with its bias: {@code y = silu(za) * zb}, {@code z = x + bias} (bias 1 x 2F, broadcast
     * over rows) rounded to x's dtype: the bits of a bias add then {@link #swiglu}, without rewriting x.
     */
    public void biasSwiglu(TensorView x, TensorView bias, TensorView y, CudaStream stream) {
        KernelType t = type(x, "x");
        long f = halfCols(x);
        requireVector(bias, x.cols(), x.dtype(), "bias");
        y.requireShape(x.rows(), f, "y (rows x F for x of rows x 2F)");
        y.requireDType(x.dtype(), "y");
        new Overlaps().input(x, "x").input(bias, "bias").output(y, "y").check();
        if (swigluWords(x, bias, y, f)) {
            launchSwigluWords(t, x, bias, y, f, stream);
            return;
        }
        long parts = ceilDiv(x.rows(), BIAS_ACTIVATION_FORWARD_ROWS);
        launch(LayerKernelNames.biasSwigluForward(t), groupPartialGrid(parts, f, x.dtype()), BLOCK, stream,
                x.rows(), f, x.address(), x.ld(), bias.address(), y.address(), y.ld(),
                (long) BIAS_ACTIVATION_FORWARD_ROWS);
    }

    /**
     * The backward of {@link #biasGelu} with the bias gradient, in one pass over x: {@code dx = dy * gelu'(z)}
     * at {@code z = x + bias} rounded as the forward rounded it, and {@code dbias} (added to, with
     * {@code accumulate}) the column sums of dx as stored (fp32 partial sums of parts of {@link #rowsPerPart} rows or
     * longer, in a fixed order); dx has the bits of {@link #geluBackward} on z. dx may be x itself.
     *
     * @param workspace fp32, at least {@link #biasGradWorkspaceRows}(rows) x cols
     */
    public void biasGeluBackward(TensorView dy, TensorView x, TensorView bias, TensorView dx, TensorView dbias,
                                 boolean accumulate, TensorView workspace, CudaStream stream) {
        KernelType t = type(x, "x");
        requireLike(dy, x, "dy");
        biasActivationBackward(LayerKernelNames.biasGeluBackwardPartial(t), BIAS_GELU_BACKWARD_BLOCKS_PER_SM,
                x.cols(), dy, x, bias, dx, dbias, accumulate, workspace, stream);
    }

    /**
     * The backward of {@link #biasSwiglu} with the bias gradient, in one pass over x: dx (rows x 2F) as
     * {@link #swigluBackward} gives it at {@code z = x + bias} rounded as the forward rounded it, and
     * {@code dbias} (1 x 2F; added to, with {@code accumulate}) the column sums of dx as stored (fp32 partial sums
     * of parts of {@link #rowsPerPart} rows or longer, in a fixed order); dx has the bits of {@link #swigluBackward}
     * on z. dx may be x itself.
     *
     * @param workspace fp32, at least {@link #biasGradWorkspaceRows}(rows) x 2F
     */
    public void biasSwigluBackward(TensorView dy, TensorView x, TensorView bias, TensorView dx, TensorView dbias,
                                   boolean accumulate, TensorView workspace, CudaStream stream) {
        KernelType t = type(x, "x");
        long f = halfCols(x);
        Objects.requireNonNull(dy, "dy");
        dy.requireShape(x.rows(), f, "dy (rows x F for x of rows x 2F)");
        dy.requireDType(x.dtype(), "dy");
        biasActivationBackward(LayerKernelNames.biasSwigluBackwardPartial(t), BIAS_SWIGLU_BACKWARD_BLOCKS_PER_SM, f,
                dy, x, bias, dx, dbias, accumulate, workspace, stream);
    }

    // dx and the partial column sums in one kernel over (part, tile of BLOCK / BIAS_ACTIVATION_LANES column groups
    // of a half) items, then the ordered finish; {@code cols} is the width of one half (dy's).
    private void biasActivationBackward(String kernel, int blocksPerSm, long cols, TensorView dy, TensorView x,
                                        TensorView bias, TensorView dx, TensorView dbias, boolean accumulate,
                                        TensorView workspace, CudaStream stream) {
        requireVector(bias, x.cols(), x.dtype(), "bias");
        requireLike(dx, x, "dx");
        KernelType out = paramGradType(dbias, x, "dbias");
        long rowsPerPart = biasActivationRowsPerPart(x.rows(), cols, x.dtype(), blocksPerSm);
        long parts = ceilDiv(x.rows(), rowsPerPart);
        requireWorkspace(workspace, parts, x.cols(), "biasGrad");
        new Overlaps().input(dy, "dy").input(x, "x").input(bias, "bias").output(dx, "dx", x)
                .output(dbias, "dbias").output(workspace, "workspace").check();
        long tiles = biasActivationTiles(cols, x.dtype());
        launch(kernel, (int) Math.min(parts * tiles, maxBlocks), BLOCK, stream,
                x.rows(), cols, dy.address(), dy.ld(), x.address(), x.ld(), bias.address(), dx.address(), dx.ld(),
                rowsPerPart, workspace.address(), workspace.ld());
        colSums(out, parts, workspace.rows(0, parts), dbias, accumulate, stream);
    }

    /** The (part, tile) items' tiles of the fused activation backwards over {@code cols} columns of each half. */
    private static long biasActivationTiles(long cols, DType t) {
        return ceilDiv(ceilDiv(cols, 16 / t.bytes()), BLOCK / BIAS_ACTIVATION_LANES);
    }

    /**
     * Rows of each part of the fused activation backwards' bias-gradient partial sums ({@code cols} columns a half),
     * for a kernel of {@code blocksPerSm} resident blocks an SM: the longest parts, up to
     * {@link #MAX_BIAS_ACTIVATION_ROWS_PER_PART} rows, whose (part, tile) items fill k whole waves of resident blocks
     * for the least such k; never shorter than {@link #rowsPerPart}, so never more parts than
     * {@link #biasGradWorkspaceRows}. Long parts write and re-read fewer fp32 partial rows and a full last wave wastes
     * no SMs: on an H200 at 4096, 8192 and 16384 rows and halves of 3584, 7168 and 14336 columns the SwiGLU backward
     * took 0.87-0.97x the time of powers of two up to 128 rows kept while six items an SM remained, the GELU backward
     * 0.96-1.02x (kernels/probes/bias_act_bwd_parts_probe.cu).
     */
    long biasActivationRowsPerPart(long rows, long cols, DType t, int blocksPerSm) {
        long tiles = biasActivationTiles(cols, t);
        long resident = (long) blocksPerSm * smCount;
        long partsWanted = ceilDiv(rows, MAX_BIAS_ACTIVATION_ROWS_PER_PART);
        long waves = Math.max(ceilDiv(partsWanted * tiles, resident), ceilDiv(tiles, resident));
        long parts = waves * resident / tiles;
        return Math.max(ceilDiv(rows, parts), rowsPerPart(rows));
    }

    /**
     * The mean-squared-error loss's gradient and partial sums: {@code dy = scale * (y - target)} (the caller passes
     * {@code scale = 2 / numel} of the whole loss, over every rank), and {@code rowSquares[r] = sum over columns of
     * (y - target)^2} in fp32 (the caller adds the rows, and the ranks, up). dy may be y itself.
     *
     * @param rowSquares 1 x rows fp32
     */
    public void mseGrad(TensorView y, TensorView target, float scale, TensorView dy, TensorView rowSquares,
                        CudaStream stream) {
        KernelType t = type(y, "y");
        requireLike(target, y, "target");
        requireLike(dy, y, "dy");
        requireVector(rowSquares, y.rows(), DType.FP32, "rowSquares");
        if (!Float.isFinite(scale)) {
            throw new IllegalArgumentException("scale must be finite, got " + scale);
        }
        new Overlaps().input(y, "y").input(target, "target").output(dy, "dy", y).output(rowSquares, "rowSquares")
                .check();
        launch(LayerKernelNames.mseGrad(t), rowGrid(y.rows()), BLOCK, stream,
                y.rows(), y.cols(), y.address(), y.ld(), target.address(), target.ld(), scale, dy.address(), dy.ld(),
                rowSquares.address());
    }

    /** One SGD step: {@code w -= lr * grad}, grad fp32 of w's shape, each result rounded once to w's dtype. */
    public void sgdStep(TensorView w, TensorView grad, float lr, CudaStream stream) {
        sgdStep(w, grad, lr, false, stream);
    }

    /** {@link #sgdStep(TensorView, TensorView, float, CudaStream)}; with {@code zeroGrad}, grad = 0 afterwards. */
    public void sgdStep(TensorView w, TensorView grad, float lr, boolean zeroGrad, CudaStream stream) {
        KernelType t = type(w, "w");
        Objects.requireNonNull(grad, "grad");
        grad.requireShape(w.rows(), w.cols(), "grad");
        grad.requireDType(DType.FP32, "grad");
        if (!Float.isFinite(lr)) {
            throw new IllegalArgumentException("lr must be finite, got " + lr);
        }
        new Overlaps().input(grad, "grad").output(w, "w").check();
        launch(LayerKernelNames.sgd(t), elementGrid(w.elements()), BLOCK, stream,
                w.rows(), w.cols(), w.address(), w.ld(), grad.address(), grad.ld(), lr, zeroGrad ? 1 : 0);
    }

    private void launch(String name, int grid, int block, CudaStream stream, Object... args) {
        launcher.launch(name, grid, block, 0, stream, args);
    }

    private void colSums(KernelType out, long parts, TensorView partials, TensorView dst, boolean accumulate,
                         CudaStream stream) {
        // Sixteen warps a tile of 32 columns: more of the parts' loads in flight than eight.
        launch(LayerKernelNames.colSumsF32To(out), columnGrid(dst.cols()), MAX_BLOCK, stream,
                parts, dst.cols(), partials.address(), partials.ld(), dst.address(), accumulate ? 1 : 0);
    }

    // One block per row, grid-stride: a full GPU's worth of blocks, or one per row when fewer.
    private int rowGrid(long rows) {
        return (int) Math.min(rows, maxBlocks);
    }

    // One block per row: the block scheduler starts a row as soon as a block's slot frees.
    private static int layerNormGrid(long rows) {
        return (int) Math.min(rows, MAX_ROW_BLOCKS);
    }

    // One (part, tile of BLOCK column groups of 16 bytes) item per block, grid-stride.
    private int groupPartialGrid(long parts, long cols, DType t) {
        return (int) Math.min(parts * ceilDiv(ceilDiv(cols, 16 / t.bytes()), BLOCK), maxBlocks);
    }

    // One (part, tile of BLOCK columns) item per block, grid-stride.
    private int partialGrid(long parts, long cols) {
        return (int) Math.min(parts * ceilDiv(cols, BLOCK), maxBlocks);
    }

    // A block per 32 columns, its warps splitting the parts.
    private int columnGrid(long cols) {
        return (int) Math.min(ceilDiv(cols, 32), maxBlocks);
    }

    // Views whose elements form one run each: the dense kernels walk them as such.
    private static boolean dense(TensorView... views) {
        for (TensorView v : views) {
            if (!v.isDense()) {
                return false;
            }
        }
        return true;
    }

    // The dense kernels' one-shot grid: a thread per two 16-byte words, blocks of DENSE_BLOCK (kernels/probes/
    // gelu_probe.cu: GELU at copy speed on an H100 with one word a thread, 7-18% behind it on four or eight
    // grid-stride blocks an SM; on an H200 two words a thread, both loaded first, took GELU from 82% to 91% of copy).
    private static int denseGrid(TensorView v) {
        long words = ceilDiv(v.elements(), 16L / v.dtype().bytes());
        return (int) Math.max(1, Math.min(ceilDiv(words, 2L * DENSE_BLOCK), Integer.MAX_VALUE));
    }

    // About 8 elements per thread, grid-stride.
    private int elementGrid(long elements) {
        return (int) Math.max(1, Math.min(ceilDiv(elements, BLOCK * 8L), maxBlocks));
    }

    private static KernelType type(TensorView t, String what) {
        Objects.requireNonNull(t, what);
        return switch (t.dtype()) {
            case FP32 -> KernelType.F32;
            case FP16 -> KernelType.F16;
            case BF16 -> KernelType.BF16;
            default -> throw new IllegalArgumentException(what + " is " + t.dtype().shortName()
                    + ": the layer kernels take fp32, fp16 or bf16");
        };
    }

    private static void requireLike(TensorView t, TensorView like, String what) {
        Objects.requireNonNull(t, what);
        t.requireShape(like.rows(), like.cols(), what);
        t.requireDType(like.dtype(), what);
    }

    // Vectors (gamma, beta, bias, mean, rstd) are 1 x n views: n consecutive elements.
    private static void requireVector(TensorView v, long n, DType dtype, String what) {
        Objects.requireNonNull(v, what);
        if (v.rows() != 1 || v.cols() != n) {
            throw new IllegalArgumentException(what + " must be a 1x" + n + " vector, got " + v.rows() + "x" + v.cols());
        }
        v.requireDType(dtype, what);
    }

    private static KernelType paramGradType(TensorView g, TensorView x, String what) {
        Objects.requireNonNull(g, what);
        if (g.rows() != 1 || g.cols() != x.cols()) {
            throw new IllegalArgumentException(what + " must be a 1x" + x.cols() + " vector, got " + g.rows() + "x"
                    + g.cols());
        }
        if (g.dtype() != DType.FP32 && g.dtype() != x.dtype()) {
            throw new IllegalArgumentException(what + " must be fp32 or " + x.dtype().shortName() + ", got "
                    + g.dtype().shortName());
        }
        return type(g, what);
    }

    private static void requireWorkspace(TensorView w, long rows, long cols, String what) {
        Objects.requireNonNull(w, "workspace");
        w.requireDType(DType.FP32, what + " workspace");
        if (w.rows() < rows || w.cols() != cols) {
            throw new IllegalArgumentException(what + " workspace must be at least " + rows + "x" + cols
                    + " fp32 (see " + (what.equals("biasGrad") ? "biasGradWorkspaceRows" : "layerNormBackwardWorkspaceRows")
                    + "), got " + w.rows() + "x" + w.cols());
        }
    }

    private static long halfCols(TensorView x) {
        if (x.cols() % 2 != 0) {
            throw new IllegalArgumentException("x must have an even number of columns (2F: the activated half, then the"
                    + " gate's), got " + x.cols());
        }
        return x.cols() / 2;
    }

    private static long address(TensorView t) {
        return t == null ? 0L : t.address();
    }

    private static void requirePositive(long n, String what) {
        if (n < 1) {
            throw new IllegalArgumentException(what + " must be >= 1, got " + n);
        }
    }

    private static long ceilDiv(long a, long b) {
        return (a + b - 1) / b;
    }
}

package dev.ubuf.atomic;

import dev.ubuf.tensor.DType;

/**
 * What {@code cuTensorMapEncodeTiled} is given for one operand: a 2-D tiled map, innermost dimension first, with the
 * 128-byte swizzle the wgmma descriptors assume, out-of-bounds elements read as zero.
 *
 * @param dataType    CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 (9) or _FLOAT16 (6)
 * @param address     global address of element (0, 0); 16-byte aligned
 * @param dims        {inner, outer} extents in elements
 * @param outerStride bytes between consecutive outer indices (a row); a multiple of 16
 * @param box         {inner, outer} box extents in elements; inner × element size = 128 bytes (the swizzle span)
 */
public record TensorMapSpec(int dataType, long address, long[] dims, long outerStride, int[] box) {
    static final int CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6;
    static final int CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9;
    static final int CU_TENSOR_MAP_INTERLEAVE_NONE = 0;
    static final int CU_TENSOR_MAP_SWIZZLE_128B = 3;
    static final int CU_TENSOR_MAP_L2_PROMOTION_L2_256B = 3;
    static final int CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0; // out-of-bounds elements are zeros

    /** Everything an encoded map depends on, with value equality (the record's arrays compare by reference). */
    record Key(int dataType, long address, long inner, long outer, long outerStride, int boxInner, int boxOuter) {
    }

    Key key() {
        return new Key(dataType, address, dims[0], dims[1], outerStride, box[0], box[1]);
    }

    /** A [M, K] row-major, ld elements a row: boxes of 64 K × 128 rows. */
    static TensorMapSpec forA(DType dtype, long address, long m, long k, long ld) {
        return forA(dtype, address, m, k, ld, TileSchedule.TILE_M);
    }

    /** A in boxes of 64 K × {@code tileM} rows (a tile's rows: 128, or 64 for the ping-pong kernels). */
    static TensorMapSpec forA(DType dtype, long address, long m, long k, long ld, int tileM) {
        return new TensorMapSpec(dataType(dtype), address, new long[]{k, m}, ld * dtype.bytes(),
                new int[]{TileSchedule.TILE_K, tileM});
    }

    /** B for the default 128 × 256 tile. */
    static TensorMapSpec forB(DType dtype, BLayout layout, long address, long k, long n, long ld) {
        return forB(dtype, layout, address, k, n, ld, TileConfig.N256);
    }

    /**
     * B: stored [N, K] (NK) in boxes of 64 K × tileN rows of N; stored [K, N] (KN) in boxes of 64 N × 64 K, tileN / 64
     * per tile (an N-major 128-byte swizzle atom is 64 elements wide).
     */
    static TensorMapSpec forB(DType dtype, BLayout layout, long address, long k, long n, long ld, TileConfig config) {
        return forB(dtype, layout, address, k, n, ld, config, 1);
    }

    /**
     * B for kernels whose {@code clusterSize} CTAs each load a share of a tile's B (multicast to all): NK boxes of
     * tileN / clusterSize rows of N; KN keeps its 64 × 64 boxes (the CTAs take whole boxes in turn).
     */
    static TensorMapSpec forB(DType dtype, BLayout layout, long address, long k, long n, long ld, TileConfig config,
                              int clusterSize) {
        if (clusterSize < 1 || config.tileN() % (8 * clusterSize) != 0) {
            throw new IllegalArgumentException("a " + config + " tile's B does not split into " + clusterSize
                    + " shares of whole 8-row swizzle atoms");
        }
        if (!config.supports(layout)) {
            throw new IllegalArgumentException("no " + config + " tile kernels for B layout " + layout);
        }
        return switch (layout) {
            case NK -> new TensorMapSpec(dataType(dtype), address, new long[]{k, n}, ld * dtype.bytes(),
                    new int[]{TileSchedule.TILE_K, config.tileN() / clusterSize});
            case KN -> new TensorMapSpec(dataType(dtype), address, new long[]{n, k}, ld * dtype.bytes(),
                    new int[]{64, TileSchedule.TILE_K});
        };
    }

    static int dataType(DType dtype) {
        return switch (dtype) {
            case BF16 -> CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
            case FP16 -> CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
            default -> throw new IllegalArgumentException("the atomic GEMM reads bf16 or fp16, not " + dtype);
        };
    }
}

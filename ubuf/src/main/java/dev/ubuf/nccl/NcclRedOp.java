package dev.ubuf.nccl;

/**
 * NCCL's built-in reduction operators ({@code ncclRedOp_t}). Values from NVIDIA/nccl src/nccl.h.in at tag
 * v2.28.3-1: ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4 (AVG needs NCCL 2.10 or newer).
 */
public enum NcclRedOp {
    SUM(0),
    PROD(1),
    MAX(2),
    MIN(3),
    AVG(4);

    private final int code;

    NcclRedOp(int code) {
        this.code = code;
    }

    /** The {@code ncclRedOp_t} value passed to NCCL. */
    int code() {
        return code;
    }
}

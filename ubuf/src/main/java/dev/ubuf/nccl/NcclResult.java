package dev.ubuf.nccl;

import java.util.Optional;

/**
 * NCCL's {@code ncclResult_t}. Values from NVIDIA/nccl src/nccl.h.in at tag v2.28.3-1 (commit f1308997); TIMEOUT is
 * not in 2.28.3 (there 8 is {@code ncclNumResults}, never returned) and was added as {@code ncclTimeout = 8} in 2.30.
 */
public enum NcclResult {
    SUCCESS(0, "ncclSuccess"),
    UNHANDLED_CUDA_ERROR(1, "ncclUnhandledCudaError"),
    SYSTEM_ERROR(2, "ncclSystemError"),
    INTERNAL_ERROR(3, "ncclInternalError"),
    INVALID_ARGUMENT(4, "ncclInvalidArgument"),
    INVALID_USAGE(5, "ncclInvalidUsage"),
    REMOTE_ERROR(6, "ncclRemoteError"),
    IN_PROGRESS(7, "ncclInProgress"),
    TIMEOUT(8, "ncclTimeout");

    private final int code;
    private final String cName;

    NcclResult(int code, String cName) {
        this.code = code;
        this.cName = cName;
    }

    /** The {@code ncclResult_t} value. */
    public int code() {
        return code;
    }

    /** The enumerator's name in nccl.h, e.g. {@code ncclInvalidArgument}. */
    public String cName() {
        return cName;
    }

    /** The result with this code, or empty for a code this binding does not know (a newer NCCL). */
    public static Optional<NcclResult> fromCode(int code) {
        for (NcclResult r : values()) {
            if (r.code == code) {
                return Optional.of(r);
            }
        }
        return Optional.empty();
    }
}

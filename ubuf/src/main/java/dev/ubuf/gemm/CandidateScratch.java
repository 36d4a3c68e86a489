package dev.ubuf.gemm;

/**
 * Where a {@link CandidateBench} puts a candidate's workspace and C inside one scratch allocation: the workspace
 * 256-byte aligned at the start, C after it at the caller's C address modulo 256 (so the candidates see C's real
 * alignment, which decides the kernels cuBLASLt may run). Every bench lays its scratch out this way.
 *
 * @param workspace the workspace's address, 0 when none is needed
 * @param c         the scratch C's address
 */
public record CandidateScratch(long workspace, long c) {
    static final long ALIGNMENT = 256;

    /** Bytes to allocate for a workspace of {@code workspaceBytes} and a C of {@code cBytes}, whatever the base. */
    public static long bytes(long workspaceBytes, long cBytes) {
        return ALIGNMENT + roundUp(workspaceBytes) + ALIGNMENT + cBytes;
    }

    /** The layout inside an allocation of {@link #bytes} bytes at {@code base}, for a caller's C at {@code cAddress}. */
    public static CandidateScratch at(long base, long workspaceBytes, long cAddress) {
        long start = roundUp(base);
        return new CandidateScratch(workspaceBytes == 0 ? 0 : start,
                start + roundUp(workspaceBytes) + Long.remainderUnsigned(cAddress, ALIGNMENT));
    }

    private static long roundUp(long value) {
        return (value + ALIGNMENT - 1) & -ALIGNMENT;
    }
}

package dev.ubuf.comm;

/** How a user buffer's peers learn each other's device memory. */
public enum BufferSharing {
    /** One JVM drives all ranks: plain allocations, direct pointers, peer access between contexts. */
    IN_PROCESS,
    /** One JVM per rank: cuMemCreate allocations exported as POSIX file descriptors over a Unix socket. */
    VMM_POSIX_FD,
    /** One JVM per rank, fallback: legacy CUDA IPC memory handles (cuIpcGetMemHandle). */
    LEGACY_IPC
}

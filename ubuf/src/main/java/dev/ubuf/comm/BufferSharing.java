package dev.ubuf.comm;

/** How a user buffer's peers learn each other's device memory. */
public enum BufferSharing {
    /** One JVM drives all ranks: plain allocations, direct pointers, peer access between contexts. */
    IN_PROCESS,
    /**
     * One JVM per rank (the automatic choice where every device supports it): cuMemCreate allocations exported as
     * POSIX file descriptors, passed over Unix sockets (SCM_RIGHTS, same user only), imported and mapped into one
     * reserved range per rank. Also works between threads of one JVM, e.g. to test it.
     */
    VMM_POSIX_FD,
    /** One JVM per rank, fallback: legacy CUDA IPC memory handles (cuIpcGetMemHandle). */
    LEGACY_IPC
}

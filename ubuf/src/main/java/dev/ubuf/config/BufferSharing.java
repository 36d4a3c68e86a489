package dev.ubuf.config;

/** How a user buffer's peers learn each other's device memory. */
public enum BufferSharing {
    /**
     * One JVM drives all ranks: plain allocations, direct pointers, peer access between contexts. The automatic
     * choice in one JVM only where VMM handles are not available or ranks share a GPU.
     */
    IN_PROCESS,
    /**
     * cuMemCreate allocations exported as POSIX file descriptors, passed over Unix sockets (SCM_RIGHTS, same user
     * only), imported and mapped into one reserved range per rank: the automatic choice wherever every device
     * supports it, between processes and between the threads of one JVM alike.
     */
    VMM_POSIX_FD,
    /** One JVM per rank, fallback: legacy CUDA IPC memory handles (cuIpcGetMemHandle). */
    LEGACY_IPC
}

package dev.ubuf.comm;

/** Cross-process sharing through cuMemCreate allocations exported as POSIX file descriptors (wired in below). */
final class VmmSharedMemory {
    private VmmSharedMemory() {
    }

    static SharedMemory create(TpCommunicator comm, String name, long bytes) {
        throw new UnsupportedOperationException("VMM_POSIX_FD sharing of user buffers is not wired yet: use LEGACY_IPC (the automatic choice across processes)");
    }
}

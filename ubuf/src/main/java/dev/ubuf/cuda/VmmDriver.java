package dev.ubuf.cuda;

/**
 * The VMM calls {@link VmmAllocation} and {@link VmmMapping} need. {@link CudaVmm} is the real one; CPU tests
 * substitute a recording fake to check ordering, rollback and idempotent release without a GPU.
 */
interface VmmDriver {
    long granularity(int device, CudaVmm.Granularity kind);

    long memCreate(long size, int device);

    void memRelease(long handle);

    int exportToFd(long handle);

    long importFromFd(int fd);

    long addressReserve(long size, long alignment);

    void addressFree(long address, long size);

    void map(long address, long size, long offset, long handle);

    void unmap(long address, long size);

    void setAccess(long address, long size, int[] devices);
}

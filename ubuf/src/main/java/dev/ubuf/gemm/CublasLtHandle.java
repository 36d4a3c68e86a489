package dev.ubuf.gemm;

/**
 * An owned cuBLASLt context (cublasLtHandle_t). Create one per device (CUDA context) with that device's context
 * current on the calling thread, and keep it current whenever a {@link GemmRunner} on this handle runs. Close it after
 * every runner built on it; a second close does nothing.
 *
 * <p>Not thread-safe: use a handle, and the runners built on it, from one thread at a time.
 */
public final class CublasLtHandle implements AutoCloseable {
    private final CublasLt library;
    private long handle;

    private CublasLtHandle(CublasLt library, long handle) {
        this.library = library;
        this.handle = handle;
    }

    /**
     * cublasLtCreate on the calling thread's current CUDA context.
     *
     * @throws GemmException if libcublasLt is missing or cublasLtCreate fails (e.g. no usable device)
     */
    public static CublasLtHandle create() {
        return create(CublasLt.library());
    }

    /** cublasLtCreate through a given binding (tests bind a stand-in library). */
    static CublasLtHandle create(CublasLt library) {
        return new CublasLtHandle(library, library.create());
    }

    /** The raw cublasLtHandle_t. */
    public long address() {
        assertOpen();
        return handle;
    }

    /** The version of the loaded cuBLASLt (cublasLtGetVersion), e.g. 130101 for 13.1.1. */
    public long version() {
        return library.version();
    }

    public boolean isOpen() {
        return handle != 0;
    }

    CublasLt library() {
        return library;
    }

    void assertOpen() {
        if (handle == 0) {
            throw new IllegalStateException("cuBLASLt handle is closed");
        }
    }

    @Override
    public void close() {
        long h = handle;
        if (h == 0) {
            return;
        }
        handle = 0; // never retried: a failed destroy must not become a double free
        library.destroy(h);
    }

    @Override
    public String toString() {
        return "CublasLtHandle[" + (handle == 0 ? "closed" : "0x" + Long.toHexString(handle)) + ", "
                + library.libraryName() + "]";
    }
}

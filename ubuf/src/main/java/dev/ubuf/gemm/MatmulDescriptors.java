package dev.ubuf.gemm;

/**
 * The cuBLASLt descriptors of one {@link GemmSpec}: the matmul descriptor (compute and scale type, transposes, SM
 * target) and the column-major layouts of cuBLASLt's A, B and C (C doubles as D: the product is written in place).
 * Host-side objects only: creating them needs the library but no device. Destroyed in reverse order of creation.
 */
final class MatmulDescriptors implements AutoCloseable {
    private final CublasLt library;
    private final ColumnMajorCall call;
    private long matmulDesc;
    private long aLayout;
    private long bLayout;
    private long cLayout;

    private MatmulDescriptors(CublasLt library, ColumnMajorCall call) {
        this.library = library;
        this.call = call;
    }

    static MatmulDescriptors create(CublasLt library, GemmSpec spec) {
        ColumnMajorCall call = ColumnMajorCall.from(spec);
        MatmulDescriptors d = new MatmulDescriptors(library, call);
        try {
            d.matmulDesc = library.matmulDescCreate(CublasLt.computeType(spec), CublasLt.CUDA_R_32F);
            library.matmulDescSetInt32(d.matmulDesc, CublasLt.CUBLASLT_MATMUL_DESC_TRANSA,
                    call.transa() ? CublasLt.CUBLAS_OP_T : CublasLt.CUBLAS_OP_N);
            library.matmulDescSetInt32(d.matmulDesc, CublasLt.CUBLASLT_MATMUL_DESC_TRANSB,
                    call.transb() ? CublasLt.CUBLAS_OP_T : CublasLt.CUBLAS_OP_N);
            if (spec.smCountTarget() > 0) {
                library.matmulDescSetInt32(d.matmulDesc, CublasLt.CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET,
                        spec.smCountTarget());
            }
            int ab = CublasLt.dataType(spec.abType());
            d.aLayout = layout(library, ab, call.aLayout());
            d.bLayout = layout(library, ab, call.bLayout());
            d.cLayout = layout(library, CublasLt.dataType(spec.cType()), call.cLayout());
            return d;
        } catch (RuntimeException e) {
            try {
                d.close();
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    private static long layout(CublasLt library, int dataType, ColumnMajorCall.Layout l) {
        // Column order is cuBLASLt's default; the row-major view comes from the operand swap in ColumnMajorCall.
        return library.matrixLayoutCreate(dataType, l.rows(), l.cols(), l.ld());
    }

    ColumnMajorCall call() {
        return call;
    }

    long matmulDesc() {
        return matmulDesc;
    }

    long aLayout() {
        return aLayout;
    }

    long bLayout() {
        return bLayout;
    }

    long cLayout() {
        return cLayout;
    }

    /** Destroys what was created, last first; the handles are zeroed first, so a second close frees nothing. */
    @Override
    public void close() {
        long c = cLayout;
        long b = bLayout;
        long a = aLayout;
        long desc = matmulDesc;
        cLayout = 0;
        bLayout = 0;
        aLayout = 0;
        matmulDesc = 0;
        RuntimeException failure = null;
        if (c != 0) {
            failure = attempt(failure, () -> library.matrixLayoutDestroy(c));
        }
        if (b != 0) {
            failure = attempt(failure, () -> library.matrixLayoutDestroy(b));
        }
        if (a != 0) {
            failure = attempt(failure, () -> library.matrixLayoutDestroy(a));
        }
        if (desc != 0) {
            failure = attempt(failure, () -> library.matmulDescDestroy(desc));
        }
        if (failure != null) {
            throw failure;
        }
    }

    /** Runs one destroy; returns the first failure so far, later ones added to it as suppressed. */
    static RuntimeException attempt(RuntimeException failure, Runnable destroy) {
        try {
            destroy.run();
        } catch (RuntimeException e) {
            if (failure == null) {
                return e;
            }
            failure.addSuppressed(e);
        }
        return failure;
    }
}

package dev.ubuf.gemm;

/**
 * The cuBLASLt descriptors of one {@link GemmSpec}: the matmul descriptor (compute and scale type, transposes, SM
 * target, FP8 accumulation) and the column-major layouts of cuBLASLt's A, B, C and D. D is C (the product is written
 * in place) except for an FP8 output: cuBLASLt then wants C described as BF16 (the type its FP8-output kernels take
 * for C and bias), and C is never read (beta = 0). Host-side objects only: creating them needs the library but no
 * device. Destroyed in reverse order of creation.
 *
 * <p>An FP8 GEMM's scale and amax pointers are attributes of the matmul descriptor, set by {@link #bindFp8} before
 * the heuristic and again before every run (a cached plan serves calls with different scale tensors).
 */
final class MatmulDescriptors implements AutoCloseable {
    private final CublasLt library;
    private final ColumnMajorCall call;
    private final GemmSpec spec;
    private long matmulDesc;
    private long aLayout;
    private long bLayout;
    private long cLayout;
    private long dLayout; // a layout of its own only for an FP8 output; else cLayout

    private MatmulDescriptors(CublasLt library, ColumnMajorCall call, GemmSpec spec) {
        this.library = library;
        this.call = call;
        this.spec = spec;
    }

    static MatmulDescriptors create(CublasLt library, GemmSpec spec) {
        return create(library, spec, false);
    }

    /**
     * With {@code bias} the epilogue adds a vector of the output's type to every row of the caller's C (cuBLASLt's
     * EPILOGUE_BIAS: one element per row of its column-major D), in the epilogue's pass (see Gemm#multiplyAdd for its
     * roundings); its pointer
     * is bound by {@link #bindBias} before each run.
     */
    static MatmulDescriptors create(CublasLt library, GemmSpec spec, boolean bias) {
        ColumnMajorCall call = ColumnMajorCall.from(spec);
        MatmulDescriptors d = new MatmulDescriptors(library, call, spec);
        try {
            d.matmulDesc = library.matmulDescCreate(CublasLt.computeType(spec), CublasLt.CUDA_R_32F);
            if (bias) {
                library.matmulDescSetInt32(d.matmulDesc, CublasLt.CUBLASLT_MATMUL_DESC_EPILOGUE,
                        CublasLt.CUBLASLT_EPILOGUE_BIAS);
                library.matmulDescSetInt32(d.matmulDesc, CublasLt.CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                        CublasLt.dataType(spec.cType()));
            }
            library.matmulDescSetInt32(d.matmulDesc, CublasLt.CUBLASLT_MATMUL_DESC_TRANSA,
                    call.transa() ? CublasLt.CUBLAS_OP_T : CublasLt.CUBLAS_OP_N);
            library.matmulDescSetInt32(d.matmulDesc, CublasLt.CUBLASLT_MATMUL_DESC_TRANSB,
                    call.transb() ? CublasLt.CUBLAS_OP_T : CublasLt.CUBLAS_OP_N);
            if (spec.smCountTarget() > 0) {
                library.matmulDescSetInt32(d.matmulDesc, CublasLt.CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET,
                        spec.smCountTarget());
            }
            if (spec.isFp8()) {
                library.matmulDescSetInt8(d.matmulDesc, CublasLt.CUBLASLT_MATMUL_DESC_FAST_ACCUM,
                        (byte) (spec.fp8FastAccumulation() ? 1 : 0));
            }
            // cuBLASLt's A and B are the caller's operands in swapped order, each with its own type.
            d.aLayout = layout(library, CublasLt.dataType(call.first() == ColumnMajorCall.Operand.A ? spec.aType()
                    : spec.bType()), call.aLayout());
            d.bLayout = layout(library, CublasLt.dataType(call.second() == ColumnMajorCall.Operand.A ? spec.aType()
                    : spec.bType()), call.bLayout());
            if (spec.hasFp8Output()) {
                d.cLayout = layout(library, CublasLt.CUDA_R_16BF, call.cLayout());
                d.dLayout = layout(library, CublasLt.dataType(spec.cType()), call.cLayout());
            } else {
                d.cLayout = layout(library, CublasLt.dataType(spec.cType()), call.cLayout());
                d.dLayout = d.cLayout;
            }
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

    /**
     * Points the descriptor at one call's FP8 scales: cuBLASLt's A_SCALE is the scale of its A, which is the caller's
     * B (and the other way round); D_SCALE and AMAX_D are set (or cleared, 0) as the caller gives them.
     */
    void bindFp8(Gemm.Fp8Scales scales) {
        if (!spec.isFp8()) {
            throw new IllegalStateException("not an fp8 GEMM: " + spec);
        }
        library.matmulDescSetPointer(matmulDesc, CublasLt.CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                call.firstAddress(scales.scaleA(), scales.scaleB()));
        library.matmulDescSetPointer(matmulDesc, CublasLt.CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                call.secondAddress(scales.scaleA(), scales.scaleB()));
        library.matmulDescSetPointer(matmulDesc, CublasLt.CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, scales.scaleD());
        library.matmulDescSetPointer(matmulDesc, CublasLt.CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, scales.amaxD());
    }

    /** Points the bias epilogue at one call's bias vector (a cached plan serves calls with different vectors). */
    void bindBias(long bias) {
        library.matmulDescSetPointer(matmulDesc, CublasLt.CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
    }

    /** The C pointer cuBLASLt gets for the caller's C: none for an FP8 output, which reads no C. */
    long cAddress(long c) {
        return spec.hasFp8Output() ? 0 : c;
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

    long dLayout() {
        return dLayout;
    }

    /** Destroys what was created, last first; the handles are zeroed first, so a second close frees nothing. */
    @Override
    public void close() {
        long dOwn = dLayout != cLayout ? dLayout : 0;
        long c = cLayout;
        long b = bLayout;
        long a = aLayout;
        long desc = matmulDesc;
        dLayout = 0;
        cLayout = 0;
        bLayout = 0;
        aLayout = 0;
        matmulDesc = 0;
        RuntimeException failure = null;
        if (dOwn != 0) {
            failure = attempt(failure, () -> library.matrixLayoutDestroy(dOwn));
        }
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

package dev.ubuf.gemm;

/**
 * The column-major cuBLASLt call that computes a row-major {@link GemmSpec}.
 *
 * <p>A row-major [r, c] matrix with row stride ld is, read column-major, its transpose: a [c, r] matrix with the same
 * ld. So row-major {@code C = op(A) op(B)} is column-major {@code C^T = op(B)^T op(A)^T}: cuBLASLt's first operand is
 * the caller's B, its second the caller's A, with m and n exchanged. The transpose flags carry over unchanged: an
 * untransposed row-major B read column-major is already op(B)^T.
 *
 * @param m       rows of the column-major result (the caller's n)
 * @param n       columns of the column-major result (the caller's m)
 * @param k       the shared dimension
 * @param transa  cuBLASLt's TRANSA, for the first operand (the caller's transB)
 * @param transb  cuBLASLt's TRANSB, for the second operand (the caller's transA)
 * @param first   which caller operand cuBLASLt's A is ({@link Operand#B})
 * @param second  which caller operand cuBLASLt's B is ({@link Operand#A})
 * @param aLayout column-major layout of cuBLASLt's A
 * @param bLayout column-major layout of cuBLASLt's B
 * @param cLayout column-major layout of C and D
 */
record ColumnMajorCall(int m, int n, int k, boolean transa, boolean transb, Operand first, Operand second,
                       Layout aLayout, Layout bLayout, Layout cLayout) {

    /** A caller's input matrix. */
    enum Operand { A, B }

    /** A column-major matrix layout as cuBLASLt's MatrixLayoutCreate takes it; ld is the column stride. */
    record Layout(long rows, long cols, long ld) {
        Layout {
            if (rows <= 0 || cols <= 0 || ld < rows) {
                throw new IllegalArgumentException("invalid column-major layout " + rows + " x " + cols + ", ld=" + ld);
            }
        }
    }

    static ColumnMajorCall from(GemmSpec s) {
        // A stored row-major [r, c] is a column-major [c, r] with the same leading dimension.
        Layout first = new Layout(s.bStoredCols(), s.bStoredRows(), s.ldb());
        Layout second = new Layout(s.aStoredCols(), s.aStoredRows(), s.lda());
        Layout c = new Layout(s.n(), s.m(), s.ldc());
        return new ColumnMajorCall(s.n(), s.m(), s.k(), s.transB(), s.transA(), Operand.B, Operand.A, first, second, c);
    }

    /** The device address cuBLASLt's A takes, given the caller's A and B addresses. */
    long firstAddress(long a, long b) {
        return first == Operand.A ? a : b;
    }

    /** The device address cuBLASLt's B takes, given the caller's A and B addresses. */
    long secondAddress(long a, long b) {
        return second == Operand.A ? a : b;
    }
}

package dev.ubuf.gemm;

import static dev.ubuf.tensor.DType.BF16;
import static dev.ubuf.tensor.DType.FP32;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.ubuf.gemm.ColumnMajorCall.Layout;
import dev.ubuf.gemm.ColumnMajorCall.Operand;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The row-major to column-major mapping, checked by running the mapped call through a host model of cuBLAS's
 * column-major GEMM on the caller's row-major buffers and comparing with a row-major float64 reference.
 */
class ColumnMajorCallTest {

    @Test
    void swapsOperandsAndExchangesMAndN() {
        GemmSpec s = new GemmSpec(BF16, BF16, FP32, 16, 24, 40, true, false, 16, 24, 32, 0, false, false);
        ColumnMajorCall call = ColumnMajorCall.from(s);
        assertEquals(24, call.m());
        assertEquals(16, call.n());
        assertEquals(40, call.k());
        assertEquals(Operand.B, call.first());
        assertEquals(Operand.A, call.second());
        assertEquals(false, call.transa(), "cuBLASLt's TRANSA is the caller's transB");
        assertEquals(true, call.transb(), "cuBLASLt's TRANSB is the caller's transA");
        assertEquals(new Layout(24, 40, 24), call.aLayout(), "B stored [40, 24] row-major read column-major");
        assertEquals(new Layout(16, 40, 16), call.bLayout(), "A stored [40, 16] row-major read column-major");
        assertEquals(new Layout(24, 16, 32), call.cLayout());
        assertEquals(0xB0L, call.firstAddress(0xA0L, 0xB0L));
        assertEquals(0xA0L, call.secondAddress(0xA0L, 0xB0L));
    }

    @Test
    void twoByTwoExample() {
        double[] a = {1, 2, 3, 4};     // [[1, 2], [3, 4]]
        double[] b = {5, 6, 7, 8};     // [[5, 6], [7, 8]]
        double[] c = new double[4];
        GemmSpec s = GemmSpec.of(FP32, FP32, 2, 2, 2, false, false);
        runMapped(ColumnMajorCall.from(s), 1.0, a, 0, b, 0, 0.0, c, 0);
        assertArrayEquals(new double[] {19, 22, 43, 50}, c);
    }

    @ParameterizedTest(name = "transA={0} transB={1}")
    @CsvSource({"false,false", "true,false", "false,true", "true,true"})
    void mappedCallEqualsRowMajorReferenceOnDenseMatrices(boolean transA, boolean transB) {
        long seed = System.nanoTime();
        SplittableRandom random = new SplittableRandom(seed);
        for (int trial = 0; trial < 50; trial++) {
            int m = 1 + random.nextInt(9);
            int n = 1 + random.nextInt(9);
            int k = 1 + random.nextInt(9);
            check(GemmSpec.of(BF16, FP32, m, n, k, transA, transB), 0, 0, 0, random, seed, trial);
        }
    }

    @ParameterizedTest(name = "transA={0} transB={1}")
    @CsvSource({"false,false", "true,false", "false,true", "true,true"})
    void mappedCallEqualsRowMajorReferenceOnSubViews(boolean transA, boolean transB) {
        long seed = System.nanoTime();
        SplittableRandom random = new SplittableRandom(seed);
        for (int trial = 0; trial < 100; trial++) {
            int m = 1 + random.nextInt(9);
            int n = 1 + random.nextInt(9);
            int k = 1 + random.nextInt(9);
            GemmSpec dense = GemmSpec.of(BF16, FP32, m, n, k, transA, transB);
            // Views into wider parents: leading dimensions past the columns, first elements at an offset.
            GemmSpec view = dense.withLeadingDimensions(dense.lda() + random.nextInt(6),
                    dense.ldb() + random.nextInt(6), dense.ldc() + random.nextInt(6));
            check(view, random.nextInt(8), random.nextInt(8), random.nextInt(8), random, seed, trial);
        }
    }

    @Test
    void rowChunkOfALargerMatrixIsAView() {
        // Rows 8..11 of a [16, 32] A times B [32, 8] into rows 8..11 of C [16, 8]: the ring-exchange chunk GEMM.
        long seed = System.nanoTime();
        SplittableRandom random = new SplittableRandom(seed);
        int mTotal = 16;
        int k = 32;
        int n = 8;
        double[] a = randomArray(random, mTotal * k);
        double[] b = randomArray(random, k * n);
        double[] c = new double[mTotal * n];
        Arrays.fill(c, Double.NaN);
        GemmSpec chunk = GemmSpec.of(BF16, BF16, 4, n, k, false, false);
        runMapped(ColumnMajorCall.from(chunk), 1.0, a, 8 * k, b, 0, 0.0, c, 8 * n);
        for (int i = 0; i < mTotal; i++) {
            for (int j = 0; j < n; j++) {
                if (i < 8 || i >= 12) {
                    assertTrue(Double.isNaN(c[i * n + j]), "row " + i + " outside the chunk was written (seed " + seed + ")");
                } else {
                    double expected = 0;
                    for (int p = 0; p < k; p++) {
                        expected += a[i * k + p] * b[p * n + j];
                    }
                    assertEquals(expected, c[i * n + j], 1e-12, "C[" + i + ", " + j + "] (seed " + seed + ")");
                }
            }
        }
    }

    /** Runs spec through the mapping and compares every element of C, and that nothing around the view changes. */
    private static void check(GemmSpec s, int aOff, int bOff, int cOff, SplittableRandom random, long seed, int trial) {
        String where = s + " offsets " + aOff + "/" + bOff + "/" + cOff + " (seed " + seed + ", trial " + trial + ")";
        int tail = random.nextInt(4);
        double[] a = randomArray(random, aOff + (int) (s.aBytes() / s.aType().bytes()) + tail);
        double[] b = randomArray(random, bOff + (int) (s.bBytes() / s.aType().bytes()) + tail);
        double[] c = randomArray(random, cOff + (int) (s.cBytes() / s.cType().bytes()) + tail);
        double alpha = random.nextDouble(-2, 2);
        double beta = random.nextBoolean() ? 0.0 : random.nextDouble(-2, 2);

        double[] expected = c.clone();
        for (int i = 0; i < s.m(); i++) {
            for (int j = 0; j < s.n(); j++) {
                double sum = 0;
                for (int p = 0; p < s.k(); p++) {
                    double aip = s.transA() ? a[aOff + (int) (p * s.lda()) + i] : a[aOff + (int) (i * s.lda()) + p];
                    double bpj = s.transB() ? b[bOff + (int) (j * s.ldb()) + p] : b[bOff + (int) (p * s.ldb()) + j];
                    sum += aip * bpj;
                }
                int at = cOff + (int) (i * s.ldc()) + j;
                expected[at] = alpha * sum + beta * c[at];
            }
        }
        double[] actual = c.clone();
        runMapped(ColumnMajorCall.from(s), alpha, a, aOff, b, bOff, beta, actual, cOff);
        for (int x = 0; x < expected.length; x++) {
            assertEquals(expected[x], actual[x], 1e-12, "C buffer element " + x + " of " + where);
        }
    }

    /** Feeds the caller's row-major buffers to the column-major model exactly as GemmRunner feeds cuBLASLt. */
    private static void runMapped(ColumnMajorCall call, double alpha, double[] a, int aOff, double[] b, int bOff,
                                  double beta, double[] c, int cOff) {
        double[] first = call.first() == Operand.A ? a : b;
        int firstOff = call.first() == Operand.A ? aOff : bOff;
        double[] second = call.second() == Operand.A ? a : b;
        int secondOff = call.second() == Operand.A ? aOff : bOff;
        columnMajorGemm(call.transa(), call.transb(), call.m(), call.n(), call.k(), alpha,
                first, firstOff, call.aLayout(), second, secondOff, call.bLayout(), beta, c, cOff, call.cLayout());
    }

    /**
     * cuBLAS's contract on host arrays: column-major matrices (element (r, c) at off + r + c * ld), shapes checked
     * against m, n, k and the transposes as cublasLtMatmul checks them, and no access outside a layout.
     */
    static void columnMajorGemm(boolean transa, boolean transb, int m, int n, int k, double alpha,
                                double[] a, int aOff, Layout aL, double[] b, int bOff, Layout bL,
                                double beta, double[] c, int cOff, Layout cL) {
        assertEquals(transa ? k : m, aL.rows(), "A rows");
        assertEquals(transa ? m : k, aL.cols(), "A cols");
        assertEquals(transb ? n : k, bL.rows(), "B rows");
        assertEquals(transb ? k : n, bL.cols(), "B cols");
        assertEquals(m, cL.rows(), "C rows");
        assertEquals(n, cL.cols(), "C cols");
        for (int j = 0; j < n; j++) {
            for (int i = 0; i < m; i++) {
                double sum = 0;
                for (int p = 0; p < k; p++) {
                    double x = transa ? at(a, aOff, aL, p, i) : at(a, aOff, aL, i, p);
                    double y = transb ? at(b, bOff, bL, j, p) : at(b, bOff, bL, p, j);
                    sum += x * y;
                }
                int index = index(cOff, cL, i, j);
                // beta = 0 must not read C (cuBLAS semantics: NaN in C does not propagate).
                c[index] = beta == 0 ? alpha * sum : alpha * sum + beta * c[index];
            }
        }
    }

    private static double at(double[] x, int off, Layout l, int row, int col) {
        return x[index(off, l, row, col)];
    }

    private static int index(int off, Layout l, int row, int col) {
        if (row < 0 || row >= l.rows() || col < 0 || col >= l.cols()) {
            fail("access (" + row + ", " + col + ") outside layout " + l);
        }
        return off + row + (int) (col * l.ld());
    }

    private static double[] randomArray(SplittableRandom random, int length) {
        double[] x = new double[length];
        for (int i = 0; i < length; i++) {
            x[i] = random.nextDouble(-1, 1);
        }
        return x;
    }
}

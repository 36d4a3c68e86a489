package dev.ubuf.layers.reference;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import java.util.function.DoubleUnaryOperator;
import java.util.function.ToDoubleFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The float64 reference the GPU tests compare the layer kernels with: forward formulas against definitions and
 * known values, backward formulas against central finite differences of the forward.
 */
class HostLayerMathTest {
    private static final double H = 1e-6;

    static double[] random(SplittableRandom rnd, int n, double scale) {
        double[] a = new double[n];
        for (int i = 0; i < n; i++) {
            a[i] = rnd.nextDouble(-scale, scale);
        }
        return a;
    }

    static double dot(double[] a, double[] b) {
        double s = 0;
        for (int i = 0; i < a.length; i++) {
            s += a[i] * b[i];
        }
        return s;
    }

    /** d loss / d v[i] by central differences, v perturbed in place and restored. */
    static double numeric(double[] v, int i, ToDoubleFunction<double[]> loss) {
        double keep = v[i];
        v[i] = keep + H;
        double up = loss.applyAsDouble(v);
        v[i] = keep - H;
        double down = loss.applyAsDouble(v);
        v[i] = keep;
        return (up - down) / (2 * H);
    }

    static void assertClose(double expected, double actual, String what) {
        double tol = 1e-6 * Math.max(1, Math.abs(expected));
        assertTrue(Math.abs(expected - actual) <= tol, () -> what + ": expected " + expected + ", got " + actual);
    }

    @Test
    void layerNormRowsHaveZeroMeanAndUnitVarianceBeforeGammaAndBeta() {
        int rows = 3;
        int cols = 37;
        double[] x = random(new SplittableRandom(1), rows * cols, 4);
        double[] ones = new double[cols];
        java.util.Arrays.fill(ones, 1);
        HostLayerMath.LayerNormForward f = HostLayerMath.layerNormForward(x, rows, cols, ones, new double[cols], 0, false);
        for (int r = 0; r < rows; r++) {
            double sum = 0;
            double sq = 0;
            for (int c = 0; c < cols; c++) {
                sum += f.y()[r * cols + c];
                sq += f.y()[r * cols + c] * f.y()[r * cols + c];
            }
            assertEquals(0, sum / cols, 1e-12, "row " + r + " mean");
            assertEquals(1, sq / cols, 1e-12, "row " + r + " variance");
        }
    }

    @Test
    void layerNormSavesMeanAndRstdAndAppliesGammaAndBeta() {
        double[] x = {1, 2, 3, 4};
        double[] gamma = {2, 2, 2, 2};
        double[] beta = {0.5, 0.5, 0.5, 0.5};
        HostLayerMath.LayerNormForward f = HostLayerMath.layerNormForward(x, 1, 4, gamma, beta, 1e-5, false);
        assertEquals(2.5, f.mean()[0], 1e-15);
        double rstd = 1 / Math.sqrt(1.25 + 1e-5); // variance of 1..4 is 1.25
        assertEquals(rstd, f.rstd()[0], 1e-15);
        assertEquals((1 - 2.5) * rstd * 2 + 0.5, f.y()[0], 1e-15);
        assertEquals((4 - 2.5) * rstd * 2 + 0.5, f.y()[3], 1e-15);
    }

    @Test
    void zeroCenteredGammaAddsOneToGamma() {
        SplittableRandom rnd = new SplittableRandom(2);
        double[] x = random(rnd, 2 * 16, 3);
        double[] gamma = random(rnd, 16, 0.5);
        double[] onePlus = gamma.clone();
        for (int i = 0; i < onePlus.length; i++) {
            onePlus[i] += 1;
        }
        double[] beta = random(rnd, 16, 1);
        assertArrayEquals(HostLayerMath.layerNormForward(x, 2, 16, onePlus, beta, 1e-5, false).y(),
                HostLayerMath.layerNormForward(x, 2, 16, gamma, beta, 1e-5, true).y(), 1e-14);
    }

    @ParameterizedTest(name = "zero-centred gamma {0}")
    @ValueSource(booleans = {false, true})
    void layerNormBackwardMatchesFiniteDifferencesOfTheForward(boolean zeroCentered) {
        int rows = 4;
        int cols = 24;
        double eps = 1e-5;
        SplittableRandom rnd = new SplittableRandom(3);
        double[] x = random(rnd, rows * cols, 2);
        double[] gamma = random(rnd, cols, 1.5);
        double[] beta = random(rnd, cols, 1);
        double[] dy = random(rnd, rows * cols, 1);
        HostLayerMath.LayerNormForward f = HostLayerMath.layerNormForward(x, rows, cols, gamma, beta, eps, zeroCentered);
        HostLayerMath.LayerNormBackward b = HostLayerMath.layerNormBackward(dy, x, f.mean(), f.rstd(), gamma,
                zeroCentered, rows, cols);
        // loss = sum(dy * y): its gradients are what the backward computes.
        for (int i = 0; i < x.length; i++) {
            assertClose(numeric(x, i, v -> dot(dy, HostLayerMath.layerNormForward(v, rows, cols, gamma, beta, eps,
                    zeroCentered).y())), b.dx()[i], "dx[" + i + "]");
        }
        for (int c = 0; c < cols; c++) {
            assertClose(numeric(gamma, c, v -> dot(dy, HostLayerMath.layerNormForward(x, rows, cols, v, beta, eps,
                    zeroCentered).y())), b.dgamma()[c], "dgamma[" + c + "]");
            assertClose(numeric(beta, c, v -> dot(dy, HostLayerMath.layerNormForward(x, rows, cols, gamma, v, eps,
                    zeroCentered).y())), b.dbeta()[c], "dbeta[" + c + "]");
        }
    }

    @Test
    void geluHasTheTanhApproximationsKnownValues() {
        // Values of 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) computed independently.
        assertEquals(0, HostLayerMath.gelu(0), 0);
        assertEquals(0.8411919906082768, HostLayerMath.gelu(1), 1e-15);
        assertEquals(-0.15428599017485606, HostLayerMath.gelu(-0.5), 1e-15);
        assertEquals(2.996362607918227, HostLayerMath.gelu(3), 1e-15);
        assertEquals(0.5, HostLayerMath.geluDerivative(0), 1e-15);
    }

    @Test
    void geluDerivativeMatchesFiniteDifferences() {
        for (double x = -6; x <= 6; x += 0.37) {
            double fd = (HostLayerMath.gelu(x + H) - HostLayerMath.gelu(x - H)) / (2 * H);
            assertClose(fd, HostLayerMath.geluDerivative(x), "gelu'(" + x + ")");
        }
    }

    @Test
    void geluBackwardIsDyTimesTheDerivative() {
        SplittableRandom rnd = new SplittableRandom(4);
        double[] x = random(rnd, 50, 4);
        double[] dy = random(rnd, 50, 1);
        double[] dx = HostLayerMath.geluBackward(dy, x);
        for (int i = 0; i < x.length; i++) {
            assertClose(numeric(x, i, v -> dot(dy, HostLayerMath.gelu(v))), dx[i], "dx[" + i + "]");
        }
    }

    @Test
    void geluStaysFiniteWhereTanhSaturates() {
        for (double x : new double[] {-1e20, -50, 50, 1e20}) {
            double d = HostLayerMath.geluDerivative(x);
            assertTrue(Double.isFinite(d), "gelu'(" + x + ") = " + d);
            assertEquals(x > 0 ? 1 : 0, d, 0);
        }
    }

    @Test
    void biasGeluIsGeluOfTheBiasedInputAndKeepsThePreActivation() {
        double[] x = {0.5, -1, 2, 0};
        double[] bias = {0.5, 1};
        HostLayerMath.BiasGelu r = HostLayerMath.biasGelu(x, bias, 2, 2);
        assertArrayEquals(new double[] {1, 0, 2.5, 1}, r.pre(), 0);
        assertEquals(HostLayerMath.gelu(1), r.y()[0], 0);
        assertEquals(0, r.y()[1], 0);
        assertEquals(HostLayerMath.gelu(2.5), r.y()[2], 0);
    }

    @Test
    void swigluActivatesTheFirstHalfAndGatesWithTheSecond() {
        double[] x = {1, -2, 3, 0.5}; // one row, f = 2: a = (1, -2), b = (3, 0.5)
        double[] y = HostLayerMath.swiglu(x, 1, 2);
        assertEquals(0.7310585786300049 * 3, y[0], 1e-15);
        assertEquals(-0.23840584404423515 * 0.5, y[1], 1e-15);
    }

    @Test
    void swigluBackwardMatchesFiniteDifferencesOfTheForward() {
        int rows = 3;
        int f = 8;
        SplittableRandom rnd = new SplittableRandom(5);
        double[] x = random(rnd, rows * 2 * f, 4);
        double[] dy = random(rnd, rows * f, 1);
        double[] dx = HostLayerMath.swigluBackward(dy, x, rows, f);
        for (int i = 0; i < x.length; i++) {
            assertClose(numeric(x, i, v -> dot(dy, HostLayerMath.swiglu(v, rows, f))), dx[i], "dx[" + i + "]");
        }
    }

    @Test
    void siluDerivativeMatchesFiniteDifferencesAndStaysFinite() {
        DoubleUnaryOperator silu = HostLayerMath::silu;
        for (double a = -8; a <= 8; a += 0.41) {
            double fd = (silu.applyAsDouble(a + H) - silu.applyAsDouble(a - H)) / (2 * H);
            assertClose(fd, HostLayerMath.siluDerivative(a), "silu'(" + a + ")");
        }
        assertEquals(0, HostLayerMath.siluDerivative(-1000), 0);
        assertEquals(1, HostLayerMath.siluDerivative(1000), 0);
    }

    @Test
    void columnSumsAreTheBiasGradient() {
        double[] m = {1, 2, 3, 4, 5, 6};
        assertArrayEquals(new double[] {5, 7, 9}, HostLayerMath.columnSums(m, 2, 3), 0);
        // d/d bias of sum(dy * (x + bias)) = column sums of dy
        double[] dy = random(new SplittableRandom(6), 12, 1);
        double[] bias = new double[4];
        double[] sums = HostLayerMath.columnSums(dy, 3, 4);
        for (int c = 0; c < 4; c++) {
            assertClose(numeric(bias, c, v -> {
                double s = 0;
                for (int i = 0; i < 12; i++) {
                    s += dy[i] * v[i % 4];
                }
                return s;
            }), sums[c], "dbias[" + c + "]");
        }
    }

    @Test
    void shapesAreChecked() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> HostLayerMath.layerNormForward(new double[5], 2, 3, new double[3], new double[3], 1e-5, false));
        assertEquals("x must hold 2x3 = 6 values, got 5", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> HostLayerMath.swiglu(new double[6], 1, 2));
        assertThrows(IllegalArgumentException.class, () -> HostLayerMath.geluBackward(new double[2], new double[3]));
    }
}

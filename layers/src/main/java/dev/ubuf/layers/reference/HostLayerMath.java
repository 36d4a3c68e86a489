package dev.ubuf.layers.reference;

import java.util.Objects;

/**
 * The math of the layer kernels (kernels/README.md, "Layer kernels") in float64 on the host: the reference GPU
 * tests compare the kernels with. Matrices are dense row-major {@code double[]} of {@code rows * cols}; vectors
 * (gamma, beta, bias, per-row statistics) are plain arrays. Formulas, not kernels: no fp32 rounding, no partial
 * sums; the kernels must agree within their dtype's rounding.
 */
public final class HostLayerMath {
    /** sqrt(2 / pi), of the tanh approximation of GELU. */
    public static final double GELU_K0 = Math.sqrt(2.0 / Math.PI);
    /** The cubic coefficient of the tanh approximation of GELU. */
    public static final double GELU_K1 = 0.044715;

    private HostLayerMath() {
    }

    /** LayerNorm forward: the output and the per-row mean and rstd the backward needs. */
    public record LayerNormForward(double[] y, double[] mean, double[] rstd) {
    }

    /** LayerNorm backward: the input gradient and the parameter gradients (column sums over rows). */
    public record LayerNormBackward(double[] dx, double[] dgamma, double[] dbeta) {
    }

    /** Fused bias + GELU forward: the output and the pre-activation x + bias. */
    public record BiasGelu(double[] y, double[] pre) {
    }

    /**
     * {@code y = (x - mean) * rstd * g + beta} per row, with mean and the biased variance over the row,
     * {@code rstd = 1 / sqrt(var + eps)}, and {@code g = gamma} (or {@code 1 + gamma} with zero-centred gamma, TE's
     * {@code zero_centered_gamma}).
     */
    public static LayerNormForward layerNormForward(double[] x, int rows, int cols, double[] gamma, double[] beta,
                                                    double eps, boolean zeroCenteredGamma) {
        requireMatrix(x, rows, cols, "x");
        requireVector(gamma, cols, "gamma");
        requireVector(beta, cols, "beta");
        if (!(eps >= 0)) {
            throw new IllegalArgumentException("eps must be >= 0, got " + eps);
        }
        double[] y = new double[rows * cols];
        double[] mean = new double[rows];
        double[] rstd = new double[rows];
        for (int r = 0; r < rows; r++) {
            double sum = 0;
            for (int c = 0; c < cols; c++) {
                sum += x[r * cols + c];
            }
            double mu = sum / cols;
            double sq = 0;
            for (int c = 0; c < cols; c++) {
                double d = x[r * cols + c] - mu;
                sq += d * d;
            }
            double rs = 1 / Math.sqrt(sq / cols + eps);
            for (int c = 0; c < cols; c++) {
                double g = zeroCenteredGamma ? 1 + gamma[c] : gamma[c];
                y[r * cols + c] = (x[r * cols + c] - mu) * rs * g + beta[c];
            }
            mean[r] = mu;
            rstd[r] = rs;
        }
        return new LayerNormForward(y, mean, rstd);
    }

    /**
     * LayerNorm backward from the forward's saved mean and rstd: with {@code xhat = (x - mean) * rstd} and
     * {@code dxhat = dy * g}, {@code dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))} (means over the
     * row), {@code dgamma = sum over rows of dy * xhat}, {@code dbeta = sum over rows of dy}.
     */
    public static LayerNormBackward layerNormBackward(double[] dy, double[] x, double[] mean, double[] rstd,
                                                      double[] gamma, boolean zeroCenteredGamma, int rows, int cols) {
        requireMatrix(dy, rows, cols, "dy");
        requireMatrix(x, rows, cols, "x");
        requireVector(mean, rows, "mean");
        requireVector(rstd, rows, "rstd");
        requireVector(gamma, cols, "gamma");
        double[] dx = new double[rows * cols];
        double[] dgamma = new double[cols];
        double[] dbeta = new double[cols];
        for (int r = 0; r < rows; r++) {
            double m1 = 0;
            double m2 = 0;
            for (int c = 0; c < cols; c++) {
                int i = r * cols + c;
                double xhat = (x[i] - mean[r]) * rstd[r];
                double dxhat = dy[i] * (zeroCenteredGamma ? 1 + gamma[c] : gamma[c]);
                m1 += dxhat;
                m2 += dxhat * xhat;
                dgamma[c] += dy[i] * xhat;
                dbeta[c] += dy[i];
            }
            m1 /= cols;
            m2 /= cols;
            for (int c = 0; c < cols; c++) {
                int i = r * cols + c;
                double xhat = (x[i] - mean[r]) * rstd[r];
                double dxhat = dy[i] * (zeroCenteredGamma ? 1 + gamma[c] : gamma[c]);
                dx[i] = rstd[r] * (dxhat - m1 - xhat * m2);
            }
        }
        return new LayerNormBackward(dx, dgamma, dbeta);
    }

    /** GELU, tanh approximation (Megatron-LM's and TE's): {@code 0.5 x (1 + tanh(k0 (x + k1 x^3)))}. */
    public static double gelu(double x) {
        return 0.5 * x * (1 + Math.tanh(GELU_K0 * (x + GELU_K1 * x * x * x)));
    }

    /**
     * d gelu / dx = {@code 0.5 (1 + t) + 0.5 x (1 - t^2) k0 (1 + 3 k1 x^2)}, t the tanh above; the second term is 0
     * once tanh has saturated (as in the kernel, where x^3 may overflow).
     */
    public static double geluDerivative(double x) {
        double t = Math.tanh(GELU_K0 * (x + GELU_K1 * x * x * x));
        double sech2 = 1 - t * t;
        double inner = sech2 == 0 ? 0 : 0.5 * x * sech2 * GELU_K0 * (1 + 3 * GELU_K1 * x * x);
        return 0.5 * (1 + t) + inner;
    }

    /** Element-wise GELU. */
    public static double[] gelu(double[] x) {
        double[] y = new double[x.length];
        for (int i = 0; i < x.length; i++) {
            y[i] = gelu(x[i]);
        }
        return y;
    }

    /** {@code dx = dy * gelu'(x)}, x the forward's input. */
    public static double[] geluBackward(double[] dy, double[] x) {
        requireSameLength(dy, x);
        double[] dx = new double[x.length];
        for (int i = 0; i < x.length; i++) {
            dx[i] = dy[i] * geluDerivative(x[i]);
        }
        return dx;
    }

    /** {@code y = gelu(x + bias[c])}, and the pre-activation {@code x + bias[c]}. */
    public static BiasGelu biasGelu(double[] x, double[] bias, int rows, int cols) {
        requireMatrix(x, rows, cols, "x");
        requireVector(bias, cols, "bias");
        double[] y = new double[rows * cols];
        double[] pre = new double[rows * cols];
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < cols; c++) {
                pre[r * cols + c] = x[r * cols + c] + bias[c];
                y[r * cols + c] = gelu(pre[r * cols + c]);
            }
        }
        return new BiasGelu(y, pre);
    }

    public static double sigmoid(double a) {
        return 1 / (1 + Math.exp(-a));
    }

    /** {@code silu(a) = a * sigmoid(a)}. */
    public static double silu(double a) {
        return a * sigmoid(a);
    }

    /** {@code silu'(a) = s (1 + a (1 - s))}, s = sigmoid(a). */
    public static double siluDerivative(double a) {
        double s = sigmoid(a);
        return s * (1 + a * (1 - s));
    }

    /**
     * SwiGLU: x is {@code rows x 2f}; {@code y[r][c] = silu(x[r][c]) * x[r][f + c]} for c < f (the first half is
     * activated, the second is the gate's linear half, as Megatron-LM splits the fc1 output).
     */
    public static double[] swiglu(double[] x, int rows, int f) {
        requireMatrix(x, rows, 2 * f, "x");
        double[] y = new double[rows * f];
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < f; c++) {
                y[r * f + c] = silu(x[r * 2 * f + c]) * x[r * 2 * f + f + c];
            }
        }
        return y;
    }

    /**
     * SwiGLU backward: dy is {@code rows x f}, the result {@code rows x 2f}: {@code da = dy * b * silu'(a)} in the
     * first half, {@code db = dy * silu(a)} in the second.
     */
    public static double[] swigluBackward(double[] dy, double[] x, int rows, int f) {
        requireMatrix(dy, rows, f, "dy");
        requireMatrix(x, rows, 2 * f, "x");
        double[] dx = new double[rows * 2 * f];
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < f; c++) {
                double a = x[r * 2 * f + c];
                double b = x[r * 2 * f + f + c];
                double g = dy[r * f + c];
                dx[r * 2 * f + c] = g * b * siluDerivative(a);
                dx[r * 2 * f + f + c] = g * silu(a);
            }
        }
        return dx;
    }

    /** Column sums over rows: the bias gradient of a GEMM whose output gradient is {@code m}. */
    public static double[] columnSums(double[] m, int rows, int cols) {
        requireMatrix(m, rows, cols, "matrix");
        double[] s = new double[cols];
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < cols; c++) {
                s[c] += m[r * cols + c];
            }
        }
        return s;
    }

    private static void requireMatrix(double[] m, int rows, int cols, String what) {
        Objects.requireNonNull(m, what);
        if (rows < 1 || cols < 1) {
            throw new IllegalArgumentException(what + ": shape must be positive, got " + rows + "x" + cols);
        }
        if (m.length != (long) rows * cols) {
            throw new IllegalArgumentException(what + " must hold " + rows + "x" + cols + " = " + (long) rows * cols
                    + " values, got " + m.length);
        }
    }

    private static void requireVector(double[] v, int n, String what) {
        Objects.requireNonNull(v, what);
        if (v.length != n) {
            throw new IllegalArgumentException(what + " must hold " + n + " values, got " + v.length);
        }
    }

    private static void requireSameLength(double[] a, double[] b) {
        if (a.length != b.length) {
            throw new IllegalArgumentException("dy and x differ in length: " + a.length + " vs " + b.length);
        }
    }

    /** The MSE gradient and partial sums ({@code LayerKernels.mseGrad}): dy = scale (y - t), rowSquares = sum d^2. */
    public record MseGrad(double[] dy, double[] rowSquares) {
    }

    public static MseGrad mseGrad(double[] y, double[] target, int rows, int cols, double scale) {
        requireMatrix(y, rows, cols, "y");
        requireMatrix(target, rows, cols, "target");
        double[] dy = new double[rows * cols];
        double[] sq = new double[rows];
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < cols; c++) {
                double d = y[r * cols + c] - target[r * cols + c];
                dy[r * cols + c] = scale * d;
                sq[r] += d * d;
            }
        }
        return new MseGrad(dy, sq);
    }

    /** One SGD step ({@code LayerKernels.sgdStep}): {@code w - lr g}. */
    public static double[] sgdStep(double[] w, double[] g, double lr) {
        if (w.length != g.length) {
            throw new IllegalArgumentException("w has " + w.length + " elements, g " + g.length);
        }
        double[] out = new double[w.length];
        for (int i = 0; i < w.length; i++) {
            out[i] = w[i] - lr * g[i];
        }
        return out;
    }
}

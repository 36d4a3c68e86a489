package dev.ubuf.plan;

import java.util.Arrays;
import java.util.EnumMap;
import java.util.Map;
import java.util.Objects;

/**
 * One simulated rank's matrices for {@link HostPlanExecutor}: a row-major {@code double[]} per declared
 * {@link BufferRole}, all filled with NaN at creation so that a read of data nobody wrote shows up as NaN.
 * The caller sets tensors and reads results through this view; inside a {@link HostPlanExecutor.CallHooks}
 * callback the accesses count as the caller stream's, so the race detector checks them against the plan's steps.
 */
public final class HostRankMemory {
    private final HostPlanExecutor owner;
    private final int rank;
    private final Map<BufferRole, MatrixSpec> specs;
    private final Map<BufferRole, double[]> data = new EnumMap<>(BufferRole.class);
    private final Map<Fp8Scaling.Scale, Double> scales = new EnumMap<>(Fp8Scaling.Scale.class);
    private double outputScale = Double.NaN;
    private double outputAmax;

    HostRankMemory(HostPlanExecutor owner, int rank, Map<BufferRole, MatrixSpec> specs) {
        this.owner = owner;
        this.rank = rank;
        this.specs = specs;
        for (MatrixSpec m : specs.values()) {
            double[] a = new double[Math.toIntExact(m.elements())];
            Arrays.fill(a, Double.NaN);
            data.put(m.role(), a);
        }
    }

    public int rank() {
        return rank;
    }

    public boolean has(BufferRole role) {
        return specs.containsKey(role);
    }

    public MatrixSpec spec(BufferRole role) {
        MatrixSpec m = specs.get(role);
        if (m == null) {
            throw new IllegalArgumentException("rank " + rank + "'s plan declares no " + role + " matrix");
        }
        return m;
    }

    /** Sets the whole matrix from a row-major array of exactly rows*cols values. */
    public void set(BufferRole role, double[] rowMajor) {
        setRows(role, 0, rowMajor);
    }

    /** Sets whole rows [firstRow, firstRow + values.length / cols) from a row-major array. */
    public void setRows(BufferRole role, long firstRow, double[] rowMajor) {
        Objects.requireNonNull(rowMajor, "rowMajor");
        Region r = rowsRegion(role, firstRow, rowMajor.length);
        owner.callerAccess(rank, role, r, true);
        System.arraycopy(rowMajor, 0, data.get(role), Math.toIntExact(firstRow * r.cols()), rowMajor.length);
    }

    /** A copy of the whole matrix, row-major. */
    public double[] get(BufferRole role) {
        return getRows(role, 0, spec(role).rows());
    }

    /** A copy of rows [firstRow, firstRow + rows), row-major. */
    public double[] getRows(BufferRole role, long firstRow, long rows) {
        MatrixSpec m = spec(role);
        Region r = rowsRegion(role, firstRow, Math.multiplyExact(rows, m.cols()));
        owner.callerAccess(rank, role, r, false);
        int from = Math.toIntExact(firstRow * m.cols());
        return Arrays.copyOfRange(data.get(role), from, from + Math.toIntExact(rows * m.cols()));
    }

    /**
     * Sets the dequantization scale {@code which} (the caller's scale_inv) that FP8 GEMM steps read from now on;
     * set it before the call, or in {@code beforeCall}.
     */
    public void setScale(Fp8Scaling.Scale which, double value) {
        Objects.requireNonNull(which, "which");
        if (!Double.isFinite(value)) {
            throw new IllegalArgumentException("scale " + which + " must be finite, got " + value);
        }
        scales.put(which, value);
    }

    /** The scale an FP8 GEMM step reads; an unset one is an error naming it. */
    double scale(Fp8Scaling.Scale which) {
        Double v = scales.get(which);
        if (v == null) {
            throw new IllegalStateException("rank " + rank + " runs an fp8 GEMM but its " + which
                    + " scale was never set (HostRankMemory.setScale)");
        }
        return v;
    }

    /**
     * Sets the quantization scale of an FP8 output that {@link PlanStep.Quantize} steps use from now on
     * (output = fp8(value * scale)); set it before the call, or in {@code beforeCall}.
     */
    public void setOutputScale(double value) {
        if (!Double.isFinite(value) || value <= 0) {
            throw new IllegalArgumentException("the output scale must be finite and positive, got " + value);
        }
        outputScale = value;
    }

    /** The largest |value| any Quantize step of this rank has quantized since the last {@link #resetOutputAmax()}. */
    public double outputAmax() {
        return outputAmax;
    }

    public void resetOutputAmax() {
        outputAmax = 0;
    }

    double outputScale() {
        if (Double.isNaN(outputScale)) {
            throw new IllegalStateException("rank " + rank + " quantizes its fp8 output but its output scale was never"
                    + " set (HostRankMemory.setOutputScale)");
        }
        return outputScale;
    }

    void raiseOutputAmax(double v) {
        outputAmax = Math.max(outputAmax, v);
    }

    double[] raw(BufferRole role) {
        double[] a = data.get(role);
        if (a == null) {
            throw new IllegalStateException("rank " + rank + " has no " + role + " matrix");
        }
        return a;
    }

    private Region rowsRegion(BufferRole role, long firstRow, long values) {
        MatrixSpec m = spec(role);
        if (values == 0 || values % m.cols() != 0) {
            throw new IllegalArgumentException(role + " has " + m.cols() + " columns; " + values
                    + " values are not a positive number of whole rows");
        }
        long rows = values / m.cols();
        if (firstRow < 0 || firstRow + rows > m.rows()) {
            throw new IllegalArgumentException("rows " + firstRow + ".." + (firstRow + rows) + " outside " + role
                    + " of " + m.rows() + "x" + m.cols());
        }
        return Region.rows(role, rank, firstRow, rows, m.cols());
    }
}

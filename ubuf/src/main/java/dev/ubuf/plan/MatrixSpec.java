package dev.ubuf.plan;

import dev.ubuf.tensor.DType;

import java.util.Objects;

/** Logical shape and element type of one matrix a plan uses (row-major; the executor binds strides). */
public record MatrixSpec(BufferRole role, DType dtype, long rows, long cols) {
    public MatrixSpec {
        Objects.requireNonNull(role, "role");
        Objects.requireNonNull(dtype, "dtype");
        if (rows <= 0 || cols <= 0) {
            throw new IllegalArgumentException(role + " must have positive shape, got " + rows + "x" + cols);
        }
    }

    public long elements() {
        return rows * cols;
    }

    public long bytes() {
        return elements() * dtype.bytes();
    }
}

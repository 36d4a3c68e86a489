package dev.ubuf.tensor;

import dev.ubuf.cuda.DeviceMemory;

import java.util.Objects;

/**
 * A row-major matrix inside device memory: {@code rows} x {@code cols} elements of {@code dtype}, rows
 * {@code ld} elements apart, starting {@code byteOffset} bytes into {@code memory}. Validated on construction, so a
 * view can never address bytes outside its memory.
 */
public record TensorView(DeviceMemory memory, long byteOffset, long rows, long cols, long ld, DType dtype) {
    public TensorView {
        Objects.requireNonNull(memory, "memory");
        Objects.requireNonNull(dtype, "dtype");
        if (rows <= 0 || cols <= 0) {
            throw new IllegalArgumentException("tensor shape must be positive, got " + rows + "x" + cols);
        }
        if (ld < cols) {
            throw new IllegalArgumentException("leading dimension " + ld + " is smaller than cols " + cols);
        }
        if (byteOffset < 0 || byteOffset % dtype.bytes() != 0) {
            throw new IllegalArgumentException("byte offset " + byteOffset + " is not a multiple of the "
                    + dtype.shortName() + " element size " + dtype.bytes());
        }
        long need = byteOffset + spanBytes(rows, cols, ld, dtype);
        if (need > memory.bytes()) {
            throw new IllegalArgumentException("a " + rows + "x" + cols + " " + dtype.shortName() + " view (ld " + ld
                    + ", offset " + byteOffset + ") needs " + need + " bytes but " + memory + " has " + memory.bytes());
        }
    }

    /** A dense matrix at the start of {@code memory}. */
    public static TensorView of(DeviceMemory memory, long rows, long cols, DType dtype) {
        return new TensorView(memory, 0, rows, cols, cols, dtype);
    }

    /** Bytes from the first to one past the last element. */
    public static long spanBytes(long rows, long cols, long ld, DType dtype) {
        return ((rows - 1) * ld + cols) * dtype.bytes();
    }

    /** Device address of element (0, 0); fails if the memory was closed. */
    public long address() {
        memory.assertOpen();
        return memory.address() + byteOffset;
    }

    public long elementAddress(long row, long col) {
        return address() + (row * ld + col) * dtype.bytes();
    }

    public long elements() {
        return rows * cols;
    }

    public boolean isContiguous() {
        return ld == cols;
    }

    /** Whether the elements form one run in memory: {@link #isContiguous} or a single row, whatever its ld. */
    public boolean isDense() {
        return ld == cols || rows == 1;
    }

    public long spanBytes() {
        return spanBytes(rows, cols, ld, dtype);
    }

    /** Rows [first, first + count). */
    public TensorView rows(long first, long count) {
        if (first < 0 || count <= 0 || first + count > rows) {
            throw new IllegalArgumentException("rows " + first + "+" + count + " outside " + rows);
        }
        return new TensorView(memory, byteOffset + first * ld * dtype.bytes(), count, cols, ld, dtype);
    }

    /** Columns [first, first + count). */
    public TensorView cols(long first, long count) {
        if (first < 0 || count <= 0 || first + count > cols) {
            throw new IllegalArgumentException("cols " + first + "+" + count + " outside " + cols);
        }
        return new TensorView(memory, byteOffset + first * dtype.bytes(), rows, count, ld, dtype);
    }

    public void requireShape(long r, long c, String what) {
        if (rows != r || cols != c) {
            throw new IllegalArgumentException(what + " must be " + r + "x" + c + ", got " + rows + "x" + cols);
        }
    }

    public void requireDType(DType expected, String what) {
        if (dtype != expected) {
            throw new IllegalArgumentException(what + " must be " + expected.shortName() + ", got " + dtype.shortName());
        }
    }

    @Override
    public String toString() {
        return dtype.shortName() + "[" + rows + "x" + cols + (ld != cols ? ", ld " + ld : "") + "]";
    }
}

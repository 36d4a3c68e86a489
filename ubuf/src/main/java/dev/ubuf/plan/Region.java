package dev.ubuf.plan;

import java.util.Objects;

/**
 * A rectangle of one rank's instance of a matrix: rows [row, row+rows), columns [col, col+cols).
 * {@code rank} is the rank whose memory holds it; only peer-visible buffers (UBUF) may name another rank.
 */
public record Region(BufferRole buffer, int rank, long row, long rows, long col, long cols) {
    public Region {
        Objects.requireNonNull(buffer, "buffer");
        if (rank < 0 || row < 0 || col < 0 || rows <= 0 || cols <= 0) {
            throw new IllegalArgumentException("bad region " + buffer + "@" + rank
                    + " rows " + row + "+" + rows + " cols " + col + "+" + cols);
        }
    }

    /** Whole rows [row, row+rows) of a matrix with {@code cols} columns. */
    public static Region rows(BufferRole buffer, int rank, long row, long rows, long cols) {
        return new Region(buffer, rank, row, rows, 0, cols);
    }

    public long endRow() {
        return row + rows;
    }

    public long endCol() {
        return col + cols;
    }

    public boolean sameShape(Region o) {
        return rows == o.rows && cols == o.cols;
    }

    @Override
    public String toString() {
        return buffer + "@" + rank + "[" + row + ".." + endRow() + ", " + col + ".." + endCol() + ")";
    }
}

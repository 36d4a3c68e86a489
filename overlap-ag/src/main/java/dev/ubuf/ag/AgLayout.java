package dev.ubuf.ag;

import dev.ubuf.plan.BufferRole;
import dev.ubuf.plan.Fp8Scaling;
import dev.ubuf.plan.PlanBuilder;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.plan.Region;

import java.util.Objects;

/** Chunk arithmetic shared by the AG schedules: chunk c of the gathered buffer is rank c's shard. */
final class AgLayout {
    final AgShape shape;
    final AgOptions options;
    final int rank;
    final int tp;
    final long rows;
    /** The shard is in chunk {@code rank} of UBUF before the call: the option, or the shape's producer wrote it. */
    final boolean inputInUbuf;

    AgLayout(AgShape shape, int rank, AgOptions options) {
        this.shape = Objects.requireNonNull(shape, "shape");
        this.options = Objects.requireNonNull(options, "options");
        if (rank < 0 || rank >= shape.tp()) {
            throw new IllegalArgumentException("rank " + rank + " outside a domain of tp = " + shape.tp());
        }
        this.rank = rank;
        this.tp = shape.tp();
        this.rows = shape.chunkRows();
        this.inputInUbuf = options.inputInUbuf() || shape.inputInUserBuffer();
    }

    int next(int distance) {
        return Math.floorMod(rank + distance, tp);
    }

    PlanBuilder builder(String method) {
        PlanBuilder b = new PlanBuilder("ag", method, rank, tp);
        if (!inputInUbuf) {
            b.matrix(BufferRole.INPUT, shape.inputDtype(), rows, shape.k());
        }
        b.matrix(BufferRole.UBUF, shape.inputDtype(), shape.m(), shape.k());
        if (!method.equals("bulk")) {
            b.matrix(BufferRole.WEIGHT, shape.weightDtype(), shape.k(), shape.n());
            b.matrix(BufferRole.OUTPUT, shape.dtype(), shape.m(), shape.n());
        }
        return b;
    }

    /** Chunks [first, first+count) of the gathered buffer in {@code owner}'s memory. */
    Region ubuf(int owner, int first, int count) {
        return ubufRows(owner, first, 0, count * rows);
    }

    /** Rows [lo, lo+count) of chunk {@code chunk} of the gathered buffer in {@code owner}'s memory. */
    Region ubufRows(int owner, int chunk, long lo, long count) {
        return Region.rows(BufferRole.UBUF, owner, chunk * rows + lo, count, shape.k());
    }

    /** Rows [lo, lo+count) of this rank's shard where the call finds it. */
    Region shardRows(long lo, long count) {
        return inputInUbuf ? ubufRows(rank, rank, lo, count)
                : Region.rows(BufferRole.INPUT, rank, lo, count, shape.k());
    }

    /** The GEMM of rows [lo, lo+count) of chunk {@code chunk} read from {@code a}, into the same output rows. */
    PlanStep.Gemm gemmRows(int stream, Region a, int chunk, long lo, long count) {
        return new PlanStep.Gemm(stream, a, weight(), outRows(chunk, lo, count), false,
                shape.fp8().isPresent() ? Fp8Scaling.INPUT_X_WEIGHT : null);
    }

    /** This rank's shard where the call finds it: INPUT, or chunk {@code rank} of UBUF. */
    Region shard() {
        return shardRows(0, rows);
    }

    /** Output rows of chunks [first, first+count). */
    Region out(int first, int count) {
        return outRows(first, 0, count * rows);
    }

    /** Output rows [lo, lo+count) of chunk {@code chunk}. */
    Region outRows(int chunk, long lo, long count) {
        return Region.rows(BufferRole.OUTPUT, rank, chunk * rows + lo, count, shape.n());
    }

    Region weight() {
        return Region.rows(BufferRole.WEIGHT, rank, 0, shape.k(), shape.n());
    }

    /** The GEMM of chunks [first, first+count) read from {@code a}. */
    PlanStep.Gemm gemm(int stream, Region a, int first, int count) {
        return gemmRows(stream, a, first, 0, count * rows);
    }

    /** Puts the shard into UBUF chunk {@code rank} (so the call hands out the whole gathered input), if not there. */
    void ownShardIntoUbuf(PlanBuilder b, int stream) {
        if (!inputInUbuf) {
            b.add(new PlanStep.Copy(stream, shard(), ubuf(rank, rank, 1)));
        }
    }

    int[] computeStreams(PlanBuilder b, int needed) {
        int[] s = new int[Math.max(1, Math.min(options.computeStreams(), needed))];
        for (int i = 0; i < s.length; i++) {
            s[i] = b.stream(dev.ubuf.plan.StreamRole.COMPUTE);
        }
        return s;
    }
}

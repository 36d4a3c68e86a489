package dev.ubuf.rs;

import dev.ubuf.plan.BufferRole;
import dev.ubuf.plan.PlanBuilder;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.plan.Region;
import dev.ubuf.plan.StreamRole;

import java.util.ArrayList;
import java.util.List;

/**
 * Plan fragments shared by the pull methods (PIPELINE, BULK, ONESHOT). Every rank's user buffer holds its full
 * partial [m, n]; rank r pulls rows [r*m/tp, (r+1)*m/tp) of every rank's buffer and sums them into its output.
 *
 * <p>Flags on each rank (one sender per flag, as the IR requires): flag {@code s} counts "ready" signals from
 * sender s (its partial, or a block of it, may be read); flag {@code tp + q} counts credits from reader q (it has
 * finished reading this rank's buffer: oneshot and pipeline send their credits at the end of the call, scatter as
 * the next call starts, where it does not lengthen the call's tail). A rank's own two flags are declared with no
 * signals.
 */
final class PlanParts {
    private PlanParts() {
    }

    /** The pull-reduce kernel reads at most this many sources in one pass. */
    static final int MAX_PULL_SOURCES = 8;

    /** Why a pull method named {@code method} cannot run {@code shape}'s tp, or null when it can. */
    static String pullLimit(String method, RsShape shape) {
        return shape.tp() > MAX_PULL_SOURCES
                ? method + " pull-reduces from every rank; tp=" + shape.tp() + " exceeds " + MAX_PULL_SOURCES
                  + " sources (use ring)"
                : null;
    }

    static void checkRank(RsShape shape, int rank) {
        if (rank < 0 || rank >= shape.tp()) {
            throw new IllegalArgumentException("rank " + rank + " outside domain of tp=" + shape.tp());
        }
    }

    static int readyFlag(int sender) {
        return sender;
    }

    static int creditFlag(RsShape shape, int reader) {
        return shape.tp() + reader;
    }

    /**
     * A COMM stream per peer, slot i for the i-th peer a rank sends to or pulls from; with {@code one} every slot is
     * the same stream, so the transfers run one after another ({@code serial=1} of scatter and bulk).
     */
    static int[] peerStreams(PlanBuilder b, boolean one) {
        int[] streams = new int[b.tp() - 1];
        for (int i = 0; i < streams.length; i++) {
            streams[i] = one && i > 0 ? streams[0] : b.stream(StreamRole.COMM);
        }
        return streams;
    }

    /** Declares the ready flags (readyPerCall signals from each peer) and the credit flags (one per peer). */
    static void declarePullFlags(PlanBuilder b, int readyPerCall) {
        for (int s = 0; s < b.tp(); s++) {
            b.flag(s == b.rank() ? 0 : readyPerCall);
        }
        for (int q = 0; q < b.tp(); q++) {
            b.flag(q == b.rank() ? 0 : 1);
        }
    }

    /** Signals every peer on the flag that names this rank (ready or credit). */
    static void signalPeers(PlanBuilder b, int stream, int flagAtPeer) {
        for (int p = 0; p < b.tp(); p++) {
            if (p != b.rank()) {
                b.add(new PlanStep.Signal(stream, p, flagAtPeer));
            }
        }
    }

    /** Waits until every peer's ready (or credit) flag reaches {@code count} (0: all signals of earlier calls). */
    static void waitPeers(PlanBuilder b, int stream, RsShape shape, boolean credit, int count) {
        for (int p = 0; p < b.tp(); p++) {
            if (p != b.rank()) {
                b.add(new PlanStep.WaitSignal(stream, credit ? creditFlag(shape, p) : readyFlag(p), count));
            }
        }
    }

    /**
     * OUTPUT[:, cols] = sum over ranks of UBUF@rank rows of this rank, columns cols (+ bias). Sources start at this
     * rank and go round the ring, so the ranks' pulls start on different peers.
     */
    static void pullReduceOwnRows(PlanBuilder b, int stream, RsShape shape, long col, long cols) {
        long mc = shape.rowsPerRank();
        List<Region> sources = new ArrayList<>();
        for (int i = 0; i < b.tp(); i++) {
            int p = (b.rank() + i) % b.tp();
            sources.add(new Region(BufferRole.UBUF, p, b.rank() * mc, mc, col, cols));
        }
        Region dst = new Region(BufferRole.OUTPUT, b.rank(), 0, mc, col, cols);
        b.add(new PlanStep.Reduce(stream, sources, dst, false));
        if (shape.bias()) {
            b.add(new PlanStep.AddBias(stream, dst));
        }
    }

    /** Declares OUTPUT [m/tp, n] and, when the shape has one, BIAS [1, n]. */
    static void declareOutput(PlanBuilder b, RsShape shape) {
        b.matrix(BufferRole.OUTPUT, shape.dtype(), shape.rowsPerRank(), shape.n());
        if (shape.bias()) {
            b.matrix(BufferRole.BIAS, shape.dtype(), 1, shape.n());
        }
    }

    /** Declares INPUT X [m, k] and WEIGHT [k, n] (FP8 for an FP8 shape). */
    static void declareOperands(PlanBuilder b, RsShape shape) {
        b.matrix(BufferRole.INPUT, shape.inputDtype(), shape.m(), shape.k());
        b.matrix(BufferRole.WEIGHT, shape.weightDtype(), shape.k(), shape.n());
    }

    /** c = x * w (+ c): an FP8 GEMM (x dequantized by the input's scale, w by the weight's) for an FP8 shape. */
    static PlanStep.Gemm gemm(RsShape shape, int stream, Region x, Region w, Region c, boolean accumulate) {
        return new PlanStep.Gemm(stream, x, w, c, accumulate,
                shape.fp8().isPresent() ? dev.ubuf.plan.Fp8Scaling.INPUT_X_WEIGHT : null);
    }

    /** c = x * w + addend in one pass (FP8 as {@link #gemm}; the roundings of dev.ubuf.gemm.Gemm#multiplyAdd). */
    static PlanStep.Gemm gemmAdd(RsShape shape, int stream, Region x, Region w, Region addend, Region c) {
        return new PlanStep.Gemm(stream, x, w, c, false,
                shape.fp8().isPresent() ? dev.ubuf.plan.Fp8Scaling.INPUT_X_WEIGHT : null, addend);
    }
}

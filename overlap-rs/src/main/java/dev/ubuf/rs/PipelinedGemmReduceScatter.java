package dev.ubuf.rs;

import dev.ubuf.exec.ExecutionSettings;
import dev.ubuf.op.OverlapShape;
import dev.ubuf.plan.BufferRole;
import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanBuilder;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.plan.Region;
import dev.ubuf.plan.StreamRole;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Pipelined ("split") GEMM→ReduceScatter: the GEMM runs in {@code numSplits} column blocks; block j of every
 * rank's full partial X·W[:, j] lands in that rank's user buffer [m, n] (output dtype), and each rank pull-reduces
 * its own rows of block j from all ranks into OUTPUT (+ bias) while block j+1 computes.
 *
 * <p>The pull-reduce kernel needs SMs beside the running GEMM: the executor gives the GEMMs an SM budget of
 * device SMs minus {@link RsOptions#gemmSmMargin()} (cuBLASLt SM_COUNT_TARGET) for this method.
 *
 * <p>Streams: {@code min(computeStreams, numSplits)} COMPUTE streams (blocks round-robin), a COMM "signal" stream
 * that tells every peer "block j ready" after GEMM j (one stream per flag keeps the absolute sequence numbers
 * in order even when the GEMMs finish out of order), and a COMM "reduce" stream that runs the pull-reduce kernel.
 *
 * <p>Flags (see {@link PlanParts}): ready from each peer, numSplits per call (block j is signal j+1); one credit
 * per peer per call, sent after the last block's reduce. Before its first GEMM of a call, each compute stream
 * waits for every credit of the previous call: no peer is still reading this buffer when it is overwritten.
 */
public final class PipelinedGemmReduceScatter implements RsOverlapMethod {
    /** For {@link java.util.ServiceLoader}, which makes the method through this constructor. */
    public PipelinedGemmReduceScatter() {
    }

    @Override
    public String name() {
        return "pipeline";
    }

    @Override
    public Optional<String> whyUnsupported(RsShape shape, RsOptions options) {
        // cuBLASLt's fp8 kernels write 16-byte rows: a column block of the partial must be a multiple of that
        if (shape.fp8().isPresent() && shape.n() % options.numSplits() == 0
                && (shape.n() / options.numSplits()) * shape.dtype().bytes() % 16 != 0) {
            return Optional.of("pipeline: fp8 GEMMs write 16-byte rows, but a block of n/numSplits=" + shape.n()
                    / options.numSplits() + " " + shape.dtype().shortName() + " columns is not");
        }
        String pullLimit = PlanParts.pullLimit(name(), shape);
        return Optional.ofNullable(pullLimit != null ? pullLimit
                : shape.n() % options.numSplits() != 0
                ? "pipeline: n=" + shape.n() + " is not divisible by numSplits=" + options.numSplits()
                : null);
    }

    /** Columns per block: n / numSplits. */
    public static long blockCols(RsShape shape, RsOptions options) {
        return shape.n() / options.numSplits();
    }

    @Override
    public Plan plan(RsShape shape, RsOptions options, int rank) {
        PlanParts.checkRank(shape, rank);
        int splits = options.numSplits();
        long cols = blockCols(shape, options);

        PlanBuilder b = new PlanBuilder("rs", name(), rank, shape.tp());
        PlanParts.declareOperands(b, shape);
        PlanParts.declareOutput(b, shape);
        b.matrix(BufferRole.UBUF, shape.dtype(), shape.m(), shape.n());
        PlanParts.declarePullFlags(b, splits);
        int[] compute = new int[Math.min(options.computeStreams(), splits)];
        for (int s = 0; s < compute.length; s++) {
            compute[s] = b.stream(StreamRole.COMPUTE);
        }
        int signal = b.stream(StreamRole.COMM);
        int reduce = b.stream(StreamRole.COMM);

        for (int j = 0; j < splits; j++) {
            int stream = compute[j % compute.length];
            if (j < compute.length) {
                PlanParts.waitPeers(b, stream, shape, true, 0);
            }
            long col = j * cols;
            b.add(PlanParts.gemm(shape, stream,
                    Region.rows(BufferRole.INPUT, rank, 0, shape.m(), shape.k()),
                    new Region(BufferRole.WEIGHT, rank, 0, shape.k(), col, cols),
                    new Region(BufferRole.UBUF, rank, 0, shape.m(), col, cols), false));
            int done = b.record(stream);
            b.add(new PlanStep.WaitEvent(signal, done));
            PlanParts.signalPeers(b, signal, PlanParts.readyFlag(rank));
            b.add(new PlanStep.WaitEvent(reduce, done));
            PlanParts.waitPeers(b, reduce, shape, false, j + 1);
            PlanParts.pullReduceOwnRows(b, reduce, shape, col, cols);
        }
        PlanParts.signalPeers(b, reduce, PlanParts.creditFlag(shape, rank));
        return shape.finish(b.build());
    }

    @Override
    public List<String> keys() {
        return List.of("cs", "splits", "margin");
    }

    /**
     * 2, 4 and 8 column blocks, where they divide n; each on one compute stream (first: a near-tie takes it) and on
     * the default streams: block GEMMs issued on several streams may run side by side and finish together, which
     * holds every reduction back to the end (seen in a 70B, tp 4 trace), where on one stream each block's reduction
     * starts as its GEMM ends.
     */
    @Override
    public List<Map<String, String>> tuningSpace(OverlapShape shape) {
        if (!(shape instanceof RsShape rs)) {
            return List.of();
        }
        List<Map<String, String>> space = new ArrayList<>();
        for (int splits : new int[]{2, 4, 8}) {
            if (whyUnsupported(rs, RsOptions.DEFAULTS.withNumSplits(splits)).isEmpty()) {
                space.add(Map.of("splits", Integer.toString(splits), "cs", "1"));
                space.add(Map.of("splits", Integer.toString(splits)));
            }
        }
        return space;
    }

    /** The GEMMs leave {@code margin} SMs to the pull-reduce kernel that runs beside the next block. */
    @Override
    public ExecutionSettings settings(RsSchedule schedule, ExecutionSettings base, int smCount) {
        if (base.gemmSmBudget() != 0) {
            return base;
        }
        return base.withGemmSmBudget(Math.max(1, smCount - schedule.rsOptions().gemmSmMargin()));
    }
}

package dev.ubuf.rs;

import dev.ubuf.plan.Plan;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * One GEMM→ReduceScatter method compiled for one shape: it yields the plan of every rank of the domain.
 * Making a schedule validates shape and options against the method; {@link #plan(int)} is then pure arithmetic.
 */
public sealed interface RsSchedule
        permits RingExchangeGemmReduceScatter, PipelinedGemmReduceScatter, BulkReduceScatter,
        OneShotGemmReduceScatter {

    /** The pull-reduce kernel reads at most this many sources in one pass. */
    int MAX_PULL_SOURCES = 8;

    RsMethod method();

    RsShape shape();

    RsOptions options();

    /** The plan of rank {@code rank} (0..tp-1). */
    Plan plan(int rank);

    /** The plans of all ranks, checked to agree on every flag ({@link Plan#validateDomain}). */
    default List<Plan> plans() {
        List<Plan> plans = new ArrayList<>();
        for (int r = 0; r < shape().tp(); r++) {
            plans.add(plan(r));
        }
        Plan.validateDomain(plans);
        return List.copyOf(plans);
    }

    /** The schedule of {@code method} for this shape; throws IllegalArgumentException if the method cannot run it. */
    static RsSchedule of(RsMethod method, RsShape shape, RsOptions options) {
        Objects.requireNonNull(method, "method");
        return switch (method) {
            case RING -> new RingExchangeGemmReduceScatter(shape, options);
            case PIPELINE -> new PipelinedGemmReduceScatter(shape, options);
            case BULK -> new BulkReduceScatter(shape, options);
            case ONESHOT -> new OneShotGemmReduceScatter(shape, options);
        };
    }

    /** Why {@code method} cannot run this shape with these options, or empty when it can. */
    static Optional<String> whyUnsupported(RsMethod method, RsShape shape, RsOptions options) {
        Objects.requireNonNull(method, "method");
        Objects.requireNonNull(shape, "shape");
        Objects.requireNonNull(options, "options");
        String pullLimit = shape.tp() > MAX_PULL_SOURCES
                ? method.shortName() + " pull-reduces from every rank; tp=" + shape.tp() + " exceeds "
                  + MAX_PULL_SOURCES + " sources (use ring)"
                : null;
        if (shape.fp8().isPresent()) {
            String fp8 = switch (method) {
                case BULK -> "bulk: runs no GEMM, so fp8 operands mean nothing to it (reduce-scatter the partial in "
                        + shape.dtype().shortName() + ")";
                // cuBLASLt's fp8 kernels write 16-byte rows: a column block of the partial must be a multiple of that
                case PIPELINE -> shape.n() % options.numSplits() == 0
                        && (shape.n() / options.numSplits()) * shape.dtype().bytes() % 16 != 0
                        ? "pipeline: fp8 GEMMs write 16-byte rows, but a block of n/numSplits=" + shape.n()
                          / options.numSplits() + " " + shape.dtype().shortName() + " columns is not"
                        : null;
                default -> null;
            };
            if (fp8 != null) {
                return Optional.of(fp8);
            }
        }
        String why = switch (method) {
            case RING -> options.ringSubChunks() > shape.rowsPerRank()
                    ? "ring: ringSubChunks=" + options.ringSubChunks() + " exceeds m/tp=" + shape.rowsPerRank()
                      + " rows per chunk"
                    : null;
            case PIPELINE -> pullLimit != null ? pullLimit
                    : shape.n() % options.numSplits() != 0
                    ? "pipeline: n=" + shape.n() + " is not divisible by numSplits=" + options.numSplits()
                    : null;
            case BULK, ONESHOT -> pullLimit;
        };
        return Optional.ofNullable(why);
    }
}

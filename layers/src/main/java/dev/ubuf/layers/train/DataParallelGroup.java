package dev.ubuf.layers.train;

import dev.ubuf.bootstrap.Bootstrap;
import dev.ubuf.bootstrap.BootstrapException;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.layers.tp.Collectives;
import dev.ubuf.layers.tp.Parameter;
import dev.ubuf.nccl.NcclCommunicator;
import dev.ubuf.nccl.NcclRedOp;
import dev.ubuf.nccl.NcclUniqueId;
import dev.ubuf.resource.Closer;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * One rank's data-parallel (DP) group: the ranks at the same position of every TP group
 * ({@link dev.ubuf.bootstrap.DomainLayout#dpGroupRanks}), which hold the same shard of the same model and train on
 * different batches. After backward, {@link #averageGradients} replaces each parameter's fp32 gradient by its mean over
 * the group (one NCCL all-reduce per parameter, fused into one NCCL group call), so that the same optimizer step on
 * every replica keeps their weights identical.
 *
 * <p>The group has its own NCCL communicator, made over the DP bootstrap (rank 0 of the group makes the unique id and
 * broadcasts it with a deadline); the TP communicator, its user buffers and its NCCL communicator never span the DP
 * group. A group of one rank makes no communicator and averaging does nothing.
 *
 * <p>Not thread-safe: one rank's thread drives it. The bootstrap stays the caller's.
 */
public final class DataParallelGroup implements AutoCloseable {
    private final Bootstrap bootstrap;
    private final CudaContext context;
    private final NcclCommunicator nccl;
    private final Closer closer = new Closer("data-parallel group");

    private DataParallelGroup(Bootstrap bootstrap, CudaContext context, NcclCommunicator nccl) {
        this.bootstrap = bootstrap;
        this.context = context;
        this.nccl = nccl;
        if (nccl != null) {
            closer.onClose("NCCL communicator", () -> {
                context.makeCurrent();
                if (bootstrap.knownFailure().isPresent()) {
                    nccl.abort();
                } else {
                    nccl.close();
                }
            });
        }
    }

    /**
     * Joins the group: collective over every rank of {@code dp}, each with its own device's {@code context}. Blocks
     * in ncclCommInitRank until every member has arrived; the unique id's broadcast just before it (with the
     * bootstrap's deadline) is where a missing member is reported.
     */
    public static DataParallelGroup join(Bootstrap dp, CudaContext context) {
        Objects.requireNonNull(dp, "dp");
        Objects.requireNonNull(context, "context");
        if (dp.size() == 1) {
            return new DataParallelGroup(dp, context, null);
        }
        byte[] id = dp.broadcast(dp.rank() == 0 ? NcclUniqueId.generate().bytes() : null, 0);
        context.makeCurrent();
        return new DataParallelGroup(dp, context, NcclCommunicator.initRank(new NcclUniqueId(id), dp.size(),
                dp.rank()));
    }

    /** Replicas in the group. */
    public int size() {
        return bootstrap.size();
    }

    /** This rank's place in the group (= the index of its TP group). */
    public int rank() {
        return bootstrap.rank();
    }

    /**
     * Enqueues on {@code stream}, in place, every gradient's mean over the group (collective: every member passes the
     * same parameters in the same order). The caller waits for the stream with its deadline. Fails before any GPU work
     * when the group is closed, the job is known to have failed, or a gradient is not contiguous fp32.
     */
    public void averageGradients(List<Parameter> parameters, CudaStream stream) {
        Objects.requireNonNull(parameters, "parameters");
        Objects.requireNonNull(stream, "stream");
        if (closer.isClosed()) {
            throw new IllegalStateException("data-parallel group of rank " + rank() + " is closed");
        }
        Optional<BootstrapException> failure = bootstrap.knownFailure();
        if (failure.isPresent()) {
            throw new IllegalStateException("rank " + rank() + " of the data-parallel group refused to average"
                    + " gradients: the job failed: " + failure.get().getMessage(), failure.get());
        }
        for (Parameter p : parameters) {
            TensorView g = p.grad();
            if (!g.isContiguous() || g.dtype() != DType.FP32) {
                throw new IllegalArgumentException(p.name() + " gradient must be contiguous fp32 for the all-reduce,"
                        + " got " + g);
            }
        }
        if (nccl == null || parameters.isEmpty()) {
            return;
        }
        context.makeCurrent();
        // Everything was checked above, so every member issues the whole group: no half-issued collective.
        NcclCommunicator.groupStart();
        try {
            for (Parameter p : parameters) {
                TensorView g = p.grad();
                nccl.allReduce(g.address(), g.address(), g.elements(), DType.FP32, NcclRedOp.AVG,
                        stream.nativeHandle());
            }
        } finally {
            NcclCommunicator.groupEnd();
        }
    }

    /**
     * {@link #averageGradients} of {@code parameters} as a data-parallel collective, which a context's
     * {@link Collectives} runs (traced as one NCCL span) or skips.
     */
    public Collectives.DataParallelCollective averaging(List<Parameter> parameters) {
        List<Parameter> ps = List.copyOf(parameters);
        return new Collectives.DataParallelCollective() {
            @Override
            public String name() {
                return "NCCL DP AllReduce avg of " + ps.size() + " gradients";
            }

            @Override
            public Map<String, Object> traceArgs() {
                long bytes = 0;
                for (Parameter p : ps) {
                    bytes += p.grad().elements() * Float.BYTES;
                }
                Map<String, Object> args = new LinkedHashMap<>();
                args.put("collective", "AllReduce");
                args.put("op", "avg");
                args.put("group", "data parallel: " + size() + " replicas, this rank is replica " + rank());
                args.put("tensors", ps.size());
                args.put("dtype", "fp32");
                args.put("bytes", bytes);
                return args;
            }

            @Override
            public void issue(CudaStream stream) {
                averageGradients(ps, stream);
            }
        };
    }

    /**
     * Frees the NCCL communicator: destroyed when the job is healthy (every member's stream must have drained), aborted
     * (ncclCommAbort, which also stops pending all-reduces) when the bootstrap knows of a failure, e.g. after this
     * rank's watchdog aborted the job. Idempotent.
     */
    @Override
    public void close() {
        closer.close();
    }

    @Override
    public String toString() {
        return "DataParallelGroup[rank " + rank() + " of " + size() + (closer.isClosed() ? ", closed]" : "]");
    }
}

package dev.ubuf.layers.tp;

import dev.ubuf.cuda.CudaStream;
import dev.ubuf.nccl.NcclCommunicator;
import dev.ubuf.nccl.NcclRedOp;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import dev.ubuf.trace.Tracer;

import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * How a context's layers communicate, chosen once when the {@link TpContext} is made: {@link #nccl()} (every
 * collective through NCCL or the overlapped op) for training, or {@link #none()} to time the compute alone. Each call
 * traces itself into {@code tracer}.
 */
public interface Collectives {
    /** Every collective through NCCL or the overlapped op. */
    static Collectives nccl() {
        return NcclCollectives.INSTANCE;
    }

    /**
     * No collective at all: each overlapped op runs its GEMMs alone, NCCL calls and the data-parallel average do
     * nothing. For timing the step's compute (and initialisation's tuning pass); results are wrong by design.
     */
    static Collectives none() {
        return NoCollectives.INSTANCE;
    }

    /** Issues one call of a layer GEMM's overlapped op on {@code stream}. */
    void call(OverlapCall call, Tracer tracer, CudaStream stream);

    /**
     * All-gather over the TP group of {@code count} words of type {@code words} per rank from src into dst;
     * {@code nccl} gives the group's NCCL communicator (made on first use), for the strategies that use it.
     */
    void allGather(Supplier<NcclCommunicator> nccl, TensorView src, TensorView dst, long count, DType words,
                   Tracer tracer, CudaStream stream);

    /** In-place all-reduce of fp32 tensors over the TP group, issued as one NCCL group (one launch). */
    void allReduce(Supplier<NcclCommunicator> nccl, List<TensorView> ts, NcclRedOp op, Tracer tracer,
                   CudaStream stream);

    /** Issues a collective of another group of ranks (the data-parallel gradient average). */
    void dataParallel(DataParallelCollective collective, Tracer tracer, CudaStream stream);

    /** A collective over a data-parallel group, which the context's strategy runs or skips as a whole. */
    interface DataParallelCollective {
        /** The span's name in a trace. */
        String name();

        /** The span's detail in a trace. */
        Map<String, Object> traceArgs();

        /** Enqueues the collective on {@code stream}. */
        void issue(CudaStream stream);
    }
}

package dev.ubuf.op;

import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.cuda.CudaEvent;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.exec.ExecutionSettings;
import dev.ubuf.exec.OperandBindings;
import dev.ubuf.devicekernels.DeviceKernels;
import dev.ubuf.tensor.TensorView;
import dev.ubuf.trace.TraceSpan;
import dev.ubuf.trace.TracedOp;

import java.util.List;

/**
 * One overlapped GEMM on one rank of a TP domain, ready to be called many times: a plan-backed op (a
 * {@link Schedule} of any registered method) or the NCCL reference (NCCL collective + one cuBLASLt GEMM on the
 * caller's stream). Making and closing one are collective: every rank of the domain does it together.
 *
 * <p>Operands ({@link OperandBindings}): AG: input = this rank's shard [m/tp, k], output [m, n]; RS: input [m, k],
 * output [m/tp, n], bias [1, n] when the shape has one; weight [k, n], or [n, k] with weightTransposed. A method
 * without GEMM (bulk) takes only what it moves. Everything is validated before any GPU work.
 */
public sealed interface OverlapOp extends AutoCloseable, TracedOp permits PlanOp, NcclReferenceOp {

    /** A plan-backed op running {@code schedule}. */
    static OverlapOp create(TpCommunicator comm, Schedule schedule, DeviceKernels kernels, ExecutionSettings settings) {
        return new PlanOp(comm, schedule, kernels, settings);
    }

    /**
     * A plan-backed op running {@code schedule} with the default execution settings, its copies on the copy engines
     * or, with {@code useCopyEngine} false, by an SM copy kernel (TE's {@code use_ce}).
     */
    static OverlapOp create(TpCommunicator comm, Schedule schedule, DeviceKernels kernels, boolean useCopyEngine) {
        return create(comm, schedule, kernels, ExecutionSettings.DEFAULT.withCopyEngine(useCopyEngine));
    }

    /** The unoverlapped reference: NCCL AllGather + GEMM, or GEMM + NCCL ReduceScatter (+ bias). */
    static OverlapOp ncclReference(TpCommunicator comm, OverlapShape shape, DeviceKernels kernels) {
        return new NcclReferenceOp(comm, shape, kernels);
    }

    OverlapShape shape();

    /** "ring", "pipeline", ..., or "nccl" for the reference: the results-file method. */
    String methodName();

    /** The method with its options, e.g. "ring:sub=4"; "nccl" for the reference. */
    @Override
    String label();

    /** The shape's key. */
    @Override
    default String traceKey() {
        return shape().key();
    }

    /** Issues one call on {@code stream} (forked from and joined back into it) and returns without waiting. */
    void forward(OperandBindings operands, CudaStream stream);

    /**
     * Issues this op's GEMMs alone, back to back on {@code stream}, with no communication: what the overlap hides
     * its communication behind, for benchmarks' ideal. The outputs are scratch, not the op's result.
     */
    void forwardGemmsOnly(OperandBindings operands, CudaStream stream);

    /**
     * The op's GEMMs alone, each on the compute stream the op issues it on, with nothing between them (an op of one
     * GEMM: {@link #forwardGemmsOnly}). Benchmarks time it as the third GEMM term of the ideal; results are scratch.
     */
    default void forwardGemmsOnTheirStreams(OperandBindings operands, CudaStream stream) {
        forwardGemmsOnly(operands, stream);
    }

    /**
     * Initialisation (collective): tunes the GEMMs this op runs for {@code operands} (their shapes, views and SM
     * budgets), running them alone with no communication, and has the ranks agree on each algorithm
     * ({@link TpCommunicator#tuneGemms}). Call it before the first {@link #forward} with bindings of this kind, while
     * no stream of this rank waits on a peer; afterwards a call never times a GEMM. Leaves the output as scratch.
     */
    default void tuneGemms(OperandBindings operands, CudaStream stream) {
        communicator().tuneGemms(stream, () -> forwardGemmsOnly(operands, stream));
    }

    /** The domain this op belongs to. */
    TpCommunicator communicator();

    /** Waits for {@code stream} with the UB_TIMEOUT deadline; a dead peer is reported, not waited for. */
    void await(CudaStream stream);

    /**
     * The op's communication buffer on this rank: AG: the gathered input [m, k] (natural row order), valid after a
     * call completed and until the next call starts; RS bulk: where the caller writes its [m, n] partial.
     */
    TensorView userBuffer();

    /**
     * Where this rank's shard goes for an all-gather whose shape takes its input in the user buffer
     * ({@link OverlapShape#inputInUserBuffer()}): rows [rank m/tp, (rank+1) m/tp) of {@link #userBuffer()}. The
     * kernel producing the shard writes it here before the call (which then binds no input), so nothing copies it.
     */
    default TensorView inputChunk() {
        if (shape().collective() != Collective.ALL_GATHER) {
            throw new IllegalStateException(shape().key() + ": only an all-gather takes its input in the user buffer");
        }
        long rows = shape().m() / shape().tp();
        return userBuffer().rows(communicator().rank() * rows, rows);
    }

    /** Records per-step timing from the next call on (two events per step), for {@link #trace()}. */
    @Override
    void enableTrace();

    /** The last traced call's steps, timed from the call's start; call after it completed. */
    List<TraceSpan> trace();

    /**
     * The last traced call's steps, timed from {@code origin}, a timing event of this rank's context recorded before
     * the call (a step's start, so every op of the step shares one time axis); call after the call completed.
     * Steps on the stream the op was called on have the role "caller".
     */
    @Override
    List<TraceSpan> trace(CudaEvent origin);

    /** {@link #trace()} as text, one line a step. */
    default String traceReport() {
        StringBuilder sb = new StringBuilder(shape().collective().resultName() + "/" + label() + " timeline (ms):\n");
        int i = 0;
        for (TraceSpan t : trace()) {
            sb.append(String.format("  %3d s%d %-7s %7.3f %7.3f %7.3f  %s%n", i++, t.stream(), t.role(), t.startMs(),
                    t.endMs(), t.durationMs(), t.what()));
        }
        return sb.toString();
    }

    /** Collective: drains this rank's work and frees nothing a peer can still reach. */
    @Override
    void close();
}

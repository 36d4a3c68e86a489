package dev.ubuf.bench;

import dev.ubuf.layers.tp.Collectives;
import dev.ubuf.layers.tp.OverlapCall;
import dev.ubuf.nccl.NcclCommunicator;
import dev.ubuf.nccl.NcclRedOp;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import dev.ubuf.trace.Tracer;

/**
 * The demo's no_comm collectives: every collective through NCCL until {@link #skipFromNow}, none after. A skipped
 * gather leaves the peers' slots of its destination as they were, and never written they hold the allocation's
 * zeros: the GEMMs that read them (and every tensor computed from their output) then multiply zeros, which draws
 * less power and runs faster on a GPU at its power cap than the real step's values do, so the compute alone would
 * not be a lower bound of the real step. One warm-up step with the real collectives fills every gathered buffer with
 * values of the real distribution (stale afterwards, which a GEMM's speed does not see).
 */
final class NoCommAfterFirstStep implements Collectives {
    private volatile Collectives now = Collectives.nccl();

    /** From the next call on, every collective is skipped (after the first, eager warm-up step of every rank). */
    void skipFromNow() {
        now = Collectives.none();
    }

    boolean skipping() {
        return now != Collectives.nccl();
    }

    @Override
    public void call(OverlapCall call, Tracer tracer, CudaStream stream) {
        now.call(call, tracer, stream);
    }

    @Override
    public void allGather(NcclCommunicator nccl, TensorView src, TensorView dst, long count, DType words,
                          Tracer tracer, CudaStream stream) {
        now.allGather(nccl, src, dst, count, words, tracer, stream);
    }

    @Override
    public void allReduce(NcclCommunicator nccl, TensorView t, NcclRedOp op, Tracer tracer, CudaStream stream) {
        now.allReduce(nccl, t, op, tracer, stream);
    }

    @Override
    public void dataParallel(DataParallelCollective collective, Tracer tracer, CudaStream stream) {
        now.dataParallel(collective, tracer, stream);
    }
}

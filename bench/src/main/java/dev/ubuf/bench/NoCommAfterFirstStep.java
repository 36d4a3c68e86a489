package dev.ubuf.bench;

import dev.ubuf.layers.tp.Collectives;
import dev.ubuf.layers.tp.OverlapCall;
import dev.ubuf.nccl.NcclCommunicator;
import dev.ubuf.nccl.NcclRedOp;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import dev.ubuf.trace.Tracer;

import java.util.List;
import java.util.function.Supplier;

/**
 * The demo's no_comm collectives: every collective through NCCL until {@link #skipFromNow}, none after. A skipped
 * gather leaves the peers' slots of its destination as they were, and never written they hold the allocation's
 * zeros: the GEMMs that read them (and every tensor computed from their output) then multiply zeros, which ran 9%
 * faster than the real step's values (8B dims, tp 2, H200, 2026-11-28; lower power draw under the power cap is the
 * likely reason), so the compute alone was no lower bound of the real step. Steps with the real collectives, before
 * anything is timed, fill every gathered buffer with values of the real distribution (stale afterwards, which a
 * GEMM's speed does not see); two, because FP8 delayed scaling's first step quantizes with its initial scales.
 */
final class NoCommAfterFirstStep implements Collectives {
    private volatile Collectives now = Collectives.nccl();

    /** From the next call on, every collective is skipped (call it once every rank's priming steps have ended). */
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
    public void allGather(Supplier<NcclCommunicator> nccl, TensorView src, TensorView dst, long count, DType words,
                          Tracer tracer, CudaStream stream) {
        now.allGather(nccl, src, dst, count, words, tracer, stream);
    }

    @Override
    public void allReduce(Supplier<NcclCommunicator> nccl, List<TensorView> ts, NcclRedOp op, Tracer tracer,
                          CudaStream stream) {
        now.allReduce(nccl, ts, op, tracer, stream);
    }

    @Override
    public void dataParallel(DataParallelCollective collective, Tracer tracer, CudaStream stream) {
        now.dataParallel(collective, tracer, stream);
    }
}

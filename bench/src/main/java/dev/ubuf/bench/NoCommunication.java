package dev.ubuf.bench;

import dev.ubuf.cuda.CudaStream;
import dev.ubuf.layers.tp.Collectives;
import dev.ubuf.layers.tp.OverlapCall;
import dev.ubuf.nccl.NcclCommunicator;
import dev.ubuf.nccl.NcclRedOp;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import dev.ubuf.trace.SpanKind;
import dev.ubuf.trace.Tracer;

/**
 * The demo's TIMING-ONLY mode (no_comm): the layers run the same kernels and GEMMs as under their configuration, but
 * every collective is skipped (an overlapped op runs its GEMMs alone; a bulk op, an NCCL all-gather or all-reduce
 * and the data-parallel gradient average do nothing). Outputs, gradients and a training run under it are WRONG BY
 * DESIGN: it measures the step's compute, the lower bound an overlap can approach.
 */
final class NoCommunication implements Collectives {
    static final NoCommunication INSTANCE = new NoCommunication();

    private NoCommunication() {
    }

    @Override
    public void call(OverlapCall call, Tracer tracer, CudaStream stream) {
        if (call.hasGemm()) {
            try (Tracer.Scope t = tracer.span(stream, call.gemm().teName() + " GEMMs only", SpanKind.GEMM, null)) {
                call.forwardGemmsOnly(stream);
            }
        }
    }

    @Override
    public void allGather(NcclCommunicator nccl, TensorView src, TensorView dst, long count, DType words,
                          Tracer tracer, CudaStream stream) {
    }

    @Override
    public void allReduce(NcclCommunicator nccl, TensorView t, NcclRedOp op, Tracer tracer, CudaStream stream) {
    }

    @Override
    public void dataParallel(DataParallelCollective collective, Tracer tracer, CudaStream stream) {
    }
}

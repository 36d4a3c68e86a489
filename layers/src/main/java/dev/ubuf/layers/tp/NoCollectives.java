package dev.ubuf.layers.tp;

import dev.ubuf.cuda.CudaStream;
import dev.ubuf.nccl.NcclCommunicator;
import dev.ubuf.nccl.NcclRedOp;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import dev.ubuf.trace.SpanKind;
import dev.ubuf.trace.Tracer;

import java.util.List;
import java.util.function.Supplier;

/**
 * No collective at all: the layers run the same kernels and GEMMs as under their configuration, an overlapped op runs
 * its GEMMs alone (a bulk op has none), and NCCL calls and the data-parallel average do nothing. Initialisation tunes
 * with it, since then nothing waits on a peer; a harness times the step's compute with it. Outputs, gradients and a
 * training run under it are wrong by design.
 */
final class NoCollectives implements Collectives {
    static final NoCollectives INSTANCE = new NoCollectives();

    private NoCollectives() {
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
    public void allGather(Supplier<NcclCommunicator> nccl, TensorView src, TensorView dst, long count, DType words,
                          Tracer tracer, CudaStream stream) {
    }

    @Override
    public void allReduce(Supplier<NcclCommunicator> nccl, List<TensorView> ts, NcclRedOp op, Tracer tracer,
                          CudaStream stream) {
    }

    @Override
    public void dataParallel(DataParallelCollective collective, Tracer tracer, CudaStream stream) {
    }
}

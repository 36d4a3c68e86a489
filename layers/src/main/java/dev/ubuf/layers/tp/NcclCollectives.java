package dev.ubuf.layers.tp;

import dev.ubuf.cuda.CudaStream;
import dev.ubuf.nccl.NcclCommunicator;
import dev.ubuf.nccl.NcclRedOp;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import dev.ubuf.trace.SpanKind;
import dev.ubuf.trace.Tracer;

import java.util.LinkedHashMap;
import java.util.Map;

/** {@link Collectives#nccl()}: every collective runs, through NCCL or the overlapped op. Stateless. */
final class NcclCollectives implements Collectives {
    static final NcclCollectives INSTANCE = new NcclCollectives();

    private NcclCollectives() {
    }

    @Override
    public void call(OverlapCall call, Tracer tracer, CudaStream stream) {
        try (Tracer.Scope t = tracer.op(stream, call.gemm().teName(), call.op())) {
            call.forward(stream);
        }
    }

    @Override
    public void allGather(NcclCommunicator nccl, TensorView src, TensorView dst, long count, DType words,
                          Tracer tracer, CudaStream stream) {
        try (Tracer.Scope t = span(tracer, "AllGather", dst, stream)) {
            nccl.allGather(src.address(), dst.address(), count, words, stream.nativeHandle());
        }
    }

    @Override
    public void allReduce(NcclCommunicator nccl, TensorView t, NcclRedOp op, Tracer tracer, CudaStream stream) {
        try (Tracer.Scope x = span(tracer, "AllReduce", t, stream)) {
            nccl.allReduce(t.address(), t.address(), t.elements(), DType.FP32, op, stream.nativeHandle());
        }
    }

    @Override
    public void dataParallel(DataParallelCollective collective, Tracer tracer, CudaStream stream) {
        // Traced as one NCCL span on the caller's stream, where the collective runs.
        try (Tracer.Scope t = tracer.span(stream, collective.name(), SpanKind.NCCL, collective.traceArgs())) {
            collective.issue(stream);
        }
    }

    private static Tracer.Scope span(Tracer tracer, String collective, TensorView result, CudaStream stream) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("collective", collective);
        m.put("shape", result.rows() + "x" + result.cols());
        m.put("bytes", result.elements() * result.dtype().bytes());
        return tracer.span(stream, "NCCL " + collective + " " + result.rows() + "x" + result.cols(), SpanKind.NCCL,
                m);
    }
}

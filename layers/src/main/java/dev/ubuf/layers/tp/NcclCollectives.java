package dev.ubuf.layers.tp;

import dev.ubuf.cuda.CudaStream;
import dev.ubuf.nccl.NcclCommunicator;
import dev.ubuf.nccl.NcclRedOp;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import dev.ubuf.trace.SpanKind;
import dev.ubuf.trace.Tracer;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

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
    public void allGather(Supplier<NcclCommunicator> nccl, TensorView src, TensorView dst, long count, DType words,
                          Tracer tracer, CudaStream stream) {
        try (Tracer.Scope t = span(tracer, "AllGather", dst, stream)) {
            nccl.get().allGather(src.address(), dst.address(), count, words, stream.nativeHandle());
        }
    }

    @Override
    public void allReduce(Supplier<NcclCommunicator> nccl, List<TensorView> ts, NcclRedOp op, Tracer tracer,
                          CudaStream stream) {
        if (ts.isEmpty()) {
            return;
        }
        for (TensorView t : ts) {
            if (!t.isContiguous() || t.dtype() != DType.FP32) {
                throw new IllegalArgumentException("all-reduce of a non-contiguous or non-fp32 tensor: " + t);
            }
        }
        try (Tracer.Scope x = ts.size() == 1 ? span(tracer, "AllReduce", ts.getFirst(), stream)
                : groupSpan(tracer, ts, stream)) {
            // Every tensor was checked above, so every rank issues the whole group.
            NcclCommunicator comm = nccl.get();
            NcclCommunicator.groupStart();
            try {
                for (TensorView t : ts) {
                    comm.allReduce(t.address(), t.address(), t.elements(), DType.FP32, op, stream.nativeHandle());
                }
            } finally {
                NcclCommunicator.groupEnd();
            }
        }
    }

    @Override
    public void dataParallel(DataParallelCollective collective, Tracer tracer, CudaStream stream) {
        // Traced as one NCCL span on the caller's stream, where the collective runs.
        try (Tracer.Scope t = tracer.span(stream, collective.name(), SpanKind.NCCL, collective.traceArgs())) {
            collective.issue(stream);
        }
    }

    private static Tracer.Scope groupSpan(Tracer tracer, List<TensorView> ts, CudaStream stream) {
        long elements = 0;
        for (TensorView t : ts) {
            elements += t.elements();
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("collective", "AllReduce");
        m.put("tensors", ts.size());
        m.put("bytes", elements * Float.BYTES);
        return tracer.span(stream, "NCCL AllReduce of " + ts.size() + " tensors, " + elements + " fp32",
                SpanKind.NCCL, m);
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

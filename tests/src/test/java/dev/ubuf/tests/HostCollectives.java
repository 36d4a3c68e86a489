package dev.ubuf.tests;

import dev.ubuf.bootstrap.Bootstrap;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.layers.tp.Collectives;
import dev.ubuf.layers.tp.OverlapCall;
import dev.ubuf.nccl.NcclCommunicator;
import dev.ubuf.nccl.NcclRedOp;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import dev.ubuf.trace.Tracer;

import java.util.List;
import java.util.function.Supplier;

/**
 * The layers' collectives for ranks that share one GPU, where NCCL refuses to run: the overlapped ops run as they
 * always do, and the few collectives a layer issues itself (the sequence-parallel gradients' and FP8 amaxes'
 * all-reduces, all-gathers) go through the host: the stream is synchronised, the tensors copied to the host,
 * exchanged over the bootstrap, combined in rank order and copied back. Correct and slow; a test's only. The
 * data-parallel collective is refused (one TP group here).
 */
final class HostCollectives implements Collectives {
    private final Bootstrap boot;
    private final CudaContext ctx;

    HostCollectives(Bootstrap boot, CudaContext ctx) {
        this.boot = boot;
        this.ctx = ctx;
    }

    @Override
    public void call(OverlapCall call, Tracer tracer, CudaStream stream) {
        Collectives.nccl().call(call, tracer, stream); // the op alone: nothing of NCCL unless the op is NCCL's
    }

    @Override
    public void allGather(Supplier<NcclCommunicator> nccl, TensorView src, TensorView dst, long count, DType words,
                          Tracer tracer, CudaStream stream) {
        if (src.dtype().isReserved() || src.dtype() != dst.dtype() || dst.elements() != src.elements() * boot.size()
                || !dst.isContiguous()) {
            throw new IllegalArgumentException("host all-gather of values: " + src + " into " + dst);
        }
        float[] all = new float[Math.toIntExact(dst.elements())];
        float[][] parts = fromEveryRank(src, stream);
        for (int r = 0; r < parts.length; r++) {
            System.arraycopy(parts[r], 0, all, r * parts[r].length, parts[r].length);
        }
        HostTensors.upload(ctx, stream, all, dst);
    }

    @Override
    public void allReduce(Supplier<NcclCommunicator> nccl, List<TensorView> ts, NcclRedOp op, Tracer tracer,
                          CudaStream stream) {
        for (TensorView t : ts) {
            if (!t.isContiguous() || t.dtype() != DType.FP32) {
                throw new IllegalArgumentException("all-reduce of a non-contiguous or non-fp32 tensor: " + t);
            }
            float[][] parts = fromEveryRank(t, stream);
            float[] sum = parts[0];
            for (int r = 1; r < parts.length; r++) {
                float[] f = parts[r];
                for (int i = 0; i < sum.length; i++) {
                    sum[i] = switch (op) {
                        case SUM -> sum[i] + f[i];
                        case MAX -> Math.max(sum[i], f[i]);
                        default -> throw new IllegalArgumentException("host all-reduce of " + op);
                    };
                }
            }
            HostTensors.upload(ctx, stream, sum, t);
        }
    }

    /** Every rank's values of {@code t} (once {@code stream} has written them), in rank order. */
    private float[][] fromEveryRank(TensorView t, CudaStream stream) {
        byte[][] parts = boot.allGather(OverlapScenario.floats(HostTensors.download(ctx, stream, t)));
        float[][] out = new float[parts.length][];
        for (int r = 0; r < parts.length; r++) {
            out[r] = OverlapScenario.unfloats(parts[r]);
        }
        return out;
    }

    @Override
    public void dataParallel(DataParallelCollective collective, Tracer tracer, CudaStream stream) {
        throw new UnsupportedOperationException("no data-parallel group with both ranks on one GPU: "
                + collective.name());
    }
}

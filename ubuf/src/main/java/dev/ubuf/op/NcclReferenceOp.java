package dev.ubuf.op;

import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaEvent;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.exec.OperandBindings;
import dev.ubuf.trace.SpanKind;
import dev.ubuf.trace.TraceSpan;
import dev.ubuf.gemm.Gemm;
import dev.ubuf.nccl.NcclRedOp;
import dev.ubuf.devicekernels.DeviceKernels;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The unoverlapped reference on the caller's stream: AG: NCCL AllGather of the shard into an owned [m, k] buffer,
 * then one GEMM; RS: one GEMM into an owned [m, n] partial, NCCL ReduceScatter into the output, then the bias.
 * Every method is checked against it, and the planner always considers it, so a planned op is never slower.
 */
public final class NcclReferenceOp implements OverlapOp {
    private final TpCommunicator comm;
    private final OverlapShape shape;
    private final DeviceKernels kernels;
    private final DeviceBuffer buffer;
    private final TensorView staged;
    private final Gemm gemm;
    /** The quantize kernel of an fp8 output (else null). */
    private final dev.ubuf.devicekernels.Fp8Kernels fp8Kernels;
    /** Recorded after each call's last step: close waits for it before freeing the buffer. */
    private final CudaEvent lastUse;
    private boolean used;
    private boolean closed;
    /** start, collective end, GEMM end (or GEMM end, collective end for RS) of the last traced call; null when off */
    private CudaEvent[] traceEvents;

    NcclReferenceOp(TpCommunicator comm, OverlapShape shape, DeviceKernels kernels) {
        if (shape.tp() != comm.tp()) {
            throw new IllegalArgumentException("shape is for tp " + shape.tp() + ", communicator has " + comm.tp());
        }
        this.comm = comm;
        this.shape = shape;
        this.kernels = kernels;
        comm.nccl(); // collective: every rank creates it now, not at its first call
        CudaContext ctx = comm.context().makeCurrent();
        long cols = ag() ? shape.k() : shape.n();
        // AG stages the gathered input (fp8 for an fp8 op), RS the partial product (the output's type).
        DType stagedType = ag() ? shape.inputDtype() : shape.dtype();
        this.buffer = ctx.allocate(shape.m() * cols * stagedType.bytes());
        this.staged = TensorView.of(buffer, shape.m(), cols, stagedType);
        Gemm g = null;
        try {
            g = new Gemm(ctx, comm.gemmTuner());
            this.lastUse = ctx.createEvent(false);
        } catch (RuntimeException e) {
            if (g != null) {
                g.close();
            }
            buffer.close();
            throw e;
        }
        this.gemm = g;
        this.fp8Kernels = shape.fp8Output().isPresent() ? new dev.ubuf.devicekernels.Fp8Kernels(kernels.library()) : null;
    }

    private boolean ag() {
        return shape.collective() == Collective.ALL_GATHER;
    }

    @Override
    public OverlapShape shape() {
        return shape;
    }

    @Override
    public TpCommunicator communicator() {
        return comm;
    }

    @Override
    public String methodName() {
        return "nccl";
    }

    @Override
    public String label() {
        return "nccl";
    }

    private Gemm.Options validate(OperandBindings b) {
        if (closed) {
            throw new IllegalStateException("NCCL reference op for " + shape.key() + " is closed");
        }
        if (shape.inputInUserBuffer()) {
            if (b.input() != null) {
                throw new IllegalArgumentException("nccl: this op takes its input in the user buffer (inputChunk()),"
                        + " but an input was bound (" + b.input() + ")");
            }
        } else {
            require(b.input(), "input", shape.inputRows(), shape.k(), shape.inputDtype());
        }
        require(b.output(), "output", shape.outputRows(), shape.n(), shape.outputDtype());
        if (b.weight() == null) {
            throw new IllegalArgumentException("nccl: needs a weight tensor");
        }
        b.weight().requireDType(shape.weightDtype(), "weight");
        if (shape.fp8().isPresent()) {
            if (b.scales() == null) {
                throw new IllegalArgumentException("nccl: this op multiplies fp8 operands: bind their dequantization"
                        + " scales (OperandBindings.withScales)");
            }
            if (!b.weightTransposed()) {
                throw new IllegalArgumentException("nccl: fp8 GEMMs take the weight stored [n, k] (weightTransposed,"
                        + " the NT layout cuBLASLt runs fp8 in)");
            }
        } else if (b.scales() != null) {
            throw new IllegalArgumentException("nccl: this op is not fp8, but fp8 scales were given");
        }
        // After the operands' scales, as the planned methods check: whichever method auto picks says the same.
        if (shape.fp8Output().isPresent() != (b.outputScaling() != null)) {
            throw new IllegalArgumentException(shape.fp8Output().isPresent()
                    ? "nccl: this op writes an fp8 output: bind its scale (OperandBindings.withOutputScaling)"
                    : "nccl: this op writes a " + shape.dtype().shortName() + " output, but an fp8 output scaling was"
                    + " given");
        }
        if (shape.bias() != (b.bias() != null)) {
            throw new IllegalArgumentException(shape.bias() ? "nccl: this op adds a bias: pass one"
                    : "nccl: this op has no bias, but one was given (" + b.bias() + "): make the op with a bias");
        }
        if (b.bias() != null) {
            require(b.bias(), "bias", 1, shape.n(), shape.dtype());
        }
        if (!(ag() ? shape.inputInUserBuffer() || b.input().isContiguous() : b.output().isContiguous())) {
            throw new IllegalArgumentException("nccl: needs a contiguous " + (ag() ? "input" : "output"));
        }
        Gemm.Options o = new Gemm.Options(false, b.weightTransposed(), 0, false);
        Gemm.spec(ag() ? staged : b.input(), b.weight(), ag() ? b.output() : staged, o); // shapes and dtypes
        return o;
    }

    private void require(TensorView t, String what, long rows, long cols, DType type) {
        if (t == null) {
            throw new IllegalArgumentException("nccl: needs a " + what + " tensor");
        }
        t.requireShape(rows, cols, what);
        t.requireDType(type, what);
        t.memory().assertOpen();
    }

    @Override
    public void forward(OperandBindings b, CudaStream s) {
        Gemm.Options o = validate(b);
        comm.requireHealthy("the NCCL reference of " + shape.key());
        comm.context().makeCurrent();
        // Tune before the collective is enqueued: tuning waits for its own stream, which must not queue behind it.
        gemm.prepare(ag() ? staged : b.input(), b.weight(), ag() ? b.output() : staged, 0f, o, scales(b), s);
        mark(s, 0);
        long rows = shape.m() / shape.tp();
        if (ag()) {
            // In place when the shard is already in its chunk of the staged buffer (NCCL's in-place all-gather).
            long from = shape.inputInUserBuffer() ? inputChunk().address() : b.input().address();
            if (shape.fp8().isPresent()) {
                // FP8 bytes, gathered as pairs (k is a multiple of 16): a copy needs no NCCL fp8 type.
                comm.nccl().allGather(from, staged.address(), rows * shape.k() / 2, DType.FP16, s.nativeHandle());
            } else {
                comm.nccl().allGather(from, staged.address(), rows * shape.k(), shape.dtype(), s.nativeHandle());
            }
            mark(s, 1);
            gemm.multiply(staged, b.weight(), b.output(), 1f, 0f, o, scales(b), s);
        } else {
            gemm.multiply(b.input(), b.weight(), staged, 1f, 0f, o, scales(b), s);
            mark(s, 1);
            // An fp8 output: reduce-scatter in place (this rank's rows of the staged product), then quantize.
            TensorView sum = shape.fp8Output().isPresent() ? staged.rows(comm.rank() * rows, rows) : b.output();
            comm.nccl().reduceScatter(staged.address(), sum.address(), rows * shape.n(), shape.dtype(),
                    NcclRedOp.SUM, s.nativeHandle());
            if (b.bias() != null) {
                kernels.addBias(sum, b.bias(), s);
            }
            if (shape.fp8Output().isPresent()) {
                var q = b.outputScaling();
                fp8Kernels.quantize(sum, q.scale(), b.output(), q.amax(), q.scaleInv(), s);
            }
        }
        mark(s, 2);
        lastUse.record(s);
        used = true;
    }

    private Gemm.Fp8Scales scales(OperandBindings b) {
        return shape.fp8().isPresent() ? b.scales().forGemm(dev.ubuf.plan.Fp8Scaling.INPUT_X_WEIGHT) : null;
    }

    private void mark(CudaStream s, int i) {
        if (traceEvents != null) {
            traceEvents[i].record(s);
        }
    }

    @Override
    public void forwardGemmsOnly(OperandBindings b, CudaStream s) {
        Gemm.Options o = validate(b);
        comm.context().makeCurrent();
        gemm.multiply(ag() ? staged : b.input(), b.weight(), ag() ? b.output() : staged, 1f, 0f, o, scales(b), s);
        lastUse.record(s);
        used = true;
    }

    @Override
    public void await(CudaStream stream) {
        comm.await(stream, () -> "NCCL reference of " + shape.key());
    }

    @Override
    public TensorView userBuffer() {
        return staged;
    }

    @Override
    public void enableTrace() {
        if (traceEvents == null) {
            CudaContext ctx = comm.context().makeCurrent();
            traceEvents = new CudaEvent[3];
            for (int i = 0; i < 3; i++) {
                traceEvents[i] = ctx.createEvent(true);
            }
        }
    }

    @Override
    public List<TraceSpan> trace() {
        requireTrace();
        return trace(traceEvents[0]);
    }

    @Override
    public List<TraceSpan> trace(CudaEvent origin) {
        requireTrace();
        double start = traceEvents[0].elapsedMillisSince(origin);
        double mid = traceEvents[1].elapsedMillisSince(origin);
        double end = traceEvents[2].elapsedMillisSince(origin);
        long rows = shape.m() / shape.tp();
        long bytes = (ag() ? rows * shape.k() : rows * shape.n()) * (ag() ? shape.inputDtype() : shape.dtype()).bytes() * shape.tp();
        Map<String, Object> gemmArgs = new LinkedHashMap<>();
        gemmArgs.put("m", shape.m());
        gemmArgs.put("n", shape.n());
        gemmArgs.put("k", shape.k());
        Map<String, Object> ncclArgs = new LinkedHashMap<>();
        ncclArgs.put("collective", ag() ? "AllGather" : "ReduceScatter");
        ncclArgs.put("bytes", bytes); // the gathered or the reduced tensor
        if (!ag() && shape.bias()) {
            ncclArgs.put("bias", true);
        }
        String gemmName = "GEMM " + shape.m() + "x" + shape.n() + "x" + shape.k();
        String ncclName = ag() ? "NCCL AllGather " + rows + "x" + shape.k()
                : "NCCL ReduceScatter " + shape.m() + "x" + shape.n() + (shape.bias() ? " + bias" : "");
        List<TraceSpan> spans = new ArrayList<>();
        if (ag()) {
            spans.add(new TraceSpan(0, "caller", SpanKind.NCCL, ncclName, start, mid, ncclArgs));
            spans.add(new TraceSpan(0, "caller", SpanKind.GEMM, gemmName, mid, end, gemmArgs));
        } else {
            spans.add(new TraceSpan(0, "caller", SpanKind.GEMM, gemmName, start, mid, gemmArgs));
            spans.add(new TraceSpan(0, "caller", SpanKind.NCCL, ncclName, mid, end, ncclArgs));
        }
        return spans;
    }

    private void requireTrace() {
        if (traceEvents == null) {
            throw new IllegalStateException("tracing is off: call enableTrace() before the call");
        }
        if (!used) {
            throw new IllegalStateException("NCCL reference of " + shape.key() + " has not run yet: nothing to trace");
        }
    }

    /** Waits (UB_TIMEOUT) for the last call to finish with the buffer, then frees it; nothing of it is shared. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        CudaContext ctx = comm.context().makeCurrent();
        RuntimeException failure = null;
        if (used) {
            try (CudaStream tail = ctx.createStream(StreamPriority.NORMAL)) {
                tail.waitEvent(lastUse);
                comm.await(tail, () -> "NCCL reference of " + shape.key() + " (closing)");
            } catch (RuntimeException e) {
                failure = e;
            }
        }
        if (traceEvents != null) {
            for (int i = traceEvents.length - 1; i >= 0; i--) {
                traceEvents[i].close();
            }
        }
        lastUse.close();
        gemm.close();
        if (failure == null) {
            buffer.close();
        }
        if (failure != null) {
            throw failure; // the buffer stays allocated: a call that never finished may still write it
        }
    }
}

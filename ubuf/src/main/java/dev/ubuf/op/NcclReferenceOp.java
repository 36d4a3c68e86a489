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
import dev.ubuf.resource.Closer;
import dev.ubuf.devicekernels.DeviceKernels;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The unoverlapped reference on the caller's stream: AG: NCCL AllGather of the shard into an owned [m, k] buffer,
 * then one GEMM; RS: one GEMM into an owned [m, n] partial, NCCL ReduceScatter into the output, then the bias.
 * Every method is checked against it, and the planner always considers it, so a planned op is never slower.
 *
 * <p>With a {@link NcclPipeline} (RS only, label {@code nccl:splits=S,margin=M}) the same collective is pipelined the
 * way Megatron-style NCCL overlap does it: the GEMM runs in S column blocks on the caller's stream, each block written
 * contiguous ([m, n/S]: every rank's rows of it are one NCCL segment), and NCCL reduce-scatters block j on a
 * communication stream of the op's own while block j+1 multiplies; each reduced block [m/tp, n/S] is put into its
 * columns of the output (a copy-engine 2-D copy, or one kernel that adds the bias on the way). Each block GEMM
 * leaves M SMs to NCCL's kernel, which would otherwise wait for the whole GEMM. Measured slower than this reference
 * at tp 2 and 4 (see {@link NcclPipeline}), it runs only when named: the baseline the copy-engine methods beat.
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
    /** 1: the reference; more: the pipelined reduce-scatter (class comment) */
    private final int splits;
    /** The pipelined RS's block GEMMs leave this many SMs to NCCL (0: none, or the reference). */
    private final int margin;
    /** The pipelined RS's reduced blocks, [m/tp, n/S] each, one after another (else null). */
    private final DeviceBuffer reduced;
    /** The pipelined RS's communication stream (else null). */
    private final CudaStream commStream;
    /** The pipelined RS: block j's GEMM done (on the caller's stream), then the last block's output written. */
    private final CudaEvent[] blockDone;
    private final CudaEvent commDone;
    private boolean used;
    private boolean closed;
    /**
     * The last traced call's events; null when off. The reference: start, collective end, GEMM end (or GEMM end,
     * collective end for RS). Pipelined: start, each block's GEMM end, each block's collective start and end, end.
     */
    private CudaEvent[] traceEvents;

    NcclReferenceOp(TpCommunicator comm, OverlapShape shape, DeviceKernels kernels) {
        this(comm, shape, kernels, null);
    }

    /** {@code pipeline} null: the reference; else its reduce-scatter pipelined so (class comment). */
    NcclReferenceOp(TpCommunicator comm, OverlapShape shape, DeviceKernels kernels, NcclPipeline pipeline) {
        if (shape.tp() != comm.tp()) {
            throw new IllegalArgumentException("shape is for tp " + shape.tp() + ", communicator has " + comm.tp());
        }
        if (pipeline != null) {
            whyUnsupported(shape, pipeline).ifPresent(why -> {
                throw new IllegalArgumentException(why);
            });
            int sms = comm.context().device().smCount();
            if (pipeline.margin() >= sms) {
                throw new IllegalArgumentException(pipeline.label() + ": a margin of " + pipeline.margin()
                        + " SMs leaves the GEMMs none of this GPU's " + sms);
            }
        }
        this.comm = comm;
        this.shape = shape;
        this.kernels = kernels;
        this.splits = pipeline == null ? 1 : pipeline.splits();
        this.margin = pipeline == null ? 0 : pipeline.margin();
        comm.nccl(); // collective: every rank creates it now, not at its first call
        CudaContext ctx = comm.context().makeCurrent();
        long cols = ag() ? shape.k() : shape.n();
        // AG stages the gathered input (fp8 for an fp8 op), RS the partial product (the output's type).
        DType stagedType = ag() ? shape.inputDtype() : shape.dtype();
        // Construction only: a failure halfway gives back what was made; close() has its own order and rules.
        Closer made = new Closer("NCCL op " + shape.key());
        try {
            this.buffer = made.register("staged buffer", ctx.allocate(shape.m() * cols * stagedType.bytes()));
            this.staged = TensorView.of(buffer, shape.m(), cols, stagedType);
            this.gemm = made.register("gemm", new Gemm(ctx, comm.gemmTuner()));
            this.lastUse = made.register("last-use event", ctx.createEvent(false));
            if (splits > 1) {
                this.reduced = made.register("reduced blocks",
                        ctx.allocate(shape.m() / shape.tp() * shape.n() * stagedType.bytes()));
                this.commStream = made.register("communication stream", ctx.createStream(StreamPriority.HIGH));
                this.blockDone = new CudaEvent[splits];
                for (int j = 0; j < splits; j++) {
                    blockDone[j] = made.register("block event", ctx.createEvent(false));
                }
                this.commDone = made.register("communication event", ctx.createEvent(false));
            } else {
                this.reduced = null;
                this.commStream = null;
                this.blockDone = null;
                this.commDone = null;
            }
        } catch (RuntimeException e) {
            throw made.closeAfter(e);
        }
        this.fp8Kernels = shape.fp8Output().isPresent() ? new dev.ubuf.devicekernels.Fp8Kernels(kernels.library()) : null;
    }

    /**
     * Why the pipelined reduce-scatter cannot run {@code shape} in {@code splits} column blocks; empty when it can.
     * Each block must be a whole number of 16-byte rows (cuBLASLt's output rows, and NCCL's segments aligned).
     */
    static Optional<String> whyUnsupported(OverlapShape shape, NcclPipeline pipeline) {
        String name = pipeline.label();
        int splits = pipeline.splits();
        if (shape.collective() != Collective.REDUCE_SCATTER) {
            return Optional.of(name + ": only the reduce-scatter is pipelined");
        }
        if (shape.fp8Output().isPresent()) {
            return Optional.of(name + ": an fp8 output is quantized from the whole sum; not pipelined");
        }
        if (shape.n() % splits != 0 || shape.n() / splits * shape.dtype().bytes() % 16 != 0) {
            return Optional.of(name + ": n=" + shape.n() + " does not split into " + splits + " blocks of whole"
                    + " 16-byte rows of " + shape.dtype().shortName());
        }
        return Optional.empty();
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
        return splits == 1 ? Candidate.NCCL : new NcclPipeline(splits, margin).label();
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
        if (splits > 1) {
            forwardPipelined(b, o, s);
            return;
        }
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
        recordLastUse(s);
    }

    /** The block GEMMs' options: with a margin, cuBLASLt's SM count target leaves that many SMs to NCCL. */
    private Gemm.Options blockOptions(Gemm.Options o) {
        return margin == 0 ? o : o.withSmCountTarget(comm.context().device().smCount() - margin);
    }

    /** Columns per block of the pipelined reduce-scatter. */
    private long blockCols() {
        return shape.n() / splits;
    }

    /** Block j of the partial product: [m, n/S], contiguous, at the j-th S-th of the staged buffer. */
    private TensorView partialBlock(int j) {
        long cols = blockCols();
        return new TensorView(buffer, j * shape.m() * cols * shape.dtype().bytes(), shape.m(), cols, cols,
                shape.dtype());
    }

    /** Block j reduced: this rank's [m/tp, n/S] of it, contiguous. */
    private TensorView reducedBlock(int j) {
        long rows = shape.m() / shape.tp(), cols = blockCols();
        return new TensorView(reduced, j * rows * cols * shape.dtype().bytes(), rows, cols, cols, shape.dtype());
    }

    /** The weight's columns of block j: [k, n/S] of a [k, n] weight, or rows of one stored [n, k]. */
    private TensorView weightBlock(OperandBindings b, int j) {
        long cols = blockCols();
        return b.weightTransposed() ? b.weight().rows(j * cols, cols) : b.weight().cols(j * cols, cols);
    }

    /**
     * Block j's GEMM on the caller's stream, then on the op's communication stream (after it): NCCL's
     * reduce-scatter of the block and its placement in the output's columns, while block j+1 multiplies. The caller's
     * stream joins the communication stream at the end, so the next call cannot overwrite a block still being read.
     */
    private void forwardPipelined(OperandBindings b, Gemm.Options all, CudaStream s) {
        Gemm.Options o = blockOptions(all);
        TensorView block0 = partialBlock(0);
        // Tune before any collective is enqueued: tuning waits for its own stream (every block has block 0's spec).
        gemm.prepare(b.input(), weightBlock(b, 0), block0, 0f, o, scales(b), s);
        long rows = shape.m() / shape.tp(), cols = blockCols();
        long e = shape.dtype().bytes();
        mark(s, 0);
        for (int j = 0; j < splits; j++) {
            TensorView partial = partialBlock(j);
            gemm.multiply(b.input(), weightBlock(b, j), partial, 1f, 0f, o, scales(b), s);
            mark(s, 1 + j);
            blockDone[j].record(s);
            commStream.waitEvent(blockDone[j]);
            mark(commStream, 1 + splits + j);
            TensorView in = reducedBlock(j);
            comm.nccl().reduceScatter(partial.address(), in.address(), rows * cols, shape.dtype(), NcclRedOp.SUM,
                    commStream.nativeHandle());
            TensorView out = b.output().cols(j * cols, cols);
            if (b.bias() != null) {
                kernels.sum(List.of(in), out, false, b.bias().cols(j * cols, cols), commStream); // rounded twice,
                // as NCCL's sum and then addBias round
            } else {
                commStream.copy2d(out.address(), out.ld() * e, in.address(), cols * e, cols * e, rows);
            }
            mark(commStream, 1 + 2 * splits + j);
        }
        commDone.record(commStream);
        s.waitEvent(commDone);
        mark(s, 1 + 3 * splits);
        recordLastUse(s);
    }

    private Gemm.Fp8Scales scales(OperandBindings b) {
        return shape.fp8().isPresent() ? b.scales().forGemm(dev.ubuf.plan.Fp8Scaling.INPUT_X_WEIGHT) : null;
    }

    /**
     * Marks the call's end for {@link #close}. Not inside a CUDA graph's capture: an event recorded there cannot be
     * waited on outside it, so an owner that replays graphs of this op waits for their replays before closing it.
     */
    private void recordLastUse(CudaStream s) {
        if (!s.isCapturing()) {
            lastUse.record(s);
            used = true;
        }
    }

    private void mark(CudaStream s, int i) {
        if (traceEvents != null) {
            traceEvents[i].recordTimestamp(s);
        }
    }

    @Override
    public void forwardGemmsOnly(OperandBindings b, CudaStream s) {
        Gemm.Options o = validate(b);
        comm.context().makeCurrent();
        if (splits > 1) {
            Gemm.Options bo = blockOptions(o);
            for (int j = 0; j < splits; j++) {
                gemm.multiply(b.input(), weightBlock(b, j), partialBlock(j), 1f, 0f, bo, scales(b), s);
            }
            recordLastUse(s);
            return;
        }
        gemm.multiply(ag() ? staged : b.input(), b.weight(), ag() ? b.output() : staged, 1f, 0f, o, scales(b), s);
        recordLastUse(s);
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
            traceEvents = new CudaEvent[splits == 1 ? 3 : 2 + 3 * splits];
            for (int i = 0; i < traceEvents.length; i++) {
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
        if (splits > 1) {
            return tracePipelined(origin);
        }
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

    /** Each block's GEMM on the caller's stream, and its reduce-scatter and placement on the op's own stream. */
    private List<TraceSpan> tracePipelined(CudaEvent origin) {
        long rows = shape.m() / shape.tp(), cols = blockCols();
        List<TraceSpan> spans = new ArrayList<>();
        double gemmStart = traceEvents[0].elapsedMillisSince(origin);
        for (int j = 0; j < splits; j++) {
            double gemmEnd = traceEvents[1 + j].elapsedMillisSince(origin);
            Map<String, Object> gemmArgs = new LinkedHashMap<>();
            gemmArgs.put("m", shape.m());
            gemmArgs.put("n", cols);
            gemmArgs.put("k", shape.k());
            gemmArgs.put("block", j);
            spans.add(new TraceSpan(0, "caller", SpanKind.GEMM, "GEMM " + shape.m() + "x" + cols + "x" + shape.k()
                    + " block " + j, gemmStart, gemmEnd, gemmArgs));
            Map<String, Object> ncclArgs = new LinkedHashMap<>();
            ncclArgs.put("collective", "ReduceScatter");
            ncclArgs.put("bytes", rows * cols * shape.dtype().bytes() * shape.tp());
            ncclArgs.put("block", j);
            if (shape.bias()) {
                ncclArgs.put("bias", true);
            }
            spans.add(new TraceSpan(1, "comm", SpanKind.NCCL, "NCCL ReduceScatter " + shape.m() + "x" + cols
                    + " block " + j + (shape.bias() ? " + bias" : ""),
                    traceEvents[1 + splits + j].elapsedMillisSince(origin),
                    traceEvents[1 + 2 * splits + j].elapsedMillisSince(origin), ncclArgs));
            gemmStart = gemmEnd;
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
        if (commStream != null) {
            commDone.close();
            for (int j = blockDone.length - 1; j >= 0; j--) {
                blockDone[j].close();
            }
            commStream.close();
        }
        lastUse.close();
        gemm.close();
        if (failure == null) {
            if (reduced != null) {
                reduced.close();
            }
            buffer.close();
        }
        if (failure != null) {
            throw failure; // the buffer stays allocated: a call that never finished may still write it
        }
    }
}

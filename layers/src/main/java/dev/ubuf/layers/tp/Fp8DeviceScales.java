package dev.ubuf.layers.tp;

import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaEvent;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.PinnedHostBuffer;
import dev.ubuf.fp8.Fp8Role;
import dev.ubuf.devicekernels.Fp8Kernels;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import dev.ubuf.trace.SpanKind;
import dev.ubuf.trace.Tracer;

import java.lang.foreign.ValueLayout;
import java.util.Objects;

/**
 * The device side of a context's {@link Fp8ScaleTable}: one fp32 table of every slot's scale, scale inverse and amax
 * (the table's {@link Fp8ScaleTable#deviceImage() layout}), allocated when the first step freezes the table, and the
 * quantizations the layers run with it. Owned by the {@link TpContext}; closed with it.
 *
 * <ul>
 *   <li>Delayed scaling: a quantization uses the slot's scale as it stands and folds |x| into the slot's amax; at
 *       {@link #endStep} the amaxes are reduced (max) over the TP group, read back, turned into the next scales on
 *       the host, and the new table (amaxes zeroed) is copied back, all on the caller's stream.</li>
 *   <li>Current scaling: the amax of x is measured first (max over the TP group for a shared tensor), the scale and
 *       its inverse are derived on the device, then x is quantized: nothing goes through the host.</li>
 * </ul>
 */
final class Fp8DeviceScales implements AutoCloseable {
    private final TpContext tc;
    private final Fp8ScaleTable table;
    private final Fp8Kernels kernels;
    private DeviceBuffer device;
    private PinnedHostBuffer host;
    /**
     * Recorded after each copy of the table down from {@link #host} on a caller's stream: {@link #endStep} leaves its
     * copy queued (the step is over), so {@link #close} waits for this before freeing the table.
     */
    private CudaEvent uploaded;
    private boolean uploadPending;
    private boolean closed;

    Fp8DeviceScales(TpContext tc, Fp8ScaleTable table, Fp8Kernels kernels) {
        this.tc = Objects.requireNonNull(tc, "tc");
        this.table = Objects.requireNonNull(table, "table");
        this.kernels = Objects.requireNonNull(kernels, "kernels");
    }

    Fp8ScaleTable table() {
        return table;
    }

    Fp8ScaleTable.Slot register(String layer, Fp8Role role, boolean shared) {
        return table.register(layer, role, shared);
    }

    /**
     * Floats from one scalar of the table to the next: cuBLASLt takes an FP8 GEMM's scale pointers only 16-byte
     * aligned ({@link dev.ubuf.gemm.GemmRunner#FP8_SCALE_ALIGNMENT}), so every scalar starts a 16-byte cell.
     */
    static final int STRIDE = dev.ubuf.gemm.GemmRunner.FP8_SCALE_ALIGNMENT / Float.BYTES;

    private TensorView at(int region, Fp8ScaleTable.Slot s) {
        ensure(null);
        long offset = ((long) region * table.size() + s.index()) * STRIDE * Float.BYTES;
        return new TensorView(device, offset, 1, 1, 1, DType.FP32);
    }

    TensorView scale(Fp8ScaleTable.Slot s) {
        return at(0, s);
    }

    TensorView scaleInverse(Fp8ScaleTable.Slot s) {
        return at(1, s);
    }

    TensorView amax(Fp8ScaleTable.Slot s) {
        return at(2, s);
    }

    /** Allocates and fills the device table at the first use (on {@code stream}, or synchronously when null). */
    private void ensure(CudaStream stream) {
        if (closed) {
            throw new IllegalStateException("the context's FP8 scales are closed");
        }
        if (device != null) {
            return;
        }
        table.freeze();
        if (table.size() == 0) {
            throw new IllegalStateException("no FP8 tensor was registered");
        }
        CudaContext ctx = tc.makeCurrent();
        long bytes = 3L * table.size() * STRIDE * Float.BYTES;
        device = ctx.allocate(bytes, "fp8.scales");
        try {
            // Room for the table going down and the amaxes coming back, apart: a copy down may still be reading.
            host = ctx.allocateHost(bytes + (long) table.size() * STRIDE * Float.BYTES);
            uploaded = ctx.createEvent(false);
        } catch (RuntimeException e) {
            if (host != null) {
                host.close();
                host = null;
            }
            device.close();
            device = null;
            throw e;
        }
        upload(stream);
    }

    private void upload(CudaStream stream) {
        float[] image = table.deviceImage();
        for (int i = 0; i < image.length; i++) {
            for (int j = 0; j < STRIDE; j++) {
                host.segment().setAtIndex(ValueLayout.JAVA_FLOAT, (long) i * STRIDE + j, j == 0 ? image[i] : 0f);
            }
        }
        long bytes = (long) image.length * STRIDE * Float.BYTES;
        if (stream != null) {
            stream.copyFromHost(device, 0, host, 0, bytes);
            uploaded.record(stream);
            uploadPending = true;
        } else {
            // First touched outside a call (a view asked for before any quantization): copy now, and wait for it
            // (with UB_TIMEOUT's deadline, like every other host wait).
            try (CudaStream s = tc.makeCurrent().createStream(dev.ubuf.cuda.StreamPriority.NORMAL)) {
                s.copyFromHost(device, 0, host, 0, bytes);
                tc.comm().await(s, () -> "fp8 scale table upload");
            }
        }
    }

    /**
     * {@code y = fp8(x * scale)} and, when given, {@code yT = y^T}, with the slot's scale as the recipe says (see the
     * class comment). y may be null when yT is given.
     */
    void quantize(Fp8ScaleTable.Slot s, TensorView x, TensorView y, TensorView yT, CudaStream stream) {
        ensure(stream);
        try (Tracer.Scope t = tc.span("fp8 quantize " + s.describe(), SpanKind.KERNEL, stream)) {
            if (table.delayed()) {
                launch(x, scale(s), y, yT, amax(s), stream);
                return;
            }
            TensorView amax = amax(s);
            tc.kernels().fillBits(amax, 0, stream);
            kernels.amax(x, amax, stream);
            if (s.shared()) {
                tc.allReduceMaxFp32(amax, stream);
            }
            kernels.scaleFromAmax(amax, s.format(), scale(s), scaleInverse(s), stream);
            launch(x, scale(s), y, yT, null, stream);
        }
    }

    private void launch(TensorView x, TensorView scale, TensorView y, TensorView yT, TensorView amax,
                        CudaStream stream) {
        if (yT == null) {
            kernels.quantize(x, scale, y, amax, null, stream);
        } else {
            kernels.quantizeTransposed(x, scale, y, yT, amax, null, stream);
        }
    }

    /**
     * {@code qT = q^T} of an FP8 tensor quantized with slot {@code s}'s current scale, through {@code scratch} (fp32,
     * q's shape): dequantize, then quantize transposed with the same scale. Exact: a dequantized value is the FP8 value
     * times the inverse scale within fp32 rounding (2^-24 relative), and multiplying back by the scale lands within
     * 2^-23 of the FP8 value, far inside half its spacing (2^-4 relative for E4M3, 2^-3 for E5M2; subnormals alike),
     * so it rounds to itself. Used where the backward GEMM needs the other layout of a gathered FP8 tensor (cuBLASLt
     * runs FP8 only as A[m, k] B[n, k]^T).
     */
    void transpose(Fp8ScaleTable.Slot s, TensorView q, TensorView scratch, TensorView qT, CudaStream stream) {
        ensure(stream);
        try (Tracer.Scope t = tc.span("fp8 transpose " + s.describe(), SpanKind.KERNEL, stream)) {
            kernels.dequantize(q, scaleInverse(s), scratch, stream);
            kernels.quantizeTransposed(scratch, scale(s), null, qT, null, null, stream);
        }
    }

    /**
     * Ends a step: under delayed scaling every slot's amax is reduced over the TP group, read back (the caller's
     * stream is waited for), recorded, and the next scales are copied to the device with the amaxes zeroed; under
     * current scaling nothing happens.
     */
    void endStep(CudaStream stream) {
        if (!table.delayed() || device == null) {
            return; // nothing was quantized yet, or nothing carries over
        }
        int n = table.size();
        long amaxOffset = 2L * n * STRIDE * Float.BYTES;
        // The padding between the amaxes is zero: the maximum over the ranks keeps it so.
        TensorView amaxes = new TensorView(device, amaxOffset, 1, (long) n * STRIDE, (long) n * STRIDE, DType.FP32);
        try (Tracer.Scope t = tc.span("fp8 amax reduction and scale update", SpanKind.KERNEL, stream)) {
            tc.allReduceMaxFp32(amaxes, stream);
            long back = 3L * n * STRIDE * Float.BYTES;
            stream.copyToHost(host, back, device, amaxOffset, (long) n * STRIDE * Float.BYTES);
            tc.comm().await(stream, () -> "fp8 amax read-back");
            float[] a = new float[n];
            for (int i = 0; i < n; i++) {
                a[i] = host.segment().getAtIndex(ValueLayout.JAVA_FLOAT, (3L * n + i) * STRIDE);
            }
            table.endStep(a);
            upload(stream);
        }
    }

    /**
     * Frees the tables once the last copy down (endStep's, queued on the caller's stream) has finished, waited for
     * with UB_TIMEOUT's deadline: the context's close does not know the caller's stream, and pinned memory must not be
     * freed under a copy that reads it. If that wait fails the tables stay allocated (a copy may still use them).
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        RuntimeException failure = null;
        if (uploadPending) {
            try (CudaStream tail = tc.makeCurrent().createStream(dev.ubuf.cuda.StreamPriority.NORMAL)) {
                tail.waitEvent(uploaded);
                // A local copy finishes whatever the peers do: after an abort, wait without the health checks.
                if (tc.comm().isAborted()) {
                    tc.comm().awaitAfterAbort(tail, () -> "fp8 scale table upload (closing)");
                } else {
                    tc.comm().await(tail, () -> "fp8 scale table upload (closing)");
                }
            } catch (RuntimeException e) {
                failure = e;
            }
        }
        if (uploaded != null) {
            uploaded.close();
        }
        if (failure != null) {
            throw failure;
        }
        try {
            if (host != null) {
                host.close();
            }
        } finally {
            if (device != null) {
                device.close();
            }
        }
    }
}

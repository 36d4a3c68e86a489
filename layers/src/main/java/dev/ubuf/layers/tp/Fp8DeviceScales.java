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
import java.util.ArrayDeque;
import java.util.Objects;

/**
 * The device side of a context's {@link Fp8ScaleTable}: one fp32 table of every slot's scale, scale inverse and amax
 * (the table's {@link Fp8ScaleTable#deviceImage() layout}), allocated when the first step freezes the table, and the
 * quantizations the layers run with it. Owned by the {@link TpContext}; closed with it.
 *
 * <ul>
 *   <li>Delayed scaling: a quantization uses the slot's scale as it stands and folds |x| into the slot's amax; at
 *       {@link #endStep} the amaxes are reduced (max) over the TP group and one kernel turns them into the next
 *       scales on the device (amax windows kept there too), all on the caller's stream: nothing waits for the GPU,
 *       so the host can enqueue the next step while this one runs. The reduced amaxes are also copied to pinned
 *       host memory, and the host table ({@link #syncedTable}) replays them in order once their copies finished.
 *       In a graph-capturable context the window's running column comes from a step count on the device instead of
 *       the host, and nothing is copied back: a step replayed from a CUDA graph repeats exactly what was captured,
 *       so only state kept on the device can advance from one replay to the next.</li>
 *   <li>Current scaling: the amax of x is measured first (max over the TP group for a shared tensor), the scale and
 *       its inverse are derived on the device, then x is quantized: nothing goes through the host.</li>
 * </ul>
 */
final class Fp8DeviceScales implements AutoCloseable {
    private final TpContext tc;
    private final Fp8ScaleTable table;
    private final Fp8Kernels kernels;
    /** Delayed scaling's step count on the device (a graph-capturable context), not the host's. */
    private final boolean countOnDevice;
    private DeviceBuffer device;
    /**
     * Delayed scaling: each slot's format maximum (n floats), then its amax window (n x history), then, counted on the
     * device, the 64-bit step count ({@link #countOffsetFloats}).
     */
    private DeviceBuffer state;
    private PinnedHostBuffer host;
    /**
     * Steps ended on the device, counted on the host; the window's running column is this modulo the history length.
     * Unused where the device counts ({@link #countOnDevice}).
     */
    private long deviceSteps;
    /** One event per read-back slot of {@link #host}'s ring, and the slots whose amaxes the host has not taken yet. */
    private CudaEvent[] readBack;
    private final ArrayDeque<Integer> pending = new ArrayDeque<>();
    private int nextReadBack;
    /**
     * Recorded after the table and the state were copied down from {@link #host} on a caller's stream (once, when the
     * table is made): {@link #close} waits for it before freeing the pinned memory the copy reads.
     */
    private CudaEvent uploaded;
    private boolean uploadPending;
    /** Why the first copy of the tables failed, if it did: the tables are then never used. */
    private RuntimeException uploadFailure;
    private boolean closed;

    Fp8DeviceScales(TpContext tc, Fp8ScaleTable table, Fp8Kernels kernels) {
        this.tc = Objects.requireNonNull(tc, "tc");
        this.table = Objects.requireNonNull(table, "table");
        this.kernels = Objects.requireNonNull(kernels, "kernels");
        this.countOnDevice = tc.graphCapturable();
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
    /**
     * Steps' amaxes in flight to the host: the host may run this many steps ahead of the GPU before an
     * {@link #endStep} waits for the oldest copy (a wait for work already enqueued, which no peer holds up).
     */
    static final int READ_BACK_SLOTS = 16;

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
        if (uploadFailure != null) {
            throw new IllegalStateException("the context's FP8 scale table never reached the device", uploadFailure);
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
            if (table.delayed()) {
                state = ctx.allocate(stateFloats() * Float.BYTES, "fp8.amaxWindows");
            }
            if (table.delayed() && !countOnDevice) {
                readBack = new CudaEvent[READ_BACK_SLOTS];
                for (int i = 0; i < READ_BACK_SLOTS; i++) {
                    readBack[i] = ctx.createEvent(false);
                }
            }
            // The table and the state going down, and the ring of amaxes coming back, apart.
            host = ctx.allocateHost(bytes + stateFloats() * Float.BYTES
                    + (readBack != null ? (long) READ_BACK_SLOTS * table.size() * STRIDE * Float.BYTES : 0));
            uploaded = ctx.createEvent(false);
        } catch (RuntimeException e) {
            try {
                releaseBuffers(); // nothing was enqueued yet
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
        try {
            upload(stream);
        } catch (RuntimeException e) {
            // The tables stay allocated (a copy may still read the pinned memory; close waits for it) but unused.
            uploadFailure = e;
            throw e;
        }
    }

    /**
     * Floats of the delayed-scaling state: the format maxima, then the windows, then (counted on the device) the
     * 64-bit step count, 8-byte aligned; none under current scaling. The count starts at zero with the windows.
     */
    private long stateFloats() {
        if (!table.delayed()) {
            return 0;
        }
        return countOnDevice ? countOffsetFloats() + Long.BYTES / Float.BYTES : maximaAndWindowsFloats();
    }

    /** Delayed scaling's format maxima and amax windows, in floats. */
    private long maximaAndWindowsFloats() {
        var d = (dev.ubuf.fp8.Fp8Recipe.DelayedScaling) table.recipe();
        return (long) table.size() * (1 + d.historyLength());
    }

    /** Where the device's step count starts in the state, in floats: after the windows, rounded up to 8 bytes. */
    private long countOffsetFloats() {
        long floats = maximaAndWindowsFloats();
        return floats + (floats & 1);
    }

    /** Once, when the table is made: the scales as the host table holds them, zeroed amaxes and windows. */
    private void upload(CudaStream stream) {
        float[] image = table.deviceImage();
        for (int i = 0; i < image.length; i++) {
            for (int j = 0; j < STRIDE; j++) {
                host.segment().setAtIndex(ValueLayout.JAVA_FLOAT, (long) i * STRIDE + j, j == 0 ? image[i] : 0f);
            }
        }
        long bytes = (long) image.length * STRIDE * Float.BYTES;
        long stateFloats = stateFloats();
        if (stateFloats > 0) {
            long base = bytes / Float.BYTES;
            var slots = table.slots();
            for (long i = 0; i < stateFloats; i++) {
                float v = i < slots.size() ? slots.get((int) i).format().maxFinite() : 0f;
                host.segment().setAtIndex(ValueLayout.JAVA_FLOAT, base + i, v);
            }
        }
        if (stream != null) {
            stream.copyFromHost(device, 0, host, 0, bytes);
            if (stateFloats > 0) {
                stream.copyFromHost(state, 0, host, bytes, stateFloats * Float.BYTES);
            }
            uploaded.record(stream);
            uploadPending = true;
        } else {
            // First touched outside a call (a view asked for before any quantization): copy now, and wait for it
            // (with UB_TIMEOUT's deadline, like every other host wait).
            try (CudaStream s = tc.makeCurrent().createStream(dev.ubuf.cuda.StreamPriority.NORMAL)) {
                s.copyFromHost(device, 0, host, 0, bytes);
                if (stateFloats > 0) {
                    s.copyFromHost(state, 0, host, bytes, stateFloats * Float.BYTES);
                }
                uploaded.record(s);
                uploadPending = true; // if the wait below fails, close still waits before freeing
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
     * {@code qT = q^T} of an FP8 tensor of slot {@code s} (its codes, byte for byte: exact, and one byte read and one
     * written an element). Used where the backward GEMM needs the other layout of a gathered FP8 tensor (cuBLASLt
     * runs FP8 only as A[m, k] B[n, k]^T).
     */
    void transpose(Fp8ScaleTable.Slot s, TensorView q, TensorView qT, CudaStream stream) {
        ensure(stream);
        try (Tracer.Scope t = tc.span("fp8 transpose " + s.describe(), SpanKind.KERNEL, stream)) {
            kernels.transpose(q, qT, stream);
        }
    }

    /**
     * Ends a step: under delayed scaling every slot's amax is reduced over the TP group, copied towards the host, and
     * turned into the next scales on the device (the amax windows are kept there), all queued on {@code stream}:
     * nothing here waits for the GPU unless the host ran {@link #READ_BACK_SLOTS} steps ahead of it. Where the device
     * counts the steps (a graph-capturable context) nothing is copied towards the host and nothing waits. Under
     * current scaling nothing happens.
     */
    void endStep(CudaStream stream) {
        if (!(table.recipe() instanceof dev.ubuf.fp8.Fp8Recipe.DelayedScaling recipe) || device == null) {
            return; // nothing was quantized yet, or nothing carries over
        }
        int n = table.size();
        long amaxOffset = 2L * n * STRIDE * Float.BYTES;
        // The padding between the amaxes is zero: the maximum over the ranks keeps it so.
        TensorView amaxes = new TensorView(device, amaxOffset, 1, (long) n * STRIDE, (long) n * STRIDE, DType.FP32);
        try (Tracer.Scope t = tc.span("fp8 amax reduction and scale update", SpanKind.KERNEL, stream)) {
            tc.allReduceMaxFp32(amaxes, stream);
            if (countOnDevice) {
                update(recipe, stream);
                return;
            }
            // A whole ring ahead of the GPU: wait for the oldest copy, enqueued READ_BACK_SLOTS steps ago.
            take(READ_BACK_SLOTS - 1);
            int slot = nextReadBack;
            nextReadBack = (nextReadBack + 1) % READ_BACK_SLOTS;
            stream.copyToHost(host, readBackOffset(slot), device, amaxOffset, (long) n * STRIDE * Float.BYTES);
            update(recipe, stream);
            // After the kernel: the event then also says the device tables are no longer in use (close waits on it).
            readBack[slot].record(stream);
            pending.addLast(slot);
        }
        take(Integer.MAX_VALUE);
    }

    /**
     * The next scales from the reduced amaxes, on the device: the window's running column is the host's count of
     * ended steps, or, in a graph-capturable context, the device's (read by the kernel, then advanced on the GPU).
     */
    private void update(dev.ubuf.fp8.Fp8Recipe.DelayedScaling recipe, CudaStream stream) {
        int n = table.size();
        int history = recipe.historyLength();
        TensorView whole = new TensorView(device, 0, 1, 3L * n * STRIDE, 3L * n * STRIDE, DType.FP32);
        TensorView fp8Max = new TensorView(state, 0, 1, n, n, DType.FP32);
        TensorView windows = new TensorView(state, (long) n * Float.BYTES, n, history, history, DType.FP32);
        if (countOnDevice) {
            long count = state.address() + countOffsetFloats() * Float.BYTES;
            kernels.delayedUpdate(whole, n, STRIDE, windows, count, recipe, fp8Max, stream);
            kernels.countStep(count, stream);
        } else {
            kernels.delayedUpdate(whole, n, STRIDE, windows, (int) (deviceSteps % history), recipe, fp8Max, stream);
            deviceSteps++;
        }
    }

    /**
     * Makes the device tables (once) on {@code stream}, outside any step: a graph captures a step after this, so the
     * first upload of the tables is not part of what every replay repeats.
     */
    void prepare(CudaStream stream) {
        ensure(stream);
    }

    /**
     * Zeroes every slot's amax cell on {@code stream} (padding included, which must stay zero): what initialisation's
     * tuning pass folded in, from zero inputs but weights not yet set, is not a step's.
     */
    void resetAmaxes(CudaStream stream) {
        if (device == null) {
            return;
        }
        int n = table.size();
        tc.kernels().fillBits(new TensorView(device, 2L * n * STRIDE * Float.BYTES, 1, (long) n * STRIDE,
                (long) n * STRIDE, DType.FP32), 0, stream);
    }

    /**
     * The host table with every ended step's amaxes recorded: waits (UB_TIMEOUT's deadline) for the read-backs still
     * in flight, so call it between steps, once the steps it should reflect were ended. Refused in a graph-capturable
     * context under delayed scaling, whose state lives on the device only.
     */
    Fp8ScaleTable syncedTable() {
        if (countOnDevice && table.delayed()) {
            throw new IllegalStateException("a graph-capturable context keeps delayed scaling's amaxes and scales on"
                    + " the device only (a replayed step leaves the host no trace of them): its host table does not"
                    + " follow the steps");
        }
        if (!closed) {
            take(0);
        }
        return table;
    }

    /**
     * Records the finished read-backs' amaxes into the host table, oldest first, waiting for the oldest unfinished
     * ones while more than {@code leave} are in flight (0: the host table then follows every ended step).
     */
    private void take(int leave) {
        int n = table.size();
        while (!pending.isEmpty()) {
            int slot = pending.peekFirst();
            if (!readBack[slot].isComplete()) {
                if (pending.size() <= leave) {
                    return;
                }
                awaitEvent(readBack[slot], "fp8 amax read-back");
            }
            float[] a = new float[n];
            long base = readBackOffset(slot) / Float.BYTES;
            for (int i = 0; i < n; i++) {
                a[i] = host.segment().getAtIndex(ValueLayout.JAVA_FLOAT, base + (long) i * STRIDE);
            }
            table.endStep(a);
            pending.removeFirst();
        }
    }

    private long readBackOffset(int slot) {
        long ahead = (3L * table.size() * STRIDE + stateFloats()) * Float.BYTES;
        return ahead + (long) slot * table.size() * STRIDE * Float.BYTES;
    }

    /** Waits for {@code event} with UB_TIMEOUT's deadline (without the peers' health checks after an abort). */
    private void awaitEvent(CudaEvent event, String what) {
        try (CudaStream tail = tc.makeCurrent().createStream(dev.ubuf.cuda.StreamPriority.NORMAL)) {
            tail.waitEvent(event);
            if (tc.comm().isAborted()) {
                tc.comm().awaitAfterAbort(tail, () -> what);
            } else {
                tc.comm().await(tail, () -> what);
            }
        }
    }

    /**
     * Frees the tables once the copies that use them have finished (the first upload and the amax read-backs, queued
     * on callers' streams), waited for with UB_TIMEOUT's deadline: the context's close does not know those streams,
     * and pinned memory must not be freed under a copy. If a wait fails the tables stay allocated (a copy may still
     * use them).
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        RuntimeException failure = null;
        try {
            if (uploadPending) {
                awaitEvent(uploaded, "fp8 scale table upload (closing)");
            }
            for (int slot : pending) {
                awaitEvent(readBack[slot], "fp8 amax read-back (closing)");
            }
            take(0); // all finished: the host table ends up with every ended step, as fp8Table says
        } catch (RuntimeException e) {
            failure = e;
        }
        if (failure != null) {
            throw failure;
        }
        releaseBuffers();
    }

    /** Closes what {@link #ensure} made, in reverse order, every one even when some fail. */
    private void releaseBuffers() {
        dev.ubuf.resource.Closer c = new dev.ubuf.resource.Closer("FP8 scale tables of " + tc);
        c.register("scale table", device);
        c.register("amax windows", state);
        CudaEvent[] events = readBack;
        c.onClose("read-back events", () -> {
            if (events != null) {
                dev.ubuf.resource.Closer each = new dev.ubuf.resource.Closer("FP8 read-back events");
                for (CudaEvent e : events) {
                    each.register("read-back event", e);
                }
                each.close();
            }
        });
        c.register("pinned staging", host);
        c.register("upload event", uploaded);
        device = null;
        state = null;
        host = null;
        readBack = null;
        uploaded = null;
        c.close();
    }
}

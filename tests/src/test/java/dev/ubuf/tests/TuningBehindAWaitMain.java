package dev.ubuf.tests;

import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.ModuleLoading;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.gemm.Gemm;
import dev.ubuf.gemm.GemmTuner;
import dev.ubuf.gemm.GemmTuning;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.JCudaDriver;

/**
 * A child JVM (run with CUDA_DEVICE_MAX_CONNECTIONS=1, so every stream of the GPU shares one hardware queue): one
 * stream waits on a flag that only the host will raise, as a stream waits on a peer's flag inside an overlapped op,
 * and then a GEMM is issued on another stream through a tuner of the policy named in args[0]: of a kind never seen, or
 * (args[1] "initialised") of a kind tuned and settled in a window before the wait, as initialisation does.
 * Prints "returned=true|false untuned=N timed=N" once the GEMM call returned or {@link #PATIENCE} passed, then
 * raises the flag, waits for the streams, prints "drained" and exits 0 when the call had returned in time, 3 when it
 * had not (the host was held: what deadlocked the demo, where the "peer" is another GPU's host thread). A held child
 * may not end even after the flag is raised (two H100s, 2026-11-26: it did not within 160 s); its parent kills it.
 */
public final class TuningBehindAWaitMain {
    static final Duration PATIENCE = Duration.ofSeconds(20);
    static final int BLOCKED = 3; // the exit status of a child whose call was held (when it gets to exit at all)

    private TuningBehindAWaitMain() {
    }

    public static void main(String[] args) throws Exception {
        GemmTuner.Policy policy = GemmTuner.Policy.valueOf(args[0]);
        boolean initialised = args.length > 1 && args[1].equals("initialised");
        JCudaDriver.setExceptionsEnabled(true);
        CudaContext ctx = CudaContext.retainPrimary(0).makeCurrent();
        System.out.println("loading=" + ModuleLoading.inEffect());
        GemmTuner tuner = new GemmTuner(new GemmTuning(true, null, null), policy);
        long n = 1024;
        Pointer flagHost = new Pointer();
        JCudaDriver.cuMemHostAlloc(flagHost, Integer.BYTES, JCudaDriver.CU_MEMHOSTALLOC_DEVICEMAP
                | JCudaDriver.CU_MEMHOSTALLOC_PORTABLE);
        flagHost.getByteBuffer(0, Integer.BYTES).order(java.nio.ByteOrder.nativeOrder()).putInt(0, 0);
        CUdeviceptr flagDevice = new CUdeviceptr();
        JCudaDriver.cuMemHostGetDevicePointer(flagDevice, flagHost, 0);
        long flag = Handles.address(flagDevice);
        ExecutorService caller = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "gemm-caller");
            t.setDaemon(true);
            return t;
        });
        boolean returned;
        try (Gemm gemm = new Gemm(ctx, tuner);
             CudaStream waiting = ctx.createStream(StreamPriority.NORMAL);
             CudaStream s = ctx.createStream(StreamPriority.NORMAL);
             DeviceBuffer a = ctx.allocate(n * n * 2, "a");
             DeviceBuffer b = ctx.allocate(n * n * 2, "b");
             DeviceBuffer c = ctx.allocate(n * n * 2, "c")) {
            s.fill8(a.address(), (byte) 0, n * n * 2);
            s.fill8(b.address(), (byte) 0, n * n * 2);
            // cuBLASLt's one-time set-up happens before the wait, as initialisation runs GEMMs before any step: a GEMM
            // of another kind, untuned. Without it the domain tuner's untimed call was held too (four H100s,
            // 2026-11-27): what holds it then is cuBLASLt's first use in the process, not the tuner.
            try (Gemm setUp = new Gemm(ctx, GemmTuner.disabled())) {
                setUp.multiply(TensorView.of(a, n / 2, n / 2, DType.BF16), TensorView.of(b, n / 2, n / 2, DType.BF16),
                        TensorView.of(c, n / 2, n / 2, DType.BF16), s);
            }
            if (initialised) {
                // What TpContext.initialize does before any step: the kind is tuned in a window and settled.
                try (GemmTuner.Window w = tuner.openWindow()) {
                    gemm.multiply(TensorView.of(a, n, n, DType.BF16), TensorView.of(b, n, n, DType.BF16),
                            TensorView.of(c, n, n, DType.BF16), s);
                    s.synchronize();
                    w.settle(w.choices());
                }
            }
            s.synchronize();
            waiting.waitValue32(flag, 1); // the "peer" raises it later
            Future<?> call = caller.submit(() -> {
                ctx.makeCurrent();
                gemm.multiply(TensorView.of(a, n, n, DType.BF16), TensorView.of(b, n, n, DType.BF16),
                        TensorView.of(c, n, n, DType.BF16), s);
            });
            try {
                call.get(PATIENCE.toSeconds(), TimeUnit.SECONDS);
                returned = true;
            } catch (TimeoutException e) {
                returned = false;
            }
            // Said before the flag is raised: a held child may never get further (two H100s, 2026-11-26: it did not).
            System.out.println("returned=" + returned + " untuned=" + tuner.untunedCount() + " timed="
                    + tuner.timedCount());
            System.out.flush();
            flagHost.getByteBuffer(0, Integer.BYTES).order(java.nio.ByteOrder.nativeOrder()).putInt(0, 1);
            call.get(); // finishes now that the wait is released; a failure of the GEMM shows here
            if (!waiting.synchronize(PATIENCE) || !s.synchronize(PATIENCE)) {
                throw new IllegalStateException("the streams did not drain after the flag was raised");
            }
        } finally {
            caller.shutdownNow();
        }
        JCudaDriver.cuMemFreeHost(flagHost);
        System.out.println("drained");
        System.out.flush();
        System.exit(returned ? 0 : BLOCKED);
    }

    /** A CUdeviceptr's raw address (JCuda keeps it protected). */
    private static final class Handles extends CUdeviceptr {
        static long address(CUdeviceptr p) {
            return new Handles(p).raw();
        }

        private Handles(CUdeviceptr p) {
            super(p, 0);
        }

        private long raw() {
            return getNativePointer() + getByteOffset();
        }
    }
}

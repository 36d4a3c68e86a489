package dev.ubuf.cuda;

import dev.ubuf.ffi.NativeLibrary;
import dev.ubuf.ffi.NativeLibraryException;
import jcuda.driver.CUresult;
import jcuda.driver.JCudaDriver;

import java.util.List;
import java.util.Optional;

/** Driver entry points shared by the wrappers: error checking and availability. */
public final class Cuda {
    private Cuda() {
    }

    /**
     * Throws a {@link CudaException} naming {@code call} unless {@code rc} is CUDA_SUCCESS: a
     * {@link CudaFatalException} for a sticky error, a {@link DeviceOutOfMemoryException} for CUDA_ERROR_OUT_OF_MEMORY.
     */
    static void check(int rc, String call) {
        if (rc != CUresult.CUDA_SUCCESS) {
            throw CudaException.of(call, rc, CUresult.stringFor(rc));
        }
    }

    /**
     * Runs a JCuda call whose non-success codes are expected answers (NOT_READY, ALREADY_ENABLED) and returns its
     * code, also when someone switched JCuda's process-wide exception mode on.
     */
    static int returnCode(java.util.function.IntSupplier call) {
        try {
            return call.getAsInt();
        } catch (jcuda.CudaException e) {
            String m = String.valueOf(e.getMessage());
            for (int code : new int[]{CUresult.CUDA_ERROR_NOT_READY, CUresult.CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED}) {
                if (m.contains(CUresult.stringFor(code))) {
                    return code;
                }
            }
            throw e;
        }
    }

    /**
     * Initialises the driver (idempotent in the driver), with eager module loading unless the user chose
     * ({@link ModuleLoading}), and returns the device count.
     *
     * @throws CudaUnavailableException when there is no driver or no device
     */
    public static int deviceCount() {
        ModuleLoading.eagerUnlessChosen(); // before the driver library is even opened
        HardwareQueues.mostUnlessChosen();
        if (DriverProbe.MISSING != null) {
            throw new CudaUnavailableException(DriverProbe.MISSING);
        }
        JCudaNativeLibrary.ensureWritten(); // before JCudaDriver's class loads its library
        try {
            int rc = JCudaDriver.cuInit(0);
            if (rc != CUresult.CUDA_SUCCESS) {
                throw new CudaUnavailableException("no usable CUDA driver: cuInit returned " + CUresult.stringFor(rc));
            }
            int[] n = new int[1];
            check(JCudaDriver.cuDeviceGetCount(n), "cuDeviceGetCount");
            if (n[0] == 0) {
                throw new CudaUnavailableException("the CUDA driver reports no device");
            }
            return n[0];
        } catch (UnsatisfiedLinkError | NoClassDefFoundError e) {
            String msg = String.valueOf(e.getMessage());
            throw new CudaUnavailableException("the CUDA driver binding could not be loaded: "
                    + msg.lines().findFirst().orElse(msg));
        }
    }

    /** Looks for libcuda.so.1 once, without JCuda, so a machine without a driver gets one plain sentence. */
    private static final class DriverProbe {
        static final String MISSING = probe();

        private static String probe() {
            try {
                NativeLibrary.open(List.of("libcuda.so.1"));
                return null;
            } catch (NativeLibraryException.NotFound e) {
                return "no CUDA driver on this machine (libcuda.so.1 not found)";
            } catch (NativeLibraryException.AccessDenied e) {
                return e.getMessage();
            }
        }
    }

    /** Empty when at least {@code devices} GPUs are usable, else the reason (for test skips and `ubuf info`). */
    public static Optional<String> unavailableReason(int devices) {
        try {
            int n = deviceCount();
            return n >= devices ? Optional.empty()
                    : Optional.of("needs " + devices + " GPUs, found " + n);
        } catch (CudaUnavailableException e) {
            return Optional.of(e.getMessage());
        }
    }

    /** Driver version as major*1000 + minor*10 (CUDA's convention). */
    public static int driverVersion() {
        deviceCount();
        int[] v = new int[1];
        check(JCudaDriver.cuDriverGetVersion(v), "cuDriverGetVersion");
        return v[0];
    }
}

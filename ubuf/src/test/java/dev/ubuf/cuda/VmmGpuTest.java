package dev.ubuf.cuda;

import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuCtxSynchronize;
import static jcuda.driver.JCudaDriver.cuDeviceGetCount;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRetain;
import static jcuda.driver.JCudaDriver.cuMemGetInfo;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoH;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoD;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ubuf.testutil.GpuAssumptions;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.List;
import java.util.Random;
import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.JCudaDriver;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** VMM on a real GPU; skipped where there is no CUDA driver or device. Contexts are set with JCuda, as ubuf does. */
@SuppressWarnings("restricted") // the test closes the exported fd through libc
class VmmGpuTest {
    private CudaVmm vmm;
    private int deviceCount;

    @BeforeEach
    void needsAGpuWithVmm() {
        vmm = CudaVmm.driver();
        GpuAssumptions.assumeGpu(vmm.isAvailable(), "no usable CUDA driver (libcuda.so.1 / cuInit) on this machine");
        JCudaDriver.setExceptionsEnabled(true);
        JCudaDriver.cuInit(0);
        int[] count = new int[1];
        cuDeviceGetCount(count);
        deviceCount = count[0];
        GpuAssumptions.assumeGpu(deviceCount > 0, "no CUDA device");
        GpuAssumptions.assumeGpu(vmm.supportsVmm(0), "device 0 does not support VMM");
        makeCurrent(0);
    }

    private static void makeCurrent(int ordinal) {
        CUdevice dev = new CUdevice();
        JCudaDriver.cuDeviceGet(dev, ordinal);
        CUcontext ctx = new CUcontext();
        cuDevicePrimaryCtxRetain(ctx, dev);
        cuCtxSetCurrent(ctx);
    }

    private static CUdeviceptr at(long address) {
        return new CUdeviceptr().withByteOffset(address);
    }

    private static void closeFd(int fd) throws Throwable {
        Linker linker = Linker.nativeLinker();
        MethodHandle close = linker.downcallHandle(linker.defaultLookup().find("close").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
        assertEquals(0, (int) close.invokeExact(fd));
    }

    @Test
    void queriesAnswer() {
        long min = vmm.granularity(0, CudaVmm.Granularity.MINIMUM);
        long rec = vmm.granularity(0, CudaVmm.Granularity.RECOMMENDED);
        System.out.printf("device 0: VMM granularity minimum %d, recommended %d, posix fd %b%n", min, rec,
                vmm.supportsPosixFdHandles(0));
        assertTrue(min > 0 && rec % min == 0, min + " / " + rec);
        assertEquals(0, vmm.device(0));
        assertEquals("CUDA_ERROR_INVALID_VALUE", vmm.errorName(1));
        assertTrue(!vmm.errorString(1).isBlank());
    }

    @Test
    void anExportedAndReimportedAllocationAliasesTheSameMemory() throws Throwable {
        GpuAssumptions.assumeGpu(vmm.supportsPosixFdHandles(0), "device 0 cannot export POSIX file descriptors");
        long seed = System.nanoTime();
        try (VmmAllocation a = VmmAllocation.create(1 << 20, 0)) {
            long g = vmm.granularity(0, CudaVmm.Granularity.MINIMUM);
            assertEquals(CudaVmm.roundUpToGranularity(1 << 20, g), a.size());
            int fd = a.exportFd();
            assertTrue(fd >= 0);
            VmmAllocation b;
            try {
                b = VmmAllocation.importFd(fd, a.size(), 0);
            } finally {
                closeFd(fd);
            }
            try (b; VmmMapping m = VmmMapping.map(2 * a.size(),
                    List.of(new VmmMapping.Segment(a, 0), new VmmMapping.Segment(b, a.size())), new int[] {0})) {
                byte[] data = new byte[4096];
                new Random(seed).nextBytes(data);
                cuMemcpyHtoD(at(m.address(0) + 8192), Pointer.to(data), data.length);
                byte[] back = new byte[data.length];
                cuMemcpyDtoH(Pointer.to(back), at(m.address(1) + 8192), back.length);
                cuCtxSynchronize();
                assertArrayEquals(data, back, "segment 1 is the same physical memory as segment 0 (seed " + seed + ")");
            }
        }
    }

    @Test
    void aBadCallRaisesCudaExceptionWithTheDriversName() {
        // Nothing is reserved at address 2 MiB: unmapping it is invalid.
        CudaException e = assertThrows(CudaException.class, () -> vmm.unmap(2L << 20, 2L << 20));
        assertEquals("cuMemUnmap", e.call());
        assertTrue(e.errorName().startsWith("CUDA_ERROR_"), e.getMessage());
        System.out.println("expected failure: " + e.getMessage());
    }

    @Test
    void peersAllocationMappedForBothDevices() {
        GpuAssumptions.assumeGpu(deviceCount >= 2, "needs two GPUs");
        int[] can = new int[1];
        CUdevice d0 = new CUdevice();
        CUdevice d1 = new CUdevice();
        JCudaDriver.cuDeviceGet(d0, 0);
        JCudaDriver.cuDeviceGet(d1, 1);
        JCudaDriver.cuDeviceCanAccessPeer(can, d0, d1);
        GpuAssumptions.assumeGpu(can[0] != 0, "device 0 cannot access device 1");
        makeCurrent(1);
        try (VmmAllocation onDevice1 = VmmAllocation.create(1, 1)) {
            makeCurrent(0);
            try (VmmMapping m = VmmMapping.map(onDevice1.size(), List.of(new VmmMapping.Segment(onDevice1, 0)),
                    new int[] {0, 1})) {
                int[] data = {1, 2, 3, 4, 5, 6, 7, 8};
                cuMemcpyHtoD(at(m.address()), Pointer.to(data), 32);
                int[] back = new int[8];
                cuMemcpyDtoH(Pointer.to(back), at(m.address()), 32);
                assertArrayEquals(data, back);
            }
        }
    }

    @Test
    void thousandsOfCyclesLeakNothing() {
        long[] free0 = new long[1];
        long[] total = new long[1];
        cuMemGetInfo(free0, total);
        for (int i = 0; i < 2000; i++) {
            try (VmmAllocation a = VmmAllocation.create(4 << 20, 0);
                    VmmMapping m = VmmMapping.map(a.size(), List.of(new VmmMapping.Segment(a, 0)), new int[] {0})) {
                assertTrue(m.address() != 0);
            }
        }
        long[] free1 = new long[1];
        cuMemGetInfo(free1, total);
        assertTrue(free1[0] >= free0[0] - (64L << 20), "free memory fell from " + free0[0] + " to " + free1[0]);
    }

    /** JCuda's exception switch is process-wide: restore the default so later test classes see return codes. */
    @org.junit.jupiter.api.AfterAll
    static void restoreJCudaReturnCodes() {
        if (dev.ubuf.cuda.Cuda.unavailableReason(1).isEmpty()) { // without a driver JCuda never loaded
            JCudaDriver.setExceptionsEnabled(false);
        }
    }
}

package dev.ubuf.gemm;

import static dev.ubuf.tensor.DType.BF16;
import static dev.ubuf.tensor.DType.FP16;
import static dev.ubuf.tensor.DType.FP32;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.ubuf.tensor.DType;
import dev.ubuf.testutil.GpuAssumptions;
import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUstream;
import jcuda.driver.JCudaDriver;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * GemmRunner on a real GPU against a float64 host reference. Device memory and the stream come straight from JCuda
 * here (test scaffolding only); skipped, with the reason, where there is no CUDA driver, device or libcublasLt.
 */
class CublasLtGemmGpuTest {
    private static CUdevice device;
    private static CUcontext context;

    private final List<DeviceBuffer> buffers = new ArrayList<>();
    private CublasLtHandle handle;
    private DeviceBuffer workspace;
    private GemmRunner runner;

    /** A CUdeviceptr whose raw address is visible (JCuda keeps it protected). */
    private static final class DeviceBuffer extends CUdeviceptr {
        final long bytes;

        DeviceBuffer(long bytes) {
            this.bytes = bytes;
            JCudaDriver.cuMemAlloc(this, bytes);
        }

        long address() {
            return getNativePointer() + getByteOffset();
        }
    }

    private static final class Stream extends CUstream {
        Stream() {
            JCudaDriver.cuStreamCreate(this, 0);
        }

        long address() {
            return getNativePointer();
        }
    }

    /** Why the GPU tests cannot run here, or null; each test is skipped with it so the reason shows in reports. */
    private static String unavailable;

    @BeforeAll
    static void findGpu() {
        unavailable = gpuUnavailableReason();
        if (unavailable == null) {
            device = new CUdevice();
            JCudaDriver.cuDeviceGet(device, 0);
            context = new CUcontext();
            JCudaDriver.cuDevicePrimaryCtxRetain(context, device);
        }
    }

    private static String gpuUnavailableReason() {
        if (!canLoad("libcuda.so.1")) {
            return "no CUDA driver (libcuda.so.1): GPU GEMM tests skipped";
        }
        if (!CublasLt.isAvailable()) {
            return "libcublasLt.so.13/.12 not loadable: GPU GEMM tests skipped";
        }
        int[] count = {0};
        try {
            JCudaDriver.setExceptionsEnabled(true);
            JCudaDriver.cuInit(0);
            JCudaDriver.cuDeviceGetCount(count);
        } catch (Throwable t) {
            return "CUDA driver not usable (" + t + "): GPU GEMM tests skipped";
        }
        return count[0] > 0 ? null : "no CUDA device: GPU GEMM tests skipped";
    }

    @AfterAll
    static void releaseContext() {
        if (context != null) {
            JCudaDriver.cuDevicePrimaryCtxRelease(device);
        }
    }

    @BeforeEach
    void openRunner() {
        GpuAssumptions.assumeGpu(unavailable == null, unavailable);
        JCudaDriver.cuCtxSetCurrent(context);
        handle = CublasLtHandle.create();
        workspace = new DeviceBuffer(GemmRunner.RECOMMENDED_WORKSPACE_BYTES);
        runner = new GemmRunner(handle, workspace.address(), workspace.bytes);
    }

    @AfterEach
    void closeAll() {
        if (unavailable != null) {
            return; // skipped: nothing was opened, and JCuda must not be touched without a driver
        }
        JCudaDriver.cuCtxSynchronize();
        if (runner != null) {
            runner.close();
        }
        if (handle != null) {
            handle.close();
        }
        for (DeviceBuffer b : buffers) {
            JCudaDriver.cuMemFree(b);
        }
        if (workspace != null) {
            JCudaDriver.cuMemFree(workspace);
        }
    }

    @ParameterizedTest(name = "{0}->{1} tf32={2} transA={3} transB={4}")
    @CsvSource({
            "BF16,BF16,false,false,false", "BF16,BF16,false,true,false", "BF16,BF16,false,false,true",
            "BF16,BF16,false,true,true", "BF16,FP32,false,false,false", "BF16,FP32,false,true,true",
            "FP16,FP16,false,false,true", "FP16,FP32,false,true,false",
            "FP32,FP32,false,false,false", "FP32,FP32,false,true,true", "FP32,FP32,true,false,false"})
    void denseGemmMatchesFloat64Reference(DType ab, DType c, boolean tf32, boolean transA, boolean transB) {
        GemmSpec spec = GemmSpec.of(ab, c, 96, 80, 136, transA, transB).withAllowTf32(tf32);
        check(spec, 0, 0, 0, 1.0f, 0.0f, 0, new SplittableRandom(System.nanoTime()));
    }

    @Test
    void subViewsAtOddOffsetsAccumulateWithBetaAndLeaveTheRestAlone() {
        long seed = System.nanoTime();
        SplittableRandom random = new SplittableRandom(seed);
        // A: rows of a wider [*, 200] bf16 matrix starting one element in (2-byte aligned); C: a column block of a
        // [*, 160] fp32 matrix, accumulated into with beta = 1 (fp32 partial sums).
        GemmSpec spec = GemmSpec.of(BF16, FP32, 64, 48, 72, false, true).withLeadingDimensions(200, 88, 160);
        check(spec, 1, 8, 16, 0.5f, 1.0f, 0, random);
        check(spec, 0, 0, 0, 0.5f, 1.0f, 0, random);
        assertEquals(2, runner.planCount(), "different pointer alignments get different plans (seed " + seed + ")");
    }

    @Test
    void smCountTargetAndAnExplicitStreamWork() {
        Stream stream = new Stream();
        try {
            GemmSpec spec = GemmSpec.of(BF16, BF16, 256, 128, 512, false, false).withSmCountTarget(8);
            check(spec, 0, 0, 0, 1.0f, 0.0f, stream.address(), new SplittableRandom(System.nanoTime()));
        } finally {
            JCudaDriver.cuStreamDestroy(stream);
        }
    }

    /**
     * The bias epilogue adds one vector element per column of C, in bf16 and fp16, overwriting and accumulating, the
     * vector 16-byte aligned and off that by one element (each its own plan), and an FP8-free transposed layout.
     */
    @ParameterizedTest(name = "{0} beta={1} biasOffset={2} transB={3}")
    @CsvSource({"BF16,0,0,false", "BF16,1,8,true", "BF16,0,1,false", "FP16,1,0,false", "FP16,0,3,true"})
    void aBiasEpilogueAddsItsVectorToEveryRow(DType t, float beta, int biasOffset, boolean transB) {
        GemmSpec spec = GemmSpec.of(t, t, 96, 80, 136, false, transB);
        check(spec, 0, 0, 0, 1.0f, beta, 0, biasOffset, new SplittableRandom(System.nanoTime()));
        check(spec, 0, 0, 0, 1.0f, beta, 0, -1, new SplittableRandom(System.nanoTime()));
        assertEquals(2, runner.planCount(), "a GEMM with a bias is another plan than one without");
    }

    @Test
    void badInputsAreRejectedBeforeCublasLtAndCloseIsIdempotent() {
        DeviceBuffer x = allocate(1 << 16);
        GemmSpec spec = GemmSpec.of(BF16, FP32, 16, 16, 16, false, false);
        assertThrows(IllegalArgumentException.class, () -> runner.run(spec, x.address() + 1, x.address(),
                x.address(), 1, 0, 0));
        runner.close();
        assertDoesNotThrow(runner::close);
        assertThrows(IllegalStateException.class, () -> runner.run(spec, x.address(), x.address(), x.address(), 1, 0, 0));
        handle.close();
        assertDoesNotThrow(handle::close);
    }

    @Test
    void handleReportsTheLibraryVersion() {
        assertTrue(handle.version() >= 120000, "version " + handle.version());
    }

    /**
     * Fills A, B and C (each at an element offset inside its buffer) with values exact in their type, runs the GEMM
     * and checks every element of C's buffer: inside the view against float64, outside unchanged.
     */
    private void check(GemmSpec s, int aOff, int bOff, int cOff, float alpha, float beta, long stream,
                       SplittableRandom random) {
        check(s, aOff, bOff, cOff, alpha, beta, stream, -1, random);
    }

    /** As above, with a bias vector of C's type at element {@code biasOff} of its buffer (-1: no bias). */
    private void check(GemmSpec s, int aOff, int bOff, int cOff, float alpha, float beta, long stream, int biasOff,
                       SplittableRandom random) {
        DType ab = s.aType();
        DType ct = s.cType();
        float[] a = randomValues(random, ab, aOff + (int) (s.aBytes() / ab.bytes()));
        float[] b = randomValues(random, ab, bOff + (int) (s.bBytes() / ab.bytes()));
        float[] c = randomValues(random, ct, cOff + (int) (s.cBytes() / ct.bytes()));
        float[] bias = biasOff < 0 ? null : randomValues(random, ct, biasOff + s.n());
        DeviceBuffer da = upload(a, ab);
        DeviceBuffer db = upload(b, ab);
        DeviceBuffer dc = upload(c, ct);
        long biasAddress = bias == null ? 0 : upload(bias, ct).address() + (long) biasOff * ct.bytes();

        long cAddress = dc.address() + (long) cOff * ct.bytes();
        runner.run(s, da.address() + (long) aOff * ab.bytes(), db.address() + (long) bOff * ab.bytes(), cAddress,
                cAddress, alpha, beta, null, biasAddress, stream, CandidateBench.NONE);
        JCudaDriver.cuCtxSynchronize();
        float[] result = download(dc, ct, c.length);

        boolean[] inView = new boolean[c.length];
        double absTolerance = switch (ct) {
            case BF16, FP16 -> 2e-3;
            default -> s.allowTf32() ? 5e-2 : 1e-4;
        };
        double relTolerance = switch (ct) {
            case BF16 -> 1.0 / 128;
            case FP16 -> 1.0 / 512;
            default -> s.allowTf32() ? 1e-2 : 1e-5;
        };
        for (int i = 0; i < s.m(); i++) {
            for (int j = 0; j < s.n(); j++) {
                double sum = 0;
                for (int p = 0; p < s.k(); p++) {
                    double aip = s.transA() ? a[aOff + (int) (p * s.lda()) + i] : a[aOff + (int) (i * s.lda()) + p];
                    double bpj = s.transB() ? b[bOff + (int) (j * s.ldb()) + p] : b[bOff + (int) (p * s.ldb()) + j];
                    sum += aip * bpj;
                }
                int at = cOff + (int) (i * s.ldc()) + j;
                inView[at] = true;
                double product = alpha * sum;
                double old = beta == 0 ? 0 : beta * (double) c[at];
                double biasJ = bias == null ? 0 : bias[biasOff + j];
                double expected = product + old + biasJ;
                // With beta != 0 and a 16-bit C the epilogue may round once in C's type before its last addition
                // (cuBLASLt 13.1 on an H200 did, with and without a bias: bf16 elements 6-7 ulps from the exact
                // value): one more rounding of the largest partial sum is allowed.
                double between = beta == 0 || ct == FP32 ? 0 : relTolerance * Math.max(Math.abs(product),
                        Math.max(Math.abs(product + biasJ), Math.abs(product + old)));
                if (Math.abs(result[at] - expected) > absTolerance + relTolerance * Math.abs(expected) + between) {
                    fail("C[" + i + ", " + j + "] = " + result[at] + ", expected " + expected + " for " + s
                            + " offsets " + aOff + "/" + bOff + "/" + cOff + " bias offset " + biasOff);
                }
            }
        }
        for (int x = 0; x < c.length; x++) {
            if (!inView[x]) {
                assertEquals(c[x], result[x], "element " + x + " of C's buffer lies outside the view but changed");
            }
        }
    }

    /** Values in [-1, 1) rounded to the type, so host and device multiply the same numbers. */
    private static float[] randomValues(SplittableRandom random, DType type, int count) {
        float[] v = new float[count];
        for (int i = 0; i < count; i++) {
            v[i] = type.round((float) random.nextDouble(-1, 1));
        }
        return v;
    }

    private DeviceBuffer allocate(long bytes) {
        DeviceBuffer b = new DeviceBuffer(bytes);
        buffers.add(b);
        return b;
    }

    private DeviceBuffer upload(float[] values, DType type) {
        ByteBuffer host = ByteBuffer.allocate(values.length * type.bytes()).order(ByteOrder.LITTLE_ENDIAN);
        for (float v : values) {
            int bits = type.encode(v);
            if (type.bytes() == 4) {
                host.putInt(bits);
            } else {
                host.putShort((short) bits);
            }
        }
        DeviceBuffer d = allocate(host.capacity());
        JCudaDriver.cuMemcpyHtoD(d, Pointer.to(host.array()), host.capacity());
        return d;
    }

    private static float[] download(DeviceBuffer d, DType type, int count) {
        byte[] bytes = new byte[count * type.bytes()];
        JCudaDriver.cuMemcpyDtoH(Pointer.to(bytes), d, bytes.length);
        ByteBuffer host = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        float[] v = new float[count];
        for (int i = 0; i < count; i++) {
            v[i] = type.decode(type.bytes() == 4 ? host.getInt() : host.getShort());
        }
        return v;
    }

    private static boolean canLoad(String soname) {
        try {
            SymbolLookup.libraryLookup(soname, Arena.global());
            return true;
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    /** JCuda's exception switch is process-wide: restore the default so later test classes see return codes. */
    @org.junit.jupiter.api.AfterAll
    static void restoreJCudaReturnCodes() {
        if (dev.ubuf.cuda.Cuda.unavailableReason(1).isEmpty()) { // without a driver JCuda never loaded
            JCudaDriver.setExceptionsEnabled(false);
        }
    }
}

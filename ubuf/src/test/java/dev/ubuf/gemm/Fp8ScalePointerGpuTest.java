package dev.ubuf.gemm;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ubuf.tensor.DType;
import dev.ubuf.testutil.GpuAssumptions;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.JCudaDriver;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * What real cuBLASLt accepts as an FP8 GEMM's scale pointers, driven below ubuf's own checks (straight at the
 * descriptors, the heuristic and cublasLtMatmul), against the rule {@link GemmRunner#checkFp8} enforces on the host
 * before any GPU work: the two must agree at every offset, so the host rule (which CPU tests and the host simulation
 * exercise) refuses exactly what the library refuses. If a new cuBLASLt relaxes the rule, this test fails and says so.
 */
class Fp8ScalePointerGpuTest {
    private static final int M = 64;
    private static final int N = 64;
    private static final int K = 64;
    private static final byte E4M3_ONE = 0x38;

    private static CUdevice device;
    private static CUcontext context;

    @BeforeAll
    static void openContext() {
        GpuAssumptions.assumeGpus(1);
        GpuAssumptions.assumeGpu(CublasLt.isAvailable(), "libcublasLt.so.13/.12 not loadable");
        JCudaDriver.setExceptionsEnabled(true);
        JCudaDriver.cuInit(0);
        device = new CUdevice();
        JCudaDriver.cuDeviceGet(device, 0);
        context = new CUcontext();
        JCudaDriver.cuDevicePrimaryCtxRetain(context, device);
    }

    @AfterAll
    static void releaseContext() {
        if (context != null) {
            JCudaDriver.cuDevicePrimaryCtxRelease(device);
        }
    }

    /** A CUdeviceptr whose raw address is visible (JCuda keeps it protected). */
    private static final class Dev extends CUdeviceptr {
        long address() {
            return getNativePointer() + getByteOffset();
        }
    }

    private static long address(Dev p) {
        return p.address();
    }

    @Test
    void theHostRuleOnScalePointersMatchesCublasLt() {
        JCudaDriver.cuCtxSetCurrent(context);
        GemmSpec spec = GemmSpec.fp8(DType.FP8_E4M3, DType.FP8_E4M3, DType.BF16, M, N, K);
        Dev a = new Dev();
        Dev b = new Dev();
        Dev c = new Dev();
        Dev scales = new Dev();
        Dev ws = new Dev();
        long wsBytes = GemmRunner.RECOMMENDED_WORKSPACE_BYTES;
        JCudaDriver.cuMemAlloc(a, (long) M * K);
        JCudaDriver.cuMemAlloc(b, (long) N * K);
        JCudaDriver.cuMemAlloc(c, (long) M * N * 2);
        JCudaDriver.cuMemAlloc(scales, 512);
        JCudaDriver.cuMemAlloc(ws, wsBytes);
        List<String> disagreements = new ArrayList<>();
        List<String> table = new ArrayList<>();
        try (CublasLtHandle handle = CublasLtHandle.create()) {
            JCudaDriver.cuMemsetD8(a, E4M3_ONE, (long) M * K);
            JCudaDriver.cuMemsetD8(b, E4M3_ONE, (long) N * K);
            float[] fill = new float[128];
            java.util.Arrays.fill(fill, 2f);
            JCudaDriver.cuMemcpyHtoD(scales, Pointer.to(fill), 512);
            long base = address(scales);
            for (int offset : new int[]{0, 4, 8, 12, 16, 20, 32, 48, 64}) {
                long sa = base + offset;
                long sb = base + 256 + offset;
                Optional<String> real = runOnCublasLt(handle, spec, address(a), address(b), address(c), sa, sb,
                        address(ws), wsBytes);
                Optional<String> host = hostRefusal(spec, sa, sb);
                table.add("offset " + offset + ": cuBLASLt " + real.map(r -> "refused (" + r + ")").orElse("ran")
                        + ", host rule " + host.map(r -> "refuses").orElse("accepts"));
                if (real.isPresent() != host.isPresent()) {
                    disagreements.add("offset " + offset);
                }
            }
        } finally {
            JCudaDriver.cuCtxSynchronize();
            for (CUdeviceptr p : new CUdeviceptr[]{ws, scales, c, b, a}) {
                JCudaDriver.cuMemFree(p);
            }
        }
        System.out.println("FP8 scale pointers:\n  " + String.join("\n  ", table));
        assertEquals(List.of(), disagreements, "the host rule and cuBLASLt disagree on scale pointer alignment:\n  "
                + String.join("\n  ", table));
    }

    private static Optional<String> hostRefusal(GemmSpec spec, long sa, long sb) {
        try {
            GemmRunner.checkFp8(spec, 0f, Gemm.Fp8Scales.of(sa, sb));
            return Optional.empty();
        } catch (IllegalArgumentException e) {
            return Optional.of(e.getMessage());
        }
    }

    /** Empty when cuBLASLt ran the GEMM and D = 4 k everywhere; else what it said. */
    private static Optional<String> runOnCublasLt(CublasLtHandle handle, GemmSpec spec, long a, long b, long c,
                                                  long sa, long sb, long ws, long wsBytes) {
        MatmulPlan.Key key = new MatmulPlan.Key(spec, 256, 256, 256);
        // The record's own check is the 4-byte one; the host rule under test is GemmRunner.checkFp8.
        Gemm.Fp8Scales scales = Gemm.Fp8Scales.of(sa, sb);
        MatmulPlan plan;
        try {
            plan = MatmulPlan.choose(handle.library(), handle.address(), key, scales, wsBytes,
                    (d, candidates) -> GemmTuner.Choice.FIRST);
        } catch (GemmException e) {
            return Optional.of("heuristic: " + e.getMessage());
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment one = arena.allocateFrom(JAVA_FLOAT, 1f);
            MemorySegment zero = arena.allocateFrom(JAVA_FLOAT, 0f);
            MatmulDescriptors d = plan.descriptors();
            ColumnMajorCall call = d.call();
            JCudaDriver.cuMemsetD8(new CUdeviceptr().withByteOffset(c), (byte) 0xff, (long) M * N * 2);
            handle.library().matmul(handle.address(), d.matmulDesc(), one, call.firstAddress(a, b), d.aLayout(),
                    call.secondAddress(a, b), d.bLayout(), zero, d.cAddress(c), d.cLayout(), c, d.dLayout(),
                    plan.algo(), ws, wsBytes, 0);
            JCudaDriver.cuCtxSynchronize();
            short[] out = new short[M * N];
            JCudaDriver.cuMemcpyDtoH(Pointer.to(out), new CUdeviceptr().withByteOffset(c), (long) M * N * 2);
            float expected = 4f * K;
            for (int i = 0; i < out.length; i++) {
                float v = Float.intBitsToFloat((out[i] & 0xffff) << 16);
                if (v != expected) {
                    return Optional.of("ran, but D[" + i + "] = " + v + ", expected " + expected);
                }
            }
            return Optional.empty();
        } catch (GemmException e) {
            return Optional.of("cublasLtMatmul: " + e.getMessage());
        } finally {
            plan.close();
        }
    }
}

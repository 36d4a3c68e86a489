package dev.ubuf.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

class CudaVmmMissingLibraryTest {
    static final String MISSING = "libcuda-ubuf-test-missing.so.1";

    private static void namesTheLibrary(Executable call) {
        CudaException e = assertThrows(CudaException.class, call);
        assertTrue(e.getMessage().contains(MISSING), e.getMessage());
        assertEquals("dlopen " + MISSING, e.call());
        assertEquals(-1, e.code());
        assertTrue(e.getCause() instanceof IllegalArgumentException, "the loader's own error is kept as the cause");
    }

    @Test
    void aMissingDriverIsAClearCudaExceptionOnEveryCall() {
        CudaVmm vmm = new CudaVmm(MISSING); // must not throw by itself
        assertFalse(vmm.isAvailable());
        namesTheLibrary(() -> vmm.granularity(0, CudaVmm.Granularity.MINIMUM));
        namesTheLibrary(() -> vmm.memCreate(1 << 21, 0));
        namesTheLibrary(() -> vmm.memRelease(42));
        namesTheLibrary(() -> vmm.exportToFd(42));
        namesTheLibrary(() -> vmm.importFromFd(3));
        namesTheLibrary(() -> vmm.addressReserve(1 << 21, 0));
        namesTheLibrary(() -> vmm.addressFree(1 << 21, 1 << 21));
        namesTheLibrary(() -> vmm.map(1 << 21, 1 << 21, 0, 42));
        namesTheLibrary(() -> vmm.unmap(1 << 21, 1 << 21));
        namesTheLibrary(() -> vmm.setAccess(1 << 21, 1 << 21, new int[] {0}));
        namesTheLibrary(() -> vmm.device(0));
        namesTheLibrary(() -> vmm.supportsVmm(0));
        namesTheLibrary(() -> vmm.supportsPosixFdHandles(0));
        namesTheLibrary(() -> vmm.errorName(1));
        namesTheLibrary(() -> VmmAllocation.create(vmm, 100, 0));
        assertTrue(vmm.toString().contains("unavailable"), vmm.toString());
    }

    @Test
    void argumentsAreCheckedBeforeTheDriver() {
        CudaVmm vmm = new CudaVmm(MISSING);
        assertThrows(IllegalArgumentException.class, () -> vmm.memCreate(0, 0));
        assertThrows(IllegalArgumentException.class, () -> vmm.memCreate(1 << 21, -1));
        assertThrows(IllegalArgumentException.class, () -> vmm.importFromFd(-1));
        assertThrows(IllegalArgumentException.class, () -> vmm.addressReserve(0, 0));
        assertThrows(IllegalArgumentException.class, () -> vmm.setAccess(1 << 21, 1 << 21, new int[0]));
        assertThrows(IllegalArgumentException.class, () -> vmm.setAccess(1 << 21, 1 << 21, new int[] {-2}));
        assertThrows(IllegalArgumentException.class, () -> VmmAllocation.create(vmm, 0, 0));
        assertThrows(IllegalArgumentException.class, () -> VmmAllocation.importFd(vmm, -1, 1 << 21, 0));
    }

    @Test
    void onAMachineWithoutTheDriverTheSharedBindingSaysSo() {
        boolean driverPresent = List.of("/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib64/libcuda.so.1",
                "/usr/lib/libcuda.so.1").stream().anyMatch(p -> Files.exists(Path.of(p)));
        assumeFalse(driverPresent, "libcuda.so.1 is installed here; the missing-driver path is covered above");
        CudaVmm vmm = CudaVmm.driver();
        if (vmm.isAvailable()) {
            return; // found elsewhere on the loader path (and cuInit worked): nothing to check
        }
        CudaException e = assertThrows(CudaException.class, () -> vmm.granularity(0, CudaVmm.Granularity.MINIMUM));
        assertTrue(e.getMessage().contains("libcuda.so.1") || e.call().equals("cuInit"), e.getMessage());
    }
}

package dev.ubuf.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.ubuf.fake.FakeNativeLibrary;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The real downcalls against a C stand-in for libcuda.so.1 that declares cuda.h's (13.0) structs and signatures
 * (fake_cuda.c): the struct bytes, the fd-in-a-pointer of the import, and the access descriptors arrive intact.
 */
class CudaVmmAbiTest {
    private static final long MIB2 = 2L << 20;
    private static FakeNativeLibrary fake;
    private static CudaVmm vmm;

    @BeforeAll
    static void buildTheFake() {
        Optional<FakeNativeLibrary> built = FakeNativeLibrary.build("fake_cuda");
        assumeTrue(built.isPresent(), "gcc not available: cannot build the fake libcuda");
        fake = built.get();
        vmm = new CudaVmm(fake.path());
    }

    @Test
    void loadsAndInitializes() {
        assertTrue(vmm.isAvailable(), vmm.toString());
        assertEquals("CUDA_ERROR_INVALID_VALUE", vmm.errorName(1));
        assertEquals("invalid argument", vmm.errorString(1));
        assertEquals(1, vmm.device(1));
        assertTrue(vmm.supportsVmm(0));
        assertTrue(vmm.supportsPosixFdHandles(1));
    }

    @Test
    void allocationPropertiesArriveFieldByField() {
        assertEquals(4L << 20, vmm.granularity(1, CudaVmm.Granularity.RECOMMENDED));
        assertEquals("granularity option=1 type=1 handles=1 loc=1/1 rest=zero", fake.lastCall());
        try (VmmAllocation a = VmmAllocation.create(vmm, 3 * MIB2 - 5, 1)) {
            assertEquals("cuMemCreate size=6291456 flags=0 type=1 handles=1 loc=1/1 rest=zero", fake.lastCall());
            assertEquals(3 * MIB2, a.size());
            assertEquals(0xABC003L, a.handle());
            assertEquals(77, a.exportFd());
            assertEquals("cuMemExport 0xabc003 type=1 flags=0", fake.lastCall());
        }
        assertEquals("cuMemRelease 0xabc003", fake.lastCall());
    }

    @Test
    void importPassesTheFdInThePointerArgument() {
        try (VmmAllocation b = VmmAllocation.importFd(vmm, 123, 2 * MIB2, 0)) {
            assertEquals("cuMemImport fd=123 type=1", fake.lastCall());
            assertTrue(b.isImported());
            assertEquals(0xDEF000L, b.handle());
        }
    }

    @Test
    void mappingReservesMapsAndSetsAccessDescriptors() {
        try (VmmAllocation a = VmmAllocation.create(vmm, MIB2, 0);
                VmmAllocation b = VmmAllocation.importFd(vmm, 9, MIB2, 1)) {
            VmmMapping m = VmmMapping.map(vmm, 2 * MIB2,
                    List.of(new VmmMapping.Segment(a, 0), new VmmMapping.Segment(b, MIB2)), new int[] {0, 1});
            assertEquals("cuMemSetAccess 0x7f0000200000 2097152 [1/0:3] [1/1:3]", fake.lastCall());
            assertEquals(0x7f00_0000_0000L, m.address());
            m.close();
            assertEquals("cuMemAddressFree 0x7f0000000000 4194304", fake.lastCall());
            m.close();
            assertFalse(m.isOpen());
        }
    }

    @Test
    void aFailedCallRaisesCudaExceptionWithTheErrorName() {
        CudaException e = assertThrows(CudaException.class, () -> vmm.unmap(MIB2, MIB2));
        assertEquals("cuMemUnmap", e.call());
        assertEquals(1, e.code());
        assertEquals("CUDA_ERROR_INVALID_VALUE", e.errorName());
        assertEquals("cuMemUnmap failed: CUDA_ERROR_INVALID_VALUE (1)", e.getMessage());
        CudaException unknown = assertThrows(CudaException.class, () -> vmm.device(5));
        assertEquals("CUresult 101", unknown.errorName(), "a code the driver cannot name");
    }

    @Test
    void aStickyErrorIsFatalAndOutOfMemoryHasItsOwnType() {
        CudaException fatal = assertThrows(CudaException.class, () -> vmm.memRelease(700));
        assertInstanceOf(CudaFatalException.class, fatal);
        assertEquals(CudaError.ILLEGAL_ADDRESS, fatal.error());
        assertTrue(fatal.getMessage().startsWith("cuMemRelease failed: CUDA_ERROR_ILLEGAL_ADDRESS (700)"),
                fatal.getMessage());
        assertTrue(fatal.getMessage().contains("sticky"), fatal.getMessage());

        CudaException oom = assertThrows(CudaException.class, () -> vmm.memRelease(2));
        assertInstanceOf(DeviceOutOfMemoryException.class, oom);
        assertEquals(CudaError.OUT_OF_MEMORY, oom.error());

        CudaException plain = assertThrows(CudaException.class, () -> vmm.memRelease(1));
        assertEquals(CudaException.class, plain.getClass());
        assertEquals(CudaError.INVALID_VALUE, plain.error());
    }
}

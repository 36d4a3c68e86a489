package dev.ubuf.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.Set;
import java.util.stream.Collectors;
import jcuda.driver.CUresult;
import org.junit.jupiter.api.Test;

/** CUresult codes as an enum, and which of them kill the context. */
class CudaErrorTest {

    @Test
    void everyCodeMapsBackToItsConstant() {
        for (CudaError e : CudaError.values()) {
            assertEquals(e, CudaError.of(e.code()), e.name());
        }
        assertEquals(CudaError.values().length,
                Arrays.stream(CudaError.values()).map(CudaError::code).distinct().count(), "codes are unique");
    }

    @Test
    void namesAndNumbersAgreeWithJCudasCopyOfCudaH() {
        for (CudaError e : CudaError.values()) {
            String jcuda = CUresult.stringFor(e.code());
            if (!jcuda.startsWith("INVALID CUresult")) { // JCuda 12.6 predates CONTAINED and TENSOR_MEMORY_LEAK
                assertEquals(jcuda, e.cName());
            }
        }
        assertEquals("CUDA_SUCCESS", CudaError.SUCCESS.cName());
    }

    @Test
    void aCodeTheEnumDoesNotListIsUnknownButTheExceptionKeepsTheNumber() {
        assertEquals(CudaError.UNKNOWN, CudaError.of(12345));
        CudaException e = CudaException.of("cuFuture", 12345, "CUDA_ERROR_FROM_THE_FUTURE");
        assertEquals(12345, e.code());
        assertEquals(CudaError.UNKNOWN, e.error());
        assertEquals("cuFuture failed: CUDA_ERROR_FROM_THE_FUTURE (12345)", e.getMessage());
    }

    @Test
    void exactlyTheErrorsThatLeaveTheContextDeadAreSticky() {
        Set<Integer> sticky = Arrays.stream(CudaError.values()).filter(CudaError::isSticky)
                .map(CudaError::code).collect(Collectors.toSet());
        assertEquals(Set.of(214, 220, 226, 700, 702, 710, 714, 715, 716, 717, 718, 719, 721, 810, 911), sticky);
    }

    @Test
    void stickyErrorsBecomeFatalExceptions() {
        for (int code : new int[] {700, 719, 715, 716, 717, 718, 714, 214}) {
            CudaException e = CudaException.of("cuStreamSynchronize", code, CUresult.stringFor(code));
            assertInstanceOf(CudaFatalException.class, e, CUresult.stringFor(code));
            assertTrue(e.getMessage().contains("process must restart"), e.getMessage());
        }
    }

    @Test
    void outOfMemoryHasItsOwnTypeAndIsNotFatal() {
        CudaException e = CudaException.of("cuMemAlloc(1 bytes on GPU 0)", 2, "CUDA_ERROR_OUT_OF_MEMORY");
        assertInstanceOf(DeviceOutOfMemoryException.class, e);
        assertFalse(e instanceof CudaFatalException);
        assertEquals("cuMemAlloc(1 bytes on GPU 0) failed: CUDA_ERROR_OUT_OF_MEMORY (2)", e.getMessage());
    }

    @Test
    void ordinaryErrorsStayPlainCudaExceptions() {
        for (int code : new int[] {1, 101, 400, 600, 701, 709, 801, 999}) {
            assertEquals(CudaException.class, CudaException.of("call", code, "name").getClass(), "code " + code);
        }
    }
}

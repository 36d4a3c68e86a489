package dev.ubuf.nccl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ubuf.tensor.DType;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The numbers NCCL sees, as nccl.h.in at tag v2.28.3-1 defines them. */
class NcclEnumMappingTest {

    @Test
    void dtypesMapToNcclDataTypes() {
        assertEquals(7, Nccl.dataType(DType.FP32), "ncclFloat32");
        assertEquals(6, Nccl.dataType(DType.FP16), "ncclFloat16");
        assertEquals(9, Nccl.dataType(DType.BF16), "ncclBfloat16");
        assertEquals(10, Nccl.dataType(DType.FP8_E4M3), "ncclFloat8e4m3");
        assertEquals(11, Nccl.dataType(DType.FP8_E5M2), "ncclFloat8e5m2");
        assertEquals(22400, Nccl.FIRST_VERSION_WITH_FP8, "fp8 types appear in nccl.h in 2.24.0");
    }

    @Test
    void reductionOperators() {
        assertEquals(0, NcclRedOp.SUM.code());
        assertEquals(1, NcclRedOp.PROD.code());
        assertEquals(2, NcclRedOp.MAX.code());
        assertEquals(3, NcclRedOp.MIN.code());
        assertEquals(4, NcclRedOp.AVG.code());
        assertEquals(5, NcclRedOp.values().length, "ncclNumOps = 5 built-in operators");
    }

    @Test
    void resultCodes() {
        int[] codes = {0, 1, 2, 3, 4, 5, 6, 7, 8};
        String[] names = {"ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
            "ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress", "ncclTimeout"};
        for (int i = 0; i < codes.length; i++) {
            NcclResult r = NcclResult.fromCode(codes[i]).orElseThrow();
            assertEquals(codes[i], r.code());
            assertEquals(names[i], r.cName());
        }
        assertEquals(Optional.empty(), NcclResult.fromCode(9));
        assertEquals(Optional.empty(), NcclResult.fromCode(-1));
    }

    @Test
    void versionCodesDecode() {
        assertEquals("2.28.3", Nccl.versionString(22803));
        assertEquals("2.30.7", Nccl.versionString(23007));
        assertEquals("2.24.0", Nccl.versionString(22400));
        assertEquals("2.7.8", Nccl.versionString(2708), "pre-2.9 encoding X*1000+Y*100+Z");
    }

    @Test
    void exceptionExposesCallAndResult() {
        NcclException e = new NcclException("ncclAllReduce", 4, "ncclAllReduce failed: ncclInvalidArgument (4)");
        assertEquals("ncclAllReduce", e.call());
        assertEquals(NcclResult.INVALID_ARGUMENT, e.result().orElseThrow());
        NcclException load = new NcclException("load x", "missing", null);
        assertEquals(NcclException.NO_RESULT, load.code());
        assertTrue(load.result().isEmpty());
    }
}

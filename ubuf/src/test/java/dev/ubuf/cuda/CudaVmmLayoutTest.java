package dev.ubuf.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemoryLayout.PathElement;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/**
 * Struct layouts and enumerators against /usr/local/cuda/include/cuda.h of CUDA 13.0 (CUDA_VERSION 13000). The
 * expected sizes and offsets were printed by a C program compiled with gcc against that header
 * (sizeof/offsetof/_Alignof on x86-64 Linux).
 */
class CudaVmmLayoutTest {

    private static long offset(MemoryLayout layout, String... path) {
        PathElement[] elements = new PathElement[path.length];
        for (int i = 0; i < path.length; i++) {
            elements[i] = PathElement.groupElement(path[i]);
        }
        return layout.byteOffset(elements);
    }

    @Test
    void cuMemLocation() {
        assertEquals(8, CudaVmm.CU_MEM_LOCATION.byteSize());
        assertEquals(4, CudaVmm.CU_MEM_LOCATION.byteAlignment());
        assertEquals(0, offset(CudaVmm.CU_MEM_LOCATION, "type"));
        assertEquals(4, offset(CudaVmm.CU_MEM_LOCATION, "id"));
    }

    @Test
    void cuMemAllocationProp() {
        MemoryLayout p = CudaVmm.CU_MEM_ALLOCATION_PROP;
        assertEquals(32, p.byteSize());
        assertEquals(8, p.byteAlignment());
        assertEquals(0, offset(p, "type"));
        assertEquals(4, offset(p, "requestedHandleTypes"));
        assertEquals(8, offset(p, "location"));
        assertEquals(8, offset(p, "location", "type"));
        assertEquals(12, offset(p, "location", "id"));
        assertEquals(16, offset(p, "win32HandleMetaData"));
        assertEquals(24, offset(p, "allocFlags"));
        assertEquals(24, offset(p, "allocFlags", "compressionType"));
        assertEquals(25, offset(p, "allocFlags", "gpuDirectRDMACapable"));
        assertEquals(26, offset(p, "allocFlags", "usage"));
        assertEquals(28, offset(p, "allocFlags", "reserved"));
        assertEquals(4, p.select(PathElement.groupElement("allocFlags"), PathElement.groupElement("reserved"))
                .byteSize());
    }

    @Test
    void cuMemAccessDesc() {
        assertEquals(12, CudaVmm.CU_MEM_ACCESS_DESC.byteSize());
        assertEquals(4, CudaVmm.CU_MEM_ACCESS_DESC.byteAlignment());
        assertEquals(0, offset(CudaVmm.CU_MEM_ACCESS_DESC, "location"));
        assertEquals(8, offset(CudaVmm.CU_MEM_ACCESS_DESC, "flags"));
    }

    @Test
    void enumeratorsMatchTheHeader() {
        assertEquals(1, CudaVmm.CU_MEM_ALLOCATION_TYPE_PINNED);
        assertEquals(1, CudaVmm.CU_MEM_LOCATION_TYPE_DEVICE);
        assertEquals(1, CudaVmm.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
        assertEquals(3, CudaVmm.CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
        assertEquals(0, CudaVmm.CU_MEM_ALLOC_GRANULARITY_MINIMUM);
        assertEquals(1, CudaVmm.CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
        assertEquals(0, CudaVmm.Granularity.MINIMUM.code());
        assertEquals(1, CudaVmm.Granularity.RECOMMENDED.code());
        assertEquals(102, CudaVmm.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED);
        assertEquals(103, CudaVmm.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED);
    }

    @Test
    void theAllocationPropertiesAreFilledAtTheHeadersOffsets() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment prop = CudaVmm.deviceProp(arena, 5);
            assertEquals(32, prop.byteSize());
            assertEquals(1, prop.get(ValueLayout.JAVA_INT, 0), "type = PINNED");
            assertEquals(1, prop.get(ValueLayout.JAVA_INT, 4), "requestedHandleTypes = POSIX_FILE_DESCRIPTOR");
            assertEquals(1, prop.get(ValueLayout.JAVA_INT, 8), "location.type = DEVICE");
            assertEquals(5, prop.get(ValueLayout.JAVA_INT, 12), "location.id = device ordinal");
            assertEquals(0L, prop.get(ValueLayout.JAVA_LONG, 16), "win32HandleMetaData = NULL");
            assertEquals(0L, prop.get(ValueLayout.JAVA_LONG, 24), "allocFlags all zero");
        }
    }
}

package dev.ubuf.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemoryLayout.PathElement;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;

/**
 * cuLaunchKernelEx's structs against /usr/local/cuda/include/cuda.h of CUDA 13.0: sizes and offsets printed by a C
 * program compiled with gcc against that header (sizeof/offsetof on x86-64 Linux), and what the launch writes into
 * them.
 */
class ProgrammaticLaunchTest {

    private static long offset(MemoryLayout layout, String field) {
        return layout.byteOffset(PathElement.groupElement(field));
    }

    @Test
    void cuLaunchConfigAndAttributeLayouts() {
        MemoryLayout c = ProgrammaticLaunch.CU_LAUNCH_CONFIG;
        assertEquals(56, c.byteSize());
        assertEquals(8, c.byteAlignment());
        assertEquals(0, offset(c, "gridDimX"));
        assertEquals(12, offset(c, "blockDimX"));
        assertEquals(24, offset(c, "sharedMemBytes"));
        assertEquals(32, offset(c, "hStream"));
        assertEquals(40, offset(c, "attrs"));
        assertEquals(48, offset(c, "numAttrs"));
        MemoryLayout a = ProgrammaticLaunch.CU_LAUNCH_ATTRIBUTE;
        assertEquals(72, a.byteSize());
        assertEquals(0, offset(a, "id"));
        assertEquals(8, offset(a, "value"));
        assertEquals(6, ProgrammaticLaunch.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);
    }

    @Test
    void configHoldsTheGridTheStreamAndOneAttributeAllowingProgrammaticSerialization() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment c = ProgrammaticLaunch.config(arena, 258, 512, 49152, 0x7f00_1234_5678L);
            assertEquals(258, c.get(JAVA_INT, 0));
            assertEquals(1, c.get(JAVA_INT, 4));
            assertEquals(1, c.get(JAVA_INT, 8));
            assertEquals(512, c.get(JAVA_INT, 12));
            assertEquals(1, c.get(JAVA_INT, 16));
            assertEquals(1, c.get(JAVA_INT, 20));
            assertEquals(49152, c.get(JAVA_INT, 24));
            assertEquals(0x7f00_1234_5678L, c.get(JAVA_LONG, 32));
            assertEquals(1, c.get(JAVA_INT, 48));
            MemorySegment attr = c.get(ADDRESS, 40).reinterpret(72);
            assertEquals(6, attr.get(JAVA_INT, 0));
            assertEquals(1, attr.get(JAVA_INT, 8), "programmaticStreamSerializationAllowed");
        }
    }

    @Test
    void parametersPointAtEachValueInItsOwnType() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment p = ProgrammaticLaunch.parameters(arena, 7L, 3, 0.5f, new long[]{11L, 12L});
            assertEquals(7L, p.getAtIndex(ADDRESS, 0).reinterpret(8).get(JAVA_LONG, 0));
            assertEquals(3, p.getAtIndex(ADDRESS, 1).reinterpret(4).get(JAVA_INT, 0));
            assertEquals(0.5f, p.getAtIndex(ADDRESS, 2).reinterpret(4).get(JAVA_FLOAT, 0));
            MemorySegment words = p.getAtIndex(ADDRESS, 3).reinterpret(16);
            assertEquals(11L, words.get(JAVA_LONG, 0));
            assertEquals(12L, words.get(JAVA_LONG, 8));
            assertThrows(IllegalArgumentException.class, () -> ProgrammaticLaunch.parameters(arena, "x"));
        }
    }
}

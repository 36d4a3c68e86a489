package dev.ubuf.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * The packaged fatbin matches the build machine: with nvcc (PATH or /usr/local/cuda/bin, as build-fatbin.sh
 * looks) it is there with every kernel and architecture; without, it is absent and the build says so.
 */
class KernelImageTest {

    private static final int FATBIN_MAGIC = 0xBA55ED50;
    private static final int ENTRY_PTX = 1;
    private static final int ENTRY_ELF = 2;

    @Test
    void theJarCarriesTheFatbinExactlyWhenNvccExists() {
        Properties info = KernelImage.buildInfo();
        assertFalse(info.isEmpty(), KernelImage.PROPERTIES_RESOURCE + " is always written by the build");
        if (nvccAvailable()) {
            assertEquals("true", info.getProperty("built"), "nvcc exists, so the build must have made the fatbin");
            assertTrue(KernelImage.isAvailable());
        } else {
            assertEquals("false", info.getProperty("built"), "no nvcc, so the build must record built=false");
            assertNull(KernelImage.class.getClassLoader().getResource(KernelImage.FATBIN_RESOURCE),
                    "no nvcc, so no fatbin may be packaged");
            assertFalse(KernelImage.isAvailable());
            IllegalStateException e = assertThrows(IllegalStateException.class, KernelImage::load);
            assertTrue(e.getMessage().contains("without nvcc"), e.getMessage());
        }
    }

    @Test
    void theFatbinListsEveryKernelAndNothingUnknown() {
        if (!nvccAvailable()) {
            return; // covered by theJarCarriesTheFatbinExactlyWhenNvccExists
        }
        KernelImage image = KernelImage.load();
        assertEquals(new TreeSet<>(KernelNames.all()), new TreeSet<>(image.kernels()),
                "kernels.properties (read from the PTX) must match KernelNames.all()");
        assertEquals(List.of("sm_80", "sm_90"), image.cubinArchs());
        assertEquals(List.of("compute_90"), image.ptxArchs());
        for (String name : KernelNames.all()) {
            assertEquals(name, image.requireKernel(name));
        }
        assertThrows(IllegalArgumentException.class, () -> image.requireKernel("ubuf_sum_fp64"));
    }

    @Test
    void theFatbinHoldsSm80AndSm90MachineCodeAndCompute90Ptx() {
        if (!nvccAvailable()) {
            return;
        }
        byte[] fatbin = KernelImage.load().fatbin();
        // The fatbin container as nvcc 12/13 writes it: a 16-byte header (magic, version, header size, payload
        // size), then entries, each with a header (kind, version, header size, payload size, ..., arch at byte
        // 28) and its payload. cuobjdump --list-elf / --list-ptx report the same on a machine that has it.
        ByteBuffer b = ByteBuffer.wrap(fatbin).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(FATBIN_MAGIC, b.getInt(0), "fatbin magic");
        int headerSize = Short.toUnsignedInt(b.getShort(6));
        long end = headerSize + b.getLong(8);
        assertEquals(fatbin.length, end, "the header's payload size covers the whole file");
        Set<String> found = new TreeSet<>();
        long off = headerSize;
        while (off < end) {
            int at = Math.toIntExact(off);
            int kind = Short.toUnsignedInt(b.getShort(at));
            long entryHeader = Integer.toUnsignedLong(b.getInt(at + 4));
            long payload = b.getLong(at + 8);
            int arch = b.getInt(at + 28);
            if (kind == ENTRY_ELF) {
                found.add("sm_" + arch);
                assertEquals(0x7f, fatbin[Math.toIntExact(off + entryHeader)], "an ELF entry starts with \\x7fELF");
            } else if (kind == ENTRY_PTX) {
                found.add("compute_" + arch);
            } else {
                found.add("kind" + kind + "_" + arch);
            }
            off += entryHeader + payload;
        }
        assertEquals(end, off, "entries tile the payload");
        assertEquals(Set.of("sm_80", "sm_90", "compute_90"), found);
    }

    /** Mirrors build-fatbin.sh: nvcc on PATH, else /usr/local/cuda/bin/nvcc. */
    static boolean nvccAvailable() {
        String path = System.getenv("PATH");
        if (path != null) {
            for (String dir : path.split(File.pathSeparator)) {
                if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, "nvcc"))) {
                    return true;
                }
            }
        }
        return Files.isExecutable(Path.of("/usr/local/cuda/bin/nvcc"));
    }
}

package dev.ubuf.cuda;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** JCuda's driver library is only ever seen whole under the name JCuda loads, also when written concurrently. */
class JCudaNativeLibraryTest {
    private static byte[] jarLibrary() throws Exception {
        try (InputStream in = JCudaNativeLibrary.class.getResourceAsStream("/lib/" + JCudaNativeLibrary.fileName())) {
            assertTrue(in != null, "jcuda-natives for this platform is on the test class path");
            return in.readAllBytes();
        }
    }

    @Test
    void theNameIsJCudasOwn() {
        String name = JCudaNativeLibrary.fileName();
        assertTrue(name.startsWith("libJCudaDriver-" + jcuda.JCudaVersion.get() + "-") && name.endsWith(".so"), name);
    }

    @Test
    void writesTheWholeLibraryAndReplacesATornOne(@TempDir Path dir) throws Exception {
        byte[] lib = jarLibrary();
        Path target = dir.resolve(JCudaNativeLibrary.fileName());
        Files.write(target, java.util.Arrays.copyOf(lib, lib.length / 3)); // an earlier process's torn write
        assertEquals(target, JCudaNativeLibrary.writeWhole(dir));
        assertArrayEquals(lib, Files.readAllBytes(target));
        try (var files = Files.list(dir)) {
            assertEquals(List.of(target), files.toList(), "no private file left behind");
        }
    }

    @Test
    void leavesAWholeLibraryAlone(@TempDir Path dir) throws Exception {
        Path target = JCudaNativeLibrary.writeWhole(dir);
        FileTime old = FileTime.fromMillis(1_000_000_000_000L);
        Files.setLastModifiedTime(target, old);
        JCudaNativeLibrary.writeWhole(dir);
        assertEquals(old, Files.getLastModifiedTime(target), "not rewritten: a process may have it mapped");
    }

    @Test
    void concurrentWritersAllLeaveTheWholeLibrary(@TempDir Path dir) throws Exception {
        byte[] lib = jarLibrary();
        int n = 8;
        CyclicBarrier start = new CyclicBarrier(n);
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            List<Future<byte[]>> seen = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                seen.add(pool.submit(() -> {
                    start.await();
                    // What a loader would map right after this writer returns.
                    return Files.readAllBytes(JCudaNativeLibrary.writeWhole(dir));
                }));
            }
            for (Future<byte[]> f : seen) {
                assertArrayEquals(lib, f.get());
            }
        } finally {
            pool.shutdownNow();
        }
    }
}

package dev.ubuf.cuda;

import jcuda.JCudaVersion;
import jcuda.LibUtils;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Arrays;

/**
 * Puts JCuda's driver binding where JCuda loads it from, whole, before JCuda does. JCuda writes the library from its
 * jar straight into {@code java.io.tmpdir} under a fixed name when the file is missing and loads any file of that name
 * that exists: two processes started at once (the ranks of one job, two jobs on a node) can load a file the other is
 * still writing, and the dynamic loader dies of SIGBUS (seen on a 4-GPU node, two demos started together). Here the
 * library is written to a private file in the same folder and renamed onto the name atomically, so the name only ever
 * holds a whole library; a file there that differs from the jar's (a torn write of an earlier process) is replaced.
 */
final class JCudaNativeLibrary {
    private static final System.Logger LOG = System.getLogger(JCudaNativeLibrary.class.getName());
    private static volatile boolean done;

    private JCudaNativeLibrary() {
    }

    /** Once per process, before the first JCuda driver call; failures are logged and left to JCuda's own loading. */
    static void ensureWritten() {
        if (done) {
            return;
        }
        synchronized (JCudaNativeLibrary.class) {
            if (done) {
                return;
            }
            try {
                String dir = System.getProperty("java.io.tmpdir");
                if (dir != null) {
                    writeWhole(Path.of(dir));
                }
            } catch (IOException | RuntimeException e) {
                LOG.log(System.Logger.Level.DEBUG,
                        "could not write JCuda's driver library ahead of JCuda; JCuda writes it itself", e);
            }
            done = true;
        }
    }

    /** The file name JCuda's driver binding looks for in the temporary folder. */
    static String fileName() {
        return LibUtils.createLibraryFileName(LibUtils.createPlatformLibraryName("JCudaDriver-" + JCudaVersion.get()));
    }

    /**
     * Makes {@code dir}/{@link #fileName()} a whole copy of the jar's library: left alone when it already is one,
     * else written to a private file beside it and moved onto the name atomically. Returns the path; throws when the
     * jar has no library for this platform or the folder cannot be written.
     */
    static Path writeWhole(Path dir) throws IOException {
        String name = fileName();
        byte[] library;
        try (InputStream in = JCudaVersion.class.getResourceAsStream("/lib/" + name)) {
            if (in == null) {
                throw new IOException("no /lib/" + name + " on the class path (jcuda-natives for this platform)");
            }
            library = in.readAllBytes();
        }
        Path target = dir.resolve(name);
        if (Files.isRegularFile(target) && Files.size(target) == library.length
                && Arrays.equals(Files.readAllBytes(target), library)) {
            return target;
        }
        Files.createDirectories(dir);
        Path mine = Files.createTempFile(dir, name + ".", ".partial");
        try {
            Files.write(mine, library);
            Files.move(mine, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } finally {
            Files.deleteIfExists(mine);
        }
        return target;
    }
}

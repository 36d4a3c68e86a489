package dev.ubuf.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * --out is proved writable before any GPU work, so a bad path fails at the start of a run, not after it. (Root may
 * write anywhere, so the unwritable paths here are ones no user can write: under a file, or a folder itself.)
 */
class ResultsOutputTest {
    @TempDir
    Path dir;

    @Test
    void aPathUnderAFileFailsAtTheStart() throws IOException {
        Path file = Files.writeString(dir.resolve("notes.txt"), "x");
        for (String benchmark : new String[]{"gemm", "p2p", "pushes", "ag", "rs"}) {
            Ubuf result = Ubuf.run("bench", benchmark, "--out", file.resolve("run.json").toString());
            assertEquals(2, result.exitCode(), result::toString);
            assertTrue(result.err().contains("--out " + file.resolve("run.json") + ": cannot create its folder "
                    + file + ": " + file + " is a file, not a folder"), result::toString);
            BenchInputTest.assertNoGpuWork(result);
        }
    }

    @Test
    void aFolderIsNotAResultsFile() {
        Ubuf result = Ubuf.run("bench", "rs", "--out", dir.toString());
        assertEquals(2, result.exitCode(), result::toString);
        assertTrue(result.err().contains("--out " + dir + " is a folder; give a file"), result::toString);
        BenchInputTest.assertNoGpuWork(result);
    }

    @Test
    void theCheckCreatesTheFoldersButLeavesNoFileAndAnExistingOneUntouched() throws IOException {
        Path fresh = dir.resolve("a/b/run.json");
        Ubuf result = Ubuf.run("bench", "gemm", "--m", "64", "--n", "64", "--k", "64", "--iters", "1",
                "--out", fresh.toString());
        assertTrue(Files.isDirectory(fresh.getParent()), result::toString);
        if (result.exitCode() != 0) { // no GPU here: the run failed after the check, and left no empty file behind
            assertFalse(Files.exists(fresh), result::toString);
        }
        Path old = Files.writeString(dir.resolve("old.json"), "{\"kept\": true}");
        Ubuf again = Ubuf.run("bench", "p2p", "--iters", "1", "--out", old.toString());
        if (again.exitCode() != 0) {
            assertEquals("{\"kept\": true}", Files.readString(old), again::toString);
        }
    }
}

package dev.ubuf.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** ubuf bench chart redraws the sweep chart from stored results files, without a GPU. */
class ChartCommandTest {
    @Test
    void drawsTheStoredSweepWithItsPytorchFile(@TempDir Path dir) throws Exception {
        Path results = Path.of("..", "bench", "results");
        Path png = dir.resolve("sub/chart.png");
        Ubuf r = Ubuf.run("bench", "chart", "--in",
                results.resolve("2026-11-23-h200x2-sweep-llama3-8b.json").toString(),
                results.resolve("2026-11-23-h200x2-sweep-llama3-8b-torch.json").toString(), "--png", png.toString());
        assertEquals(0, r.exitCode(), r::toString);
        assertTrue(Files.size(png) > 1000, r::toString);
    }

    @Test
    void aMissingInputIsOneSentence(@TempDir Path dir) {
        Ubuf r = Ubuf.run("bench", "chart", "--in", dir.resolve("none.json").toString(), "--png",
                dir.resolve("c.png").toString());
        assertEquals(2, r.exitCode(), r::toString);
        assertTrue(r.err().contains("none.json is not a file"), r::toString);
    }
}

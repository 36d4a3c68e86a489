package dev.ubuf.bench;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.imageio.ImageIO;
import java.awt.image.BufferedImage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** The sweep chart is drawn from results files alone (no GPU): a PNG of the expected size. */
class SweepChartTest {
    @Test
    void drawsOneBarPerShapeAndMethodFromResultsFiles(@TempDir Path dir) throws Exception {
        ResultsFile rf = new ResultsFile("2x test", "abc");
        for (long m : new long[]{1024, 2048}) {
            for (String method : List.of("auto", "ring", "nccl_seq")) {
                rf.add(Map.of("op", "ag", "method", method, "tp", 2, "dtype", "bf16", "m", m, "n", 512, "k", 4096,
                        "ms", method.equals("ring") ? 1.0 : 1.2, "ideal_ms", 0.9));
            }
        }
        Path json = dir.resolve("r.json");
        rf.write(json);
        Path png = dir.resolve("r.png");
        SweepChart.write(List.of(json), png, "test");
        BufferedImage img = ImageIO.read(png.toFile());
        assertTrue(Files.size(png) > 1000 && img.getWidth() >= 1200 && img.getHeight() == 700,
                img.getWidth() + "x" + img.getHeight());
    }
}

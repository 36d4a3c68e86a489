package dev.ubuf.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.imageio.ImageIO;
import java.awt.image.BufferedImage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The sweep chart is drawn from results files alone (no GPU): a PNG of the expected size. */
class SweepChartTest {
    /** Two AG shapes, three methods each (ring the fastest): what the chart tests and the fontless check draw. */
    static ResultsFile agSweep() {
        ResultsFile rf = new ResultsFile("2x test", "abc");
        for (long m : new long[]{1024, 2048}) {
            for (String method : List.of("auto", "ring", "nccl_seq")) {
                rf.add(Map.of("op", "ag", "method", method, "tp", 2, "dtype", "bf16", "m", m, "n", 512, "k", 4096,
                        "ms", method.equals("ring") ? 1.0 : 1.2, "ideal_ms", 0.9));
            }
        }
        return rf;
    }

    @Test
    void drawsOneBarPerShapeAndMethodFromResultsFiles(@TempDir Path dir) throws Exception {
        ResultsFile rf = agSweep();
        Path json = dir.resolve("r.json");
        rf.write(json);
        Path png = dir.resolve("r.png");
        SweepChart.write(List.of(json), png, "test");
        BufferedImage img = ImageIO.read(png.toFile());
        assertTrue(Files.size(png) > 1000 && img.getWidth() >= 1200 && img.getHeight() == 700,
                img.getWidth() + "x" + img.getHeight());
    }

    @Test
    void pytorchAndNcclAreMarksOnUbufsIdealAndTorchFirstDoesNotChangeIt(@TempDir Path dir) throws Exception {
        ResultsFile torch = new ResultsFile("2x test", "abc");
        torch.add(Map.of("op", "ag", "method", "torch_async", "tp", 2, "dtype", "bf16", "m", 1024, "n", 512,
                "k", 4096, "ms", 2.0, "ideal_ms", 1.5));
        torch.add(Map.of("op", "gemm", "method", "torch", "tp", 1, "dtype", "bf16", "m", 1024, "n", 512,
                "k", 4096, "ms", 0.5));
        ResultsFile ubuf = new ResultsFile("2x test", "abc");
        for (long m : new long[]{2048, 1024}) {
            ubuf.add(Map.of("op", "ag", "method", "auto", "tp", 2, "dtype", "bf16", "m", m, "n", 512, "k", 4096,
                    "ms", 1.0, "ideal_ms", 0.9));
            ubuf.add(Map.of("op", "ag", "method", "nccl_seq", "tp", 2, "dtype", "bf16", "m", m, "n", 512, "k", 4096,
                    "ms", 1.8));
        }
        ubuf.add(Map.of("op", "rs", "method", "auto", "tp", 2, "dtype", "bf16", "m", 1024, "n", 4096, "k", 2048,
                "ms", 1.0, "ideal_ms", 0.5));
        Path t = dir.resolve("t.json");
        Path u = dir.resolve("u.json");
        torch.write(t);
        ubuf.write(u);
        ObjectMapper json = new ObjectMapper();
        List<JsonNode> records = new ArrayList<>();
        for (Path f : List.of(t, u)) {
            json.readTree(f.toFile()).get("records").forEach(records::add);
        }
        var pct = SweepChart.percentages(records);
        assertEquals(List.of("auto", "nccl_seq", "torch_async"), List.copyOf(pct.keySet()));
        SweepChart.Shape ag1024 = new SweepChart.Shape("ag", 1024, 4096, 512);
        assertEquals(45.0, pct.get("torch_async").get(ag1024), 1e-9); // ubuf's ideal 0.9 over 2.0, not torch's 1.5
        assertEquals(50.0, pct.get("nccl_seq").get(ag1024), 1e-9);
        Path png = dir.resolve("c.png");
        SweepChart.write(List.of(t, u), png, "test"); // the rs shape has no torch_async mark: left out, not 0
        assertTrue(Files.size(png) > 1000);
    }
}

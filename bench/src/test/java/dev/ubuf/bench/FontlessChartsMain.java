package dev.ubuf.bench;

import java.awt.Graphics2D;
import java.awt.image.BufferedImage;
import java.nio.file.Path;
import java.util.List;

/**
 * Run by {@link FontlessChartsTest} in a JVM whose fontconfig cannot be read: draws the trace timeline and the sweep
 * chart into the folder {@code args[0]}, then draws a string with an AWT font to show that this JVM has none.
 */
public final class FontlessChartsMain {
    private FontlessChartsMain() {
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        TimelineChart.write(TraceSamples.twoRanks(), dir.resolve("timeline.png"), 1200);
        ResultsFile rf = SweepChartTest.agSweep();
        Path results = dir.resolve("sweep.json");
        rf.write(results);
        SweepChart.write(List.of(results), dir.resolve("sweep.png"), "sweep without fonts");
        System.out.println("charts written");
        Graphics2D g = new BufferedImage(10, 10, BufferedImage.TYPE_INT_RGB).createGraphics();
        try {
            g.drawString("x", 0, 9);
            System.out.println("an AWT font drew");
        } catch (RuntimeException | Error e) {
            System.out.println("no AWT font: " + e);
        } finally {
            g.dispose();
        }
    }
}

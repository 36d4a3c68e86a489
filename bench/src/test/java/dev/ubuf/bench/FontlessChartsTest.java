package dev.ubuf.bench;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.imageio.ImageIO;
import java.awt.image.BufferedImage;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The PNG charts draw on a GPU node without fontconfig (where AWT text threw "Fontconfig head is null" and `ubuf
 * demo --trace` exited 1): a JVM whose fontconfig file does not exist draws both, and the same JVM fails to draw a
 * string with an AWT font, so the charts used none.
 */
class FontlessChartsTest {
    @Test
    void bothChartsDrawWhereNoAwtFontCanBeUsed(@TempDir Path dir) throws Exception {
        ChildJvm r = ChildJvm.run(Map.of("FONTCONFIG_FILE", "/nonexistent/fonts.conf"),
                List.of("-Dsun.awt.fontconfig=/nonexistent/fontconfig.properties"), FontlessChartsMain.class,
                dir.toString());
        assertEquals(0, r.exitCode(), r::toString);
        assertTrue(r.out().contains("charts written"), r::toString);
        assertTrue(r.out().contains("no AWT font: ") && r.out().contains("Fontconfig"),
                () -> "the child JVM could still draw with an AWT font, so this test shows nothing:\n" + r);
        BufferedImage timeline = ImageIO.read(dir.resolve("timeline.png").toFile());
        assertNotNull(timeline, r::toString);
        assertEquals(1200, timeline.getWidth());
        BufferedImage sweep = ImageIO.read(dir.resolve("sweep.png").toFile());
        assertNotNull(sweep, r::toString);
        assertEquals(SweepChart.HEIGHT, sweep.getHeight());
    }

    @Test
    void textIsDrawnAsPixels() {
        PixelFont f = new PixelFont(2, false);
        assertEquals((3 * PixelFont.ADVANCE - 1) * 2, f.width("abc"));
        BufferedImage img = new BufferedImage(40, 20, BufferedImage.TYPE_INT_RGB);
        var g = img.createGraphics();
        g.setColor(java.awt.Color.WHITE);
        f.draw(g, "H", 2, 16);
        g.dispose();
        // H: both stems over the whole height, the bar across the middle row, nothing else.
        for (int y = 16 - 14; y < 16; y++) {
            assertEquals(0xffffff, img.getRGB(2, y) & 0xffffff, "left stem at y " + y);
            assertEquals(0xffffff, img.getRGB(2 + 8, y) & 0xffffff, "right stem at y " + y);
        }
        assertEquals(0xffffff, img.getRGB(2 + 4, 16 - 8) & 0xffffff, "the bar");
        assertEquals(0, img.getRGB(2 + 4, 16 - 12) & 0xffffff, "above the bar");
        assertEquals(0, img.getRGB(2, 16) & 0xffffff, "below the baseline");
        assertEquals("abcdefghi…", new PixelFont(1, false).clip("abcdefghijklmnop", 10 * PixelFont.ADVANCE - 1));
    }
}

package dev.ubuf.bench;

import dev.ubuf.trace.StepTrace;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.imageio.ImageIO;
import java.awt.image.BufferedImage;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The PNG timeline: a readable PNG of the expected size, with a row per (rank, stream) and bars in them. */
class TimelineChartTest {
    @Test
    void writesAReadablePngWithARowPerRankAndStream(@TempDir Path dir) throws Exception {
        StepTrace trace = TraceSamples.twoRanks();
        Path png = dir.resolve("out/trace.png");
        TimelineChart.write(trace, png, 1200);
        BufferedImage img = ImageIO.read(png.toFile());
        assertNotNull(img, "not a readable image");
        assertEquals(1200, img.getWidth());
        int rows = 2 * TraceSamples.STREAMS.size();
        int expected = TimelineChart.TITLE_HEIGHT + TimelineChart.LEGEND_HEIGHT + TimelineChart.AXIS_HEIGHT
                + 2 * (TimelineChart.RANK_HEADER + TimelineChart.RANK_GAP) + rows * TimelineChart.ROW_HEIGHT;
        assertEquals(expected, img.getHeight());
        assertEquals(expected, TimelineChart.height(trace));
    }

    @Test
    void barsAreColouredByKindWhereTheSpansAre() {
        StepTrace trace = TraceSamples.twoRanks();
        int width = 1200;
        BufferedImage img = TimelineChart.render(trace, width);
        // Rank 0's copy (12..40 µs) on its "comm 1" row (the 4th) and its GEMM (10..58 µs) on the 3rd row.
        int top = TimelineChart.TITLE_HEIGHT + TimelineChart.LEGEND_HEIGHT + TimelineChart.RANK_HEADER;
        int plot = width - TimelineChart.LABEL_WIDTH - 24;
        // The axis ends at a whole number of ticks at or after the last span's end (153 µs -> 0.16 ms).
        double pxPerUs = plot / 160.0;
        int xCopy = TimelineChart.LABEL_WIDTH + (int) Math.round(25 * pxPerUs);
        int yCopy = top + 3 * TimelineChart.ROW_HEIGHT + TimelineChart.ROW_HEIGHT / 2;
        int yGemm = top + 2 * TimelineChart.ROW_HEIGHT + TimelineChart.ROW_HEIGHT / 2;
        assertEquals(0xff7f0e, img.getRGB(xCopy, yCopy) & 0xffffff, "copy colour under the copy span");
        assertEquals(0x1f77b4, img.getRGB(xCopy, yGemm) & 0xffffff, "GEMM colour under the GEMM span");
        // Nothing on the comm row after the signal: background.
        int xIdle = TimelineChart.LABEL_WIDTH + (int) Math.round(90 * pxPerUs);
        int idle = img.getRGB(xIdle, yCopy) & 0xffffff;
        assertTrue(idle == 0xffffff || idle == 0xf4f4f4 || idle == 0xdddddd, Integer.toHexString(idle));
    }

    @Test
    void aTooNarrowImageIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> TimelineChart.render(TraceSamples.twoRanks(), 100));
    }
}

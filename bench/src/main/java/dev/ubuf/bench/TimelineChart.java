package dev.ubuf.bench;

import dev.ubuf.trace.RankTrace;
import dev.ubuf.trace.Span;
import dev.ubuf.trace.SpanKind;
import dev.ubuf.trace.StepTrace;

import javax.imageio.ImageIO;
import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Graphics2D;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * A {@link StepTrace} as a PNG timeline: one row per (rank, stream), a bar per span coloured by its kind, a legend
 * of the kinds present and a time axis in ms. Drawn with Java2D: XChart has no Gantt chart, and bars from series of
 * thick lines would put every span in its legend. Text is drawn with {@link PixelFont}, never an AWT font, so the
 * PNG draws on GPU nodes without fontconfig. Whole ops on their caller's stream ({@link SpanKind#OP}: the
 * caller waiting for the op's streams) are drawn hollow, so they do not read as work.
 */
public final class TimelineChart {
    static final int TITLE_HEIGHT = 30;
    static final int LEGEND_HEIGHT = 26;
    static final int RANK_HEADER = 20;
    static final int ROW_HEIGHT = 20;
    static final int RANK_GAP = 8;
    static final int AXIS_HEIGHT = 40;
    static final int LABEL_WIDTH = 250;
    static final int RIGHT_MARGIN = 24;
    /** The narrowest width that leaves the time axis room. */
    public static final int MIN_WIDTH = LABEL_WIDTH + RIGHT_MARGIN + 200;

    private static final Map<SpanKind, Color> COLORS = new EnumMap<>(Map.of(
            SpanKind.GEMM, new Color(0x1f77b4),
            SpanKind.COPY, new Color(0xff7f0e),
            SpanKind.WAIT, new Color(0xb0b0b0),
            SpanKind.SIGNAL, new Color(0xd62728),
            SpanKind.REDUCE, new Color(0x9467bd),
            SpanKind.KERNEL, new Color(0x2ca02c),
            SpanKind.NCCL, new Color(0x8c564b),
            SpanKind.EVENT, new Color(0x7f7f7f),
            SpanKind.OP, new Color(0x17becf),
            SpanKind.HOST, new Color(0xdbdb8d)));

    private static final PixelFont TITLE = new PixelFont(2, false);
    private static final PixelFont TEXT = new PixelFont(1, false);
    private static final PixelFont BOLD = new PixelFont(1, true);

    private TimelineChart() {
    }

    /** The image's height for {@code trace}: fixed parts plus a header per rank and a row per stream. */
    public static int height(StepTrace trace) {
        int h = TITLE_HEIGHT + LEGEND_HEIGHT + AXIS_HEIGHT;
        for (RankTrace r : trace.ranks()) {
            h += RANK_HEADER + ROW_HEIGHT * r.streams().size() + RANK_GAP;
        }
        return h;
    }

    /** Draws {@code trace} {@code width} pixels wide (at least {@link #MIN_WIDTH}), {@link #height} high. */
    public static BufferedImage render(StepTrace trace, int width) {
        if (width < MIN_WIDTH) {
            throw new IllegalArgumentException("width " + width + " is below the minimum " + MIN_WIDTH);
        }
        int height = height(trace);
        BufferedImage img = new BufferedImage(width, height, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = img.createGraphics();
        try {
            g.setColor(Color.WHITE);
            g.fillRect(0, 0, width, height);
            g.setColor(Color.BLACK);
            TITLE.draw(g, TITLE.clip(trace.title(), width - 16), 8, 21);
            legend(g, trace, TITLE_HEIGHT + 4);

            double endUs = Math.max(trace.endUs(), 1);
            Ticks ticks = Ticks.of(endUs / 1000.0);
            double spanMs = ticks.step() * Math.ceil(endUs / 1000.0 / ticks.step());
            int x0 = LABEL_WIDTH;
            int plotWidth = width - LABEL_WIDTH - RIGHT_MARGIN;
            double pxPerUs = plotWidth / (spanMs * 1000.0);
            int top = TITLE_HEIGHT + LEGEND_HEIGHT;
            int bottom = height - AXIS_HEIGHT;
            // Row backgrounds and labels, then the grid, then the bars, so no grid line crosses a bar.
            int y = top;
            for (RankTrace r : trace.ranks()) {
                g.setColor(Color.BLACK);
                BOLD.draw(g, "rank " + r.rank(), 8, y + RANK_HEADER - 5);
                y += RANK_HEADER;
                for (int i = 0; i < r.streams().size(); i++) {
                    int rowY = y + i * ROW_HEIGHT;
                    g.setColor(i % 2 == 0 ? new Color(0xf4f4f4) : Color.WHITE);
                    g.fillRect(x0, rowY, plotWidth, ROW_HEIGHT);
                    g.setColor(Color.DARK_GRAY);
                    TEXT.draw(g, TEXT.clip(r.streams().get(i), LABEL_WIDTH - 24), 16, rowY + ROW_HEIGHT - 7);
                }
                y += ROW_HEIGHT * r.streams().size() + RANK_GAP;
            }
            axis(g, ticks, spanMs, x0, plotWidth, top, bottom);
            y = top;
            for (RankTrace r : trace.ranks()) {
                y += RANK_HEADER;
                for (Span s : r.spans()) {
                    int rowY = y + r.streams().indexOf(s.stream()) * ROW_HEIGHT;
                    bar(g, s, x0 + s.startUs() * pxPerUs, x0 + s.endUs() * pxPerUs, rowY);
                }
                y += ROW_HEIGHT * r.streams().size() + RANK_GAP;
            }
        } finally {
            g.dispose();
        }
        return img;
    }

    /** Writes the PNG (creating its folder). */
    public static void write(StepTrace trace, Path file, int width) throws IOException {
        Path parent = file.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        if (!ImageIO.write(render(trace, width), "png", file.toFile())) {
            throw new IOException("no PNG writer available");
        }
    }

    private static void bar(Graphics2D g, Span s, double from, double to, int rowY) {
        int x = (int) Math.floor(from);
        // At least a pixel, so the shortest signals and waits stay visible.
        int w = Math.max(1, (int) Math.ceil(to) - x);
        Color c = COLORS.get(s.kind());
        if (s.kind() == SpanKind.OP) {
            g.setColor(c);
            g.setStroke(new BasicStroke(1.5f));
            g.drawRect(x, rowY + 4, w, ROW_HEIGHT - 8);
            return;
        }
        g.setColor(c);
        g.fillRect(x, rowY + 3, w, ROW_HEIGHT - 6);
        if (w > 4) {
            g.setColor(c.darker());
            g.setStroke(new BasicStroke(1f));
            g.drawRect(x, rowY + 3, w - 1, ROW_HEIGHT - 7);
        }
    }

    private static void legend(Graphics2D g, StepTrace trace, int y) {
        Set<SpanKind> present = EnumSet.noneOf(SpanKind.class);
        trace.ranks().forEach(r -> r.spans().forEach(s -> present.add(s.kind())));
        int x = 8;
        for (SpanKind k : present) {
            g.setColor(COLORS.get(k));
            if (k == SpanKind.OP) {
                g.drawRect(x, y + 4, 14, 10);
            } else {
                g.fillRect(x, y + 4, 14, 10);
            }
            g.setColor(Color.BLACK);
            String label = k == SpanKind.OP ? "op (caller waits)" : k.id();
            TEXT.draw(g, label, x + 18, y + 13);
            x += 18 + TEXT.width(label) + 16;
        }
    }

    private static void axis(Graphics2D g, Ticks t, double spanMs, int x0, int plotWidth, int top, int bottom) {
        g.setColor(Color.BLACK);
        g.setStroke(new BasicStroke(1f));
        g.drawLine(x0, bottom, x0 + plotWidth, bottom);
        int n = (int) Math.round(spanMs / t.step());
        for (int i = 0; i <= n; i++) {
            double ms = i * t.step();
            int x = x0 + (int) Math.round(ms / spanMs * plotWidth);
            g.setColor(new Color(0xdddddd));
            g.drawLine(x, top, x, bottom);
            g.setColor(Color.BLACK);
            g.drawLine(x, bottom, x, bottom + 4);
            String label = String.format(Locale.ROOT, "%." + t.decimals() + "f", ms);
            TEXT.draw(g, label, x - TEXT.width(label) / 2, bottom + 15);
        }
        String unit = "time from step start (ms)";
        TEXT.draw(g, unit, x0 + (plotWidth - TEXT.width(unit)) / 2, bottom + 31);
    }

    /** Axis ticks: a step of 1, 2 or 5 times a power of ten giving 5 to 10 intervals, and its decimals. */
    record Ticks(double step, int decimals) {
        static Ticks of(double endMs) {
            double raw = endMs / 8;
            double p = Math.pow(10, Math.floor(Math.log10(raw)));
            double step = raw <= p ? p : raw <= 2 * p ? 2 * p : raw <= 5 * p ? 5 * p : 10 * p;
            return new Ticks(step, Math.max(0, (int) -Math.floor(Math.log10(step))));
        }
    }
}

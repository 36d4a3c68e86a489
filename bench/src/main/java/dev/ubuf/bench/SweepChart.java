package dev.ubuf.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import javax.imageio.ImageIO;
import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.geom.AffineTransform;
import java.awt.geom.Ellipse2D;
import java.awt.geom.Path2D;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A PNG of results files' overlapped records: per shape (x, grouped by op and GEMM, M rising) the share of the honest
 * ideal reached (ideal_ms / ms, in %). ubuf's methods (auto and the variants) are bars; NCCL sequential and PyTorch
 * (torch_seq, torch_async) are reference marks (markers without bars) on the same scale: the shape's ideal, from
 * ubuf's records, over their time. Works on round files and on combined files (scripts/combine-rounds.py) alike.
 * Drawn with Java2D and {@link PixelFont}, never an AWT font (a charting library's text would need one), so the chart
 * draws on GPU nodes without fontconfig.
 */
public final class SweepChart {
    /** Methods drawn as reference marks, with their marker colours. */
    static final Map<String, Color> REFERENCES = Map.of(
            "nccl_seq", Color.BLACK, "torch_seq", new Color(0xD6, 0x27, 0x28), "torch_async", new Color(0x94, 0x67, 0xBD));

    /** Colours of ubuf's methods (bars), in order of appearance; none is a reference mark's. */
    private static final Color[] BAR_COLORS = {new Color(0x1f77b4), new Color(0xff7f0e), new Color(0x2ca02c),
            new Color(0x17becf), new Color(0xbcbd22), new Color(0x8c564b), new Color(0xe377c2), new Color(0x7f7f7f),
            new Color(0xaec7e8), new Color(0xffbb78), new Color(0x98df8a), new Color(0x9edae5)};
    static final int HEIGHT = 700;
    static final int MIN_WIDTH = 1200;
    private static final double Y_MAX = 105;
    private static final PixelFont TITLE = new PixelFont(2, false);
    private static final PixelFont TEXT = new PixelFont(1, false);

    private SweepChart() {
    }

    /** A shape on the x axis: op, M, K, N. */
    record Shape(String op, long m, long k, long n) {
        static Shape of(JsonNode r) {
            return new Shape(r.get("op").asText(), r.get("m").asLong(), r.get("k").asLong(), r.get("n").asLong());
        }

        String label() {
            return op + " " + m + "x" + k + "x" + n;
        }
    }

    /**
     * % of ideal per method and shape: {method: {shape: pct}}, methods in order of first appearance (ubuf's before
     * the references), shapes sorted by op, K, N, M. A shape counts only where a ubuf record gives its ideal.
     */
    static Map<String, Map<Shape, Double>> percentages(List<JsonNode> records) {
        Map<Shape, Double> idealOf = new LinkedHashMap<>();
        for (JsonNode r : records) {
            String method = r.path("method").asText();
            if (r.has("ideal_ms") && r.has("op") && !method.startsWith("torch")) {
                idealOf.putIfAbsent(Shape.of(r), r.get("ideal_ms").asDouble());
            }
        }
        Map<String, Map<Shape, Double>> bars = new LinkedHashMap<>();
        Map<String, Map<Shape, Double>> marks = new LinkedHashMap<>();
        for (JsonNode r : records) {
            if (!r.has("op") || !r.has("ms") || !r.has("method")) {
                continue;
            }
            Shape shape = Shape.of(r);
            Double ideal = idealOf.get(shape);
            if (ideal == null) {
                continue;
            }
            String method = r.get("method").asText();
            (REFERENCES.containsKey(method) ? marks : bars).computeIfAbsent(method, k -> new LinkedHashMap<>())
                    .put(shape, 100 * ideal / r.get("ms").asDouble());
        }
        Map<String, Map<Shape, Double>> all = new LinkedHashMap<>(bars);
        REFERENCES.keySet().stream().sorted().filter(marks::containsKey).forEach(m -> all.put(m, marks.get(m)));
        return all;
    }

    /** Draws the overlapped records of {@code files} (ours and, e.g., PyTorch's on the same shapes) into one chart. */
    public static void write(List<Path> files, Path png, String title) throws IOException {
        List<JsonNode> records = new ArrayList<>();
        ObjectMapper json = new ObjectMapper();
        for (Path f : files) {
            json.readTree(f.toFile()).path("records").forEach(records::add);
        }
        Map<String, Map<Shape, Double>> pct = percentages(records);
        Set<Shape> shapeSet = new LinkedHashSet<>();
        pct.values().forEach(m -> shapeSet.addAll(m.keySet()));
        List<Shape> shapes = shapeSet.stream().sorted(Comparator.comparing(Shape::op).thenComparingLong(Shape::k)
                .thenComparingLong(Shape::n).thenComparingLong(Shape::m)).toList();
        if (shapes.isEmpty()) {
            throw new IOException("no overlapped records with an ideal (ideal_ms) in " + files);
        }
        Path parent = png.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        if (!ImageIO.write(render(pct, shapes, title), "png", png.toFile())) {
            throw new IOException("no PNG writer available");
        }
    }

    /**
     * The chart: per shape a group with a slot per method, ubuf's as bars from the axis' foot, the references as
     * marks (nccl_seq a diamond, PyTorch's circles); a missing bar or mark is left out. The legend is right of the
     * plot, the shapes' labels run upwards under it.
     */
    static BufferedImage render(Map<String, Map<Shape, Double>> pct, List<Shape> shapes, String title) {
        double lowest = pct.values().stream().flatMap(m -> m.values().stream()).mapToDouble(Double::doubleValue)
                .min().orElse(40);
        double yMin = Math.min(40.0, Math.max(0.0, 10 * Math.floor((lowest - 5) / 10)));
        int perShape = Math.max(28, 6 * (pct.size() + 1)); // a few pixels per bar and mark
        int width = Math.max(MIN_WIDTH, perShape * shapes.size());
        List<String> labels = shapes.stream().map(Shape::label).toList();
        int labelLength = labels.stream().mapToInt(TEXT::width).max().orElse(0);
        int legendWidth = 40 + pct.keySet().stream().mapToInt(TEXT::width).max().orElse(0);
        int left = 70;
        int right = width - legendWidth - 24;
        int top = 50;
        int bottom = HEIGHT - labelLength - 40;
        BufferedImage img = new BufferedImage(width, HEIGHT, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = img.createGraphics();
        try {
            g.setColor(Color.WHITE);
            g.fillRect(0, 0, width, HEIGHT);
            g.setColor(Color.BLACK);
            String t = TITLE.clip(title, width - 16);
            TITLE.draw(g, t, (width - TITLE.width(t)) / 2, 30);
            // The y grid and its labels, % of ideal.
            for (int p = (int) yMin; p <= Y_MAX; p += 10) {
                int y = yOf(p, yMin, top, bottom);
                g.setColor(new Color(0xdddddd));
                g.drawLine(left, y, right, y);
                g.setColor(Color.BLACK);
                String l = Integer.toString(p);
                TEXT.draw(g, l, left - 6 - TEXT.width(l), y + 3);
            }
            up(g, "% of ideal", 20, (top + bottom + TEXT.width("% of ideal")) / 2);
            double group = (right - left) / (double) shapes.size();
            double slot = group * 0.9 / pct.size();
            int series = 0;
            int bars = 0;
            for (var e : pct.entrySet()) {
                Color mark = REFERENCES.get(e.getKey());
                Color color = mark != null ? mark : BAR_COLORS[bars++ % BAR_COLORS.length];
                g.setColor(color);
                for (int i = 0; i < shapes.size(); i++) {
                    Double v = e.getValue().get(shapes.get(i));
                    if (v == null || !Double.isFinite(v)) {
                        continue;
                    }
                    double x = left + i * group + group * 0.05 + series * slot;
                    int y = yOf(Math.min(v, Y_MAX), yMin, top, bottom);
                    if (mark == null) {
                        if (y < bottom) {
                            g.fillRect((int) Math.round(x), y, Math.max(1, (int) Math.round(slot) - 1), bottom - y);
                        }
                    } else if (v >= yMin) {
                        marker(g, e.getKey(), x + slot / 2, y);
                    }
                }
                series++;
            }
            g.setColor(Color.BLACK);
            g.setStroke(new BasicStroke(1f));
            g.drawRect(left, top, right - left, bottom - top);
            for (int i = 0; i < shapes.size(); i++) {
                int cx = (int) Math.round(left + (i + 0.5) * group);
                g.drawLine(cx, bottom, cx, bottom + 3);
                up(g, labels.get(i), cx + 3, bottom + 6 + TEXT.width(labels.get(i)));
            }
            String xTitle = "shape (op MxKxN; AG: N per rank, RS: K per rank)";
            TEXT.draw(g, xTitle, left + (right - left - TEXT.width(xTitle)) / 2, HEIGHT - 12);
            legend(g, pct.keySet(), right + 16, top);
        } finally {
            g.dispose();
        }
        return img;
    }

    private static int yOf(double pct, double yMin, int top, int bottom) {
        return (int) Math.round(bottom - (pct - yMin) / (Y_MAX - yMin) * (bottom - top));
    }

    /** Text reading upwards from {@code y}, the glyphs' feet on the column {@code x}. */
    private static void up(Graphics2D g, String s, int x, int y) {
        AffineTransform saved = g.getTransform();
        g.translate(x, y);
        g.rotate(-Math.PI / 2);
        TEXT.draw(g, s, 0, 0);
        g.setTransform(saved);
    }

    private static void marker(Graphics2D g, String method, double x, double y) {
        // Smooth edges for the marks only: text and bars are whole pixels.
        g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
        double r = 4.5;
        if (method.equals("nccl_seq")) {
            Path2D d = new Path2D.Double();
            d.moveTo(x, y - r - 1);
            d.lineTo(x + r + 1, y);
            d.lineTo(x, y + r + 1);
            d.lineTo(x - r - 1, y);
            d.closePath();
            g.fill(d);
        } else {
            g.fill(new Ellipse2D.Double(x - r, y - r, 2 * r, 2 * r));
        }
        g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_OFF);
    }

    private static void legend(Graphics2D g, Set<String> methods, int x, int y) {
        int bars = 0;
        int rowY = y + 8;
        for (String m : methods) {
            Color mark = REFERENCES.get(m);
            g.setColor(mark != null ? mark : BAR_COLORS[bars++ % BAR_COLORS.length]);
            if (mark != null) {
                marker(g, m, x + 7, rowY + 4);
            } else {
                g.fillRect(x, rowY, 14, 9);
            }
            g.setColor(Color.BLACK);
            TEXT.draw(g, m, x + 22, rowY + 8);
            rowY += 18;
        }
        g.setColor(Color.GRAY);
        g.drawRect(x - 6, y, 22 + methods.stream().mapToInt(TEXT::width).max().orElse(0) + 12, rowY - y);
    }
}

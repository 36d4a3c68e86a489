package dev.ubuf.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.CategorySeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

import java.awt.BasicStroke;
import java.awt.Color;
import java.io.IOException;
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
 */
public final class SweepChart {
    /** Methods drawn as reference marks, with their marker colours. */
    static final Map<String, Color> REFERENCES = Map.of(
            "nccl_seq", Color.BLACK, "torch_seq", new Color(0xD6, 0x27, 0x28), "torch_async", new Color(0x94, 0x67, 0xBD));

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
        double lowest = pct.values().stream().flatMap(m -> m.values().stream()).mapToDouble(Double::doubleValue)
                .min().orElse(40);
        int perShape = Math.max(28, 6 * (pct.size() + 1)); // a few pixels per bar and mark
        CategoryChart chart = new CategoryChartBuilder().width(Math.max(1200, perShape * shapes.size())).height(700)
                .title(title).xAxisTitle("shape (op MxKxN; AG: N per rank, RS: K per rank)")
                .yAxisTitle("% of ideal").build();
        chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
        chart.getStyler().setXAxisLabelRotation(90);
        chart.getStyler().setYAxisMin(Math.min(40.0, Math.max(0.0, 10 * Math.floor((lowest - 5) / 10))));
        chart.getStyler().setYAxisMax(105.0);
        chart.getStyler().setAvailableSpaceFill(0.9);
        List<String> xs = shapes.stream().map(Shape::label).toList();
        for (var e : pct.entrySet()) {
            List<Double> ys = new ArrayList<>();
            Color mark = REFERENCES.get(e.getKey());
            for (Shape s : shapes) {
                // 0 draws no bar; a missing mark is left out (NaN), not put at 0
                ys.add(e.getValue().getOrDefault(s, mark == null ? 0.0 : Double.NaN));
            }
            CategorySeries series = chart.addSeries(e.getKey(), xs, ys);
            if (mark != null) {
                series.setChartCategorySeriesRenderStyle(CategorySeries.CategorySeriesRenderStyle.Scatter);
                series.setMarker(e.getKey().equals("nccl_seq") ? SeriesMarkers.DIAMOND : SeriesMarkers.CIRCLE);
                series.setMarkerColor(mark);
                series.setLineStyle(new BasicStroke(0f));
            }
        }
        BitmapEncoder.saveBitmap(chart, png.toString(), BitmapEncoder.BitmapFormat.PNG);
    }
}

package dev.ubuf.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.style.Styler;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A PNG of a results file's overlapped records: per shape (x) and method (series), the share of the honest ideal
 * reached (ideal_ms / ms, in %); NCCL sequential and PyTorch records appear as series of their own, on the same
 * scale (ideal_ms of the shape / their time), so they read as reference marks.
 */
public final class SweepChart {
    private SweepChart() {
    }

    /** Draws the overlapped records of {@code files} (ours and, e.g., PyTorch's on the same shapes) into one chart. */
    public static void write(List<Path> files, Path png, String title) throws IOException {
        List<JsonNode> records = new ArrayList<>();
        ObjectMapper json = new ObjectMapper();
        for (Path f : files) {
            json.readTree(f.toFile()).get("records").forEach(records::add);
        }
        Map<String, Double> idealOf = new LinkedHashMap<>();
        Map<String, Map<String, Double>> pct = new LinkedHashMap<>();
        Set<String> shapes = new LinkedHashSet<>();
        for (JsonNode r : records) {
            String shape = r.get("op").asText() + " " + r.get("m").asLong() + "x" + r.get("k").asLong() + "x"
                    + r.get("n").asLong();
            if (r.has("ideal_ms")) {
                idealOf.putIfAbsent(shape, r.get("ideal_ms").asDouble());
            }
        }
        for (JsonNode r : records) {
            String shape = r.get("op").asText() + " " + r.get("m").asLong() + "x" + r.get("k").asLong() + "x"
                    + r.get("n").asLong();
            Double ideal = idealOf.get(shape);
            if (ideal == null || !r.has("ms")) {
                continue;
            }
            String method = r.get("method").asText();
            shapes.add(shape);
            pct.computeIfAbsent(method, k -> new LinkedHashMap<>()).put(shape, 100 * ideal / r.get("ms").asDouble());
        }
        CategoryChart chart = new CategoryChartBuilder().width(Math.max(1200, 28 * shapes.size())).height(700)
                .title(title).xAxisTitle("shape (op MxKxN)").yAxisTitle("% of ideal").build();
        chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
        chart.getStyler().setXAxisLabelRotation(90);
        chart.getStyler().setYAxisMin(40.0);
        chart.getStyler().setYAxisMax(105.0);
        List<String> xs = new ArrayList<>(shapes);
        for (var e : pct.entrySet()) {
            List<Double> ys = new ArrayList<>();
            for (String s : xs) {
                ys.add(e.getValue().getOrDefault(s, 0.0));
            }
            chart.addSeries(e.getKey(), xs, ys);
        }
        BitmapEncoder.saveBitmap(chart, png.toString(), BitmapEncoder.BitmapFormat.PNG);
    }
}

package dev.ubuf.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ubuf.trace.RankTrace;
import dev.ubuf.trace.Span;
import dev.ubuf.trace.SpanKind;
import dev.ubuf.trace.StepTrace;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * A {@link StepTrace} as a Chrome Trace Event Format file (JSON object form), which Perfetto
 * (ui.perfetto.dev) and chrome://tracing open: one process per rank (pid = rank), one thread per stream (tid = the
 * stream's index in the rank's list, named by "M" metadata events and sorted in that order), one complete ("X")
 * event per span with {@code cat} = its kind and its detail as {@code args}. Times are µs ("ts", "dur"), the
 * format's unit; {@code displayTimeUnit} asks viewers to show ms. The step's metadata, including how the ranks'
 * clocks were aligned, goes under "metadata".
 */
public final class ChromeTrace {
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private ChromeTrace() {
    }

    /** The trace file's JSON tree. */
    public static ObjectNode toJson(StepTrace trace) {
        ObjectNode root = JSON.createObjectNode();
        ArrayNode events = root.putArray("traceEvents");
        for (RankTrace r : trace.ranks()) {
            int pid = r.rank();
            meta(events, "process_name", pid, null).put("name", "rank " + r.rank());
            meta(events, "process_sort_index", pid, null).put("sort_index", r.rank());
            List<String> streams = r.streams();
            for (int tid = 0; tid < streams.size(); tid++) {
                meta(events, "thread_name", pid, tid).put("name", streams.get(tid));
                meta(events, "thread_sort_index", pid, tid).put("sort_index", tid);
            }
            // Viewers do not need the order, but people reading the file (and diffing two) do.
            List<Span> spans = r.spans().stream()
                    .sorted(Comparator.comparingDouble(Span::startUs).thenComparingInt(s -> streams.indexOf(s.stream())))
                    .toList();
            for (Span s : spans) {
                ObjectNode e = events.addObject();
                e.put("name", s.name());
                e.put("cat", s.kind().id());
                e.put("ph", "X");
                e.put("ts", round(s.startUs()));
                // Events of one stream end after they start; a negative duration would be a broken event pair.
                e.put("dur", round(Math.max(0, s.durationUs())));
                e.put("pid", pid);
                e.put("tid", streams.indexOf(s.stream()));
                ObjectNode args = e.putObject("args");
                args.put("kind", s.kind().id());
                for (Map.Entry<String, Object> a : s.args().entrySet()) {
                    args.set(a.getKey(), JSON.valueToTree(a.getValue()));
                }
            }
        }
        root.put("displayTimeUnit", "ms");
        ObjectNode meta = root.putObject("metadata");
        meta.put("title", trace.title());
        meta.put("time_unit", "us from each rank's step start");
        for (Map.Entry<String, Object> m : trace.metadata().entrySet()) {
            meta.set(m.getKey(), JSON.valueToTree(m.getValue()));
        }
        return root;
    }

    /** Writes {@code trace} to {@code file} (creating its folder). */
    public static void write(StepTrace trace, Path file) throws IOException {
        Path parent = file.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        JSON.writeValue(file.toFile(), toJson(trace));
    }

    /**
     * Reads a trace file this class wrote back into a {@link StepTrace}: ranks by pid, streams by their thread names
     * in thread order, spans from the complete events (their args as strings, numbers or booleans).
     *
     * @throws IOException              when the file cannot be read or is not JSON
     * @throws IllegalArgumentException when it is JSON but not such a trace (no traceEvents, an unknown span kind)
     */
    public static StepTrace read(Path file) throws IOException {
        JsonNode root = JSON.readTree(file.toFile());
        JsonNode events = root.path("traceEvents");
        if (!events.isArray()) {
            throw new IllegalArgumentException(file + " is not a ubuf trace: no traceEvents array");
        }
        TreeMap<Integer, TreeMap<Integer, String>> streams = new TreeMap<>();
        for (JsonNode e : events) {
            if ("M".equals(e.path("ph").asText()) && "thread_name".equals(e.path("name").asText())) {
                streams.computeIfAbsent(e.path("pid").asInt(), k -> new TreeMap<>())
                        .put(e.path("tid").asInt(), e.path("args").path("name").asText());
            }
        }
        TreeMap<Integer, List<Span>> spans = new TreeMap<>();
        for (JsonNode e : events) {
            if (!"X".equals(e.path("ph").asText())) {
                continue;
            }
            int pid = e.path("pid").asInt();
            int tid = e.path("tid").asInt();
            String stream = streams.getOrDefault(pid, new TreeMap<>()).getOrDefault(tid, "stream " + tid);
            SpanKind kind = kind(e.path("cat").asText(), file);
            Map<String, Object> args = new LinkedHashMap<>();
            e.path("args").fields().forEachRemaining(a -> {
                if (!a.getKey().equals("kind")) {
                    JsonNode v = a.getValue();
                    args.put(a.getKey(), v.isNumber() ? v.numberValue() : v.isBoolean() ? v.booleanValue()
                            : v.asText());
                }
            });
            double ts = e.path("ts").asDouble();
            spans.computeIfAbsent(pid, k -> new ArrayList<>())
                    .add(new Span(stream, e.path("name").asText(), kind, ts, ts + e.path("dur").asDouble(), args));
        }
        List<RankTrace> ranks = new ArrayList<>();
        TreeSet<Integer> pids = new TreeSet<>(streams.keySet());
        pids.addAll(spans.keySet());
        for (int pid : pids) {
            ranks.add(new RankTrace(pid, List.copyOf(streams.getOrDefault(pid, new TreeMap<>()).values()),
                    spans.getOrDefault(pid, List.of())));
        }
        Map<String, Object> metadata = new LinkedHashMap<>();
        root.path("metadata").fields().forEachRemaining(m -> {
            if (!m.getKey().equals("title")) {
                metadata.put(m.getKey(), m.getValue().isValueNode() ? m.getValue().asText() : m.getValue().toString());
            }
        });
        return new StepTrace(root.path("metadata").path("title").asText(file.getFileName().toString()), metadata,
                ranks);
    }

    private static SpanKind kind(String id, Path file) {
        for (SpanKind k : SpanKind.values()) {
            if (k.id().equals(id)) {
                return k;
            }
        }
        throw new IllegalArgumentException(file + ": unknown span kind '" + id + "'");
    }

    private static ObjectNode meta(ArrayNode events, String name, int pid, Integer tid) {
        ObjectNode e = events.addObject();
        e.put("name", name);
        e.put("ph", "M");
        e.put("pid", pid);
        if (tid != null) {
            e.put("tid", tid);
        }
        return e.putObject("args");
    }

    /** To the ns: CUDA events resolve about 0.5 µs, more digits are noise. */
    private static double round(double us) {
        return Math.round(us * 1000.0) / 1000.0;
    }
}

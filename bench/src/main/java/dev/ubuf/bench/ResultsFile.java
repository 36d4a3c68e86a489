package dev.ubuf.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.Map;

/**
 * One benchmark run's results in the results format (bench/results/README.md): {"device", "date", "commit",
 * "records": [...]}, each record with at least op, method, tp, dtype, m, n, k, ms (and gemm_ms, comm_ms for
 * overlapped ops).
 */
public final class ResultsFile {
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    private static final ObjectMapper LINE = new ObjectMapper();
    private final ObjectNode root = JSON.createObjectNode();
    private final ArrayNode records;

    public ResultsFile(String device, String commit) {
        root.put("device", device);
        root.put("date", LocalDate.now().toString());
        root.put("commit", commit);
        records = root.putArray("records");
    }

    /** Adds a record; values may be String, Integer, Long, Double, Boolean. */
    public synchronized void add(Map<String, Object> fields) {
        for (String required : new String[]{"op", "method", "tp", "dtype", "m", "n", "k", "ms"}) {
            if (!fields.containsKey(required)) {
                throw new IllegalArgumentException("a results record needs '" + required + "': " + fields);
            }
        }
        records.add(JSON.valueToTree(fields));
    }

    /**
     * A record with the fields every record carries (bench/results/README.md), in a mutable map, in the format's
     * order, for the benchmark's own fields to follow.
     */
    public static Map<String, Object> record(String op, String method, int tp, String dtype, long m, long n, long k,
                                             double ms) {
        Map<String, Object> r = new java.util.LinkedHashMap<>();
        r.put("op", op);
        r.put("method", method);
        r.put("tp", tp);
        r.put("dtype", dtype);
        r.put("m", m);
        r.put("n", n);
        r.put("k", k);
        r.put("ms", ms);
        return r;
    }

    public synchronized int size() {
        return records.size();
    }

    public synchronized void write(Path file) throws IOException {
        if (file.getParent() != null) {
            Files.createDirectories(file.getParent());
        }
        JSON.writeValue(file.toFile(), root);
    }

    /** A record as one line of JSON (what a serving benchmark answers with). */
    public static String jsonLine(Map<String, Object> fields) {
        try {
            return LINE.writeValueAsString(fields);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalArgumentException("a record that is not JSON: " + fields, e);
        }
    }

    /** The commit to stamp: UBUF_COMMIT, else "unknown". */
    public static String commitFromEnvironment() {
        String c = System.getenv("UBUF_COMMIT");
        return c == null || c.isBlank() ? "unknown" : c.trim();
    }
}

package dev.ubuf.bench;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A method name with option overrides, as given on a benchmark's command line: {@code ring}, {@code ring:cs=1},
 * {@code pipeline:splits=8,margin=24}. The label is recorded as the result's method. Which methods and keys exist is
 * the benchmark's business; this only reads the words.
 */
public record MethodVariant(String label, String method, Map<String, Integer> options) {
    /** Reads {@code METHOD[:key=value,...]} with integer values; a malformed word is an IllegalArgumentException. */
    public static MethodVariant parse(String spec) {
        String s = spec.trim();
        if (s.isEmpty()) {
            throw new IllegalArgumentException("an empty entry (write METHOD[:key=value,...], entries separated by ;)");
        }
        int colon = s.indexOf(':');
        Map<String, Integer> opts = new LinkedHashMap<>();
        if (colon >= 0) {
            for (String kv : s.substring(colon + 1).split(",", -1)) {
                String[] p = kv.split("=", -1);
                if (p.length != 2 || p[0].isBlank()) {
                    throw new IllegalArgumentException("'" + s + "': '" + kv + "' is not key=value");
                }
                String key = p[0].trim();
                if (opts.containsKey(key)) {
                    throw new IllegalArgumentException("'" + s + "' sets " + key + " twice");
                }
                try {
                    opts.put(key, Integer.parseInt(p[1].trim()));
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("'" + s + "': " + key + " must be an integer, got '"
                            + p[1].trim() + "'");
                }
            }
        }
        return new MethodVariant(s, colon < 0 ? s : s.substring(0, colon).trim(), Map.copyOf(opts));
    }

    public int option(String key, int fallback) {
        return options.getOrDefault(key, fallback);
    }
}

package dev.ubuf.bench;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A method name with option overrides, as given on a benchmark's command line: {@code ring}, {@code ring:cs=1},
 * {@code pipeline:splits=8,margin=24}. The label is recorded as the result's method.
 */
public record MethodVariant(String label, String method, Map<String, Integer> options) {
    public static MethodVariant parse(String spec) {
        String s = spec.trim();
        int colon = s.indexOf(':');
        Map<String, Integer> opts = new LinkedHashMap<>();
        if (colon >= 0) {
            for (String kv : s.substring(colon + 1).split(",")) {
                String[] p = kv.split("=");
                if (p.length != 2) {
                    throw new IllegalArgumentException("bad option '" + kv + "' in '" + spec + "' (expected key=value)");
                }
                opts.put(p[0].trim(), Integer.parseInt(p[1].trim()));
            }
        }
        return new MethodVariant(s, colon < 0 ? s : s.substring(0, colon), Map.copyOf(opts));
    }

    public int option(String key, int fallback) {
        return options.getOrDefault(key, fallback);
    }

    /** Fails on keys the benchmark does not know, so a typo is not silently a default run. */
    public MethodVariant requireKnown(java.util.Set<String> known) {
        for (String k : options.keySet()) {
            if (!known.contains(k)) {
                throw new IllegalArgumentException("unknown option '" + k + "' in '" + label + "'; known: " + known);
            }
        }
        return this;
    }
}

package dev.ubuf.op;

import dev.ubuf.tensor.DType;

import java.util.Map;
import java.util.SequencedMap;

/**
 * Reads a method's string options with errors that name the method, the key and the allowed values, so a typo on
 * a command line or in a layer config is never silently a default run.
 */
public record MethodOptions(String method, SequencedMap<String, String> known, Map<String, String> given) {

    public MethodOptions {
        for (String k : given.keySet()) {
            if (!known.containsKey(k)) {
                throw new MethodOptionException("method '" + method + "' has no option '" + k + "'; its options: "
                        + describe(known));
            }
        }
    }

    /**
     * The options of {@code variant} ("name:key=v,key=v"): {@code text}, what follows its colon, read as key=value
     * pairs in order; a malformed pair names {@code method}'s options. Keys are checked by the constructor.
     */
    public static java.util.LinkedHashMap<String, String> parse(String variant, String text, String method,
                                                                SequencedMap<String, String> known) {
        java.util.LinkedHashMap<String, String> opts = new java.util.LinkedHashMap<>();
        for (String kv : text.split(",")) {
            String[] p = kv.split("=", -1);
            if (p.length != 2 || p[0].isBlank() || p[1].isBlank()) {
                throw new MethodOptionException("bad option '" + kv + "' in '" + variant + "' (expected key=value; "
                        + method + "'s options: " + describe(known) + ")");
            }
            opts.put(p[0].trim(), p[1].trim());
        }
        return opts;
    }

    public static String describe(SequencedMap<String, String> known) {
        if (known.isEmpty()) {
            return "(none)";
        }
        StringBuilder sb = new StringBuilder();
        known.forEach((k, d) -> sb.append(sb.isEmpty() ? "" : "; ").append(k).append(" = ").append(d));
        return sb.toString();
    }

    /** The integer option {@code key} in [min, max], or {@code fallback} when absent. */
    public int intValue(String key, int fallback, int min, int max) {
        String v = given.get(key);
        if (v == null) {
            return fallback;
        }
        int x;
        try {
            x = Integer.parseInt(v.trim());
        } catch (NumberFormatException e) {
            throw new MethodOptionException("method '" + method + "' option " + key + "=" + v
                    + " is not an integer (" + known.get(key) + ")");
        }
        if (x < min || x > max) {
            throw new MethodOptionException("method '" + method + "' option " + key + "=" + x + " is outside "
                    + min + ".." + max + " (" + known.get(key) + ")");
        }
        return x;
    }

    /** A boolean option given as 0/1 or false/true, or {@code fallback} when absent. */
    public boolean boolValue(String key, boolean fallback) {
        String v = given.get(key);
        if (v == null) {
            return fallback;
        }
        return switch (v.trim().toLowerCase(java.util.Locale.ROOT)) {
            case "1", "true" -> true;
            case "0", "false" -> false;
            default -> throw new MethodOptionException("method '" + method + "' option " + key + "=" + v
                    + " must be 0 or 1 (" + known.get(key) + ")");
        };
    }

    /** A dtype option ("fp32", "bf16", ...), or {@code fallback} when absent. */
    public DType dtypeValue(String key, DType fallback) {
        String v = given.get(key);
        if (v == null) {
            return fallback;
        }
        try {
            return DType.parse(v.trim());
        } catch (IllegalArgumentException e) {
            throw new MethodOptionException("method '" + method + "' option " + key + "=" + v + ": "
                    + e.getMessage());
        }
    }
}

package dev.ubuf.cli;

import dev.ubuf.bench.MethodVariant;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * What --methods of one benchmark accepts: method names, and keys written {@code METHOD:key=value,...}. Both lists
 * keep one order, used in the help and in every error, so a user sees the same list each time.
 *
 * @param methods the method names, "auto" (the planned op) included
 * @param keys    the variant keys
 */
record MethodMenu(List<String> methods, List<VariantKey> keys) {
    MethodMenu {
        methods = List.copyOf(methods);
        keys = List.copyOf(keys);
    }

    /** The variants of {@code words}, each checked against the menu; an IllegalArgumentException names the word. */
    List<MethodVariant> parse(List<String> words) {
        if (words.isEmpty()) {
            throw new IllegalArgumentException("no method given; methods: " + methodList());
        }
        List<MethodVariant> variants = new ArrayList<>();
        Set<String> labels = new HashSet<>();
        for (String word : words) {
            MethodVariant v = MethodVariant.parse(word);
            if (!methods.contains(v.method())) {
                throw new IllegalArgumentException("unknown method '" + v.method() + "'"
                        + (v.label().equals(v.method()) ? "" : " in '" + v.label() + "'") + "; methods: "
                        + methodList());
            }
            for (var option : v.options().entrySet()) {
                VariantKey key = key(option.getKey(), v);
                int value = option.getValue();
                if (value < key.min() || value > key.max()) {
                    throw new IllegalArgumentException("'" + v.label() + "': " + key.name() + " (" + key.meaning()
                            + ") must be " + key.range() + ", got " + value);
                }
            }
            if (!labels.add(v.label())) {
                throw new IllegalArgumentException("'" + v.label() + "' is listed twice");
            }
            variants.add(v);
        }
        return variants;
    }

    private VariantKey key(String name, MethodVariant v) {
        for (VariantKey k : keys) {
            if (k.name().equals(name)) {
                return k;
            }
        }
        throw new IllegalArgumentException("unknown key '" + name + "' in '" + v.label() + "'; keys: " + keyList());
    }

    String methodList() {
        return String.join(", ", methods);
    }

    String keyList() {
        return String.join(", ", keys.stream().map(VariantKey::name).toList());
    }

    /** The help's section on --methods: the method names, then one line per key. */
    List<String> help() {
        List<String> lines = new ArrayList<>();
        lines.add("");
        lines.add("--methods: entries METHOD[:key=value,...] separated by ';'. Methods: " + methodList()
                + " (auto: the op a layer gets from the planner, NCCL for small shapes).");
        lines.add("Keys, in this order (an absent key keeps the method's default):");
        for (VariantKey k : keys) {
            lines.add(k.help());
        }
        return lines;
    }
}

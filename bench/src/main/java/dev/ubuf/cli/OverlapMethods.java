package dev.ubuf.cli;

import dev.ubuf.bench.OverlapBench;
import dev.ubuf.op.Collective;
import dev.ubuf.op.MethodOptions;
import dev.ubuf.op.MethodRegistry;
import dev.ubuf.op.OverlapMethod;
import dev.ubuf.op.OverlapShape;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * What --methods accepts for one collective: the registered methods that multiply (bulk only moves data; it is
 * timed as "comm"), "auto" (the planner's choice) and "nccl" (the reference), each with the option keys its method
 * declares. The same list, in one order, makes the help and every error.
 */
final class OverlapMethods {
    private OverlapMethods() {
    }

    static List<String> names(MethodRegistry registry, Collective c) {
        List<String> names = new ArrayList<>();
        for (OverlapMethod m : registry.of(c)) {
            if (m.hasGemm()) {
                names.add(m.name());
            }
        }
        names.add("auto");
        names.add("nccl");
        return names;
    }

    /**
     * The variants, checked by name and options against every shape (and, with {@code cudaGraph}, for graph-safe
     * execution); errors name --methods and what it accepts.
     */
    static List<String> check(CommandSpec spec, MethodRegistry registry, Collective c, List<String> words,
                              List<? extends OverlapShape> shapes, boolean cudaGraph) {
        List<String> names = names(registry, c);
        List<String> variants = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        for (String word : words) {
            String v = word.trim();
            if (v.isEmpty()) {
                continue;
            }
            String name = v.contains(":") ? v.substring(0, v.indexOf(':')) : v;
            if (!names.contains(name)) {
                throw OptionChecks.invalid(spec, "--methods: unknown method '" + name + "'"
                        + (v.equals(name) ? "" : " in '" + v + "'") + "; methods: " + String.join(", ", names));
            }
            if (!seen.add(v)) {
                throw OptionChecks.invalid(spec, "--methods: '" + v + "' is listed twice");
            }
            if (name.equals("auto") && !v.equals(name)) {
                throw OptionChecks.invalid(spec, "--methods: '" + v + "': " + name + " takes no options");
            }
            for (OverlapShape s : shapes) {
                if (name.equals("auto")) {
                    continue;
                }
                try {
                    OverlapBench.checkVariant(registry, s, v, cudaGraph);
                } catch (dev.ubuf.op.MethodOptionException e) {
                    throw OptionChecks.invalid(spec, "--methods: '" + v + "': " + e.getMessage());
                } catch (IllegalArgumentException e) {
                    throw OptionChecks.invalid(spec, "--methods: '" + v + "' cannot run M=" + s.m() + " K=" + s.k()
                            + " N=" + s.n() + " with --tp " + s.tp() + ": " + e.getMessage());
                }
            }
            variants.add(v);
        }
        if (variants.isEmpty()) {
            throw OptionChecks.invalid(spec, "--methods: no method given; methods: " + String.join(", ", names));
        }
        return variants;
    }

    /** The help's --methods section: methods, then each method's keys with what they set and their defaults. */
    static String[] help(MethodRegistry registry, Collective c) {
        List<String> lines = new ArrayList<>();
        lines.add("");
        lines.add("--methods: entries METHOD[:key=value,...] separated by ';'. Methods: "
                + String.join(", ", names(registry, c)) + " (auto: the planner's choice, measured; nccl: the"
                + " unoverlapped reference" + (c == Collective.REDUCE_SCATTER ? "; nccl:splits=S: its reduce-scatter"
                + " pipelined over S GEMM column blocks" : "") + ").");
        for (OverlapMethod m : registry.of(c)) {
            if (m.hasGemm() && !m.optionKeys().isEmpty()) {
                lines.add("  " + m.name() + ": " + MethodOptions.describe(m.optionKeys()));
            }
        }
        return lines.toArray(String[]::new);
    }

    /** Adds the --methods menu of the command's collective to its help. */
    abstract static class Help implements CommandLine.IModelTransformer {
        abstract Collective collective();

        @Override
        public CommandSpec transform(CommandSpec spec) {
            spec.usageMessage().footer(help(MethodRegistry.load(), collective()));
            return spec;
        }
    }
}

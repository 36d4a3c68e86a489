package dev.ubuf.bench;

import dev.ubuf.trace.RankTrace;
import dev.ubuf.trace.Span;
import dev.ubuf.trace.SpanKind;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Where a traced overlap step loses time against the traced step of its compute alone (the demo's {@code no_comm}):
 * the two steps' spans on the caller's stream, which run one after another, paired by name in order (an op's
 * "fc1_fprop (ring)" and the compute alone's "fc1_fprop GEMMs only" are both "fc1_fprop"), each pair's durations,
 * and the caller stream's idle time in each (the gaps between its spans). The step's difference is the sum of the
 * pairs' differences, the unpaired spans and the difference in idle time.
 */
public record TraceComparison(double overlapUs, double computeUs, double overlapIdleUs, double computeIdleUs,
                              List<Pair> pairs, List<Span> overlapOnly, List<Span> computeOnly) {
    /** The caller's stream, as {@link dev.ubuf.trace.StepTracer} users name it. */
    public static final String CALLER = "caller";

    /** One caller span of both steps: its durations in each. */
    public record Pair(String name, double overlapUs, double computeUs) {
        public double differenceUs() {
            return overlapUs - computeUs;
        }
    }

    public TraceComparison {
        pairs = List.copyOf(pairs);
        overlapOnly = List.copyOf(overlapOnly);
        computeOnly = List.copyOf(computeOnly);
    }

    /** Compares one rank's overlap step with its compute-alone step. */
    public static TraceComparison of(RankTrace overlap, RankTrace compute) {
        List<Span> a = callerSpans(overlap);
        List<Span> b = callerSpans(compute);
        Map<String, List<Span>> byName = new LinkedHashMap<>();
        for (Span s : b) {
            byName.computeIfAbsent(key(s.name()), k -> new ArrayList<>()).add(s);
        }
        List<Pair> pairs = new ArrayList<>();
        List<Span> overlapOnly = new ArrayList<>();
        for (Span s : a) {
            List<Span> same = byName.get(key(s.name()));
            if (same == null || same.isEmpty()) {
                overlapOnly.add(s);
            } else {
                Span t = same.removeFirst();
                pairs.add(new Pair(key(s.name()), s.durationUs(), t.durationUs()));
            }
        }
        List<Span> computeOnly = byName.values().stream().flatMap(List::stream)
                .sorted(Comparator.comparingDouble(Span::startUs)).toList();
        return new TraceComparison(overlap.gpuEndUs(), compute.gpuEndUs(), idle(a, overlap.gpuEndUs()),
                idle(b, compute.gpuEndUs()), pairs, overlapOnly, computeOnly);
    }

    /**
     * Each rank's comparison side by side ({@code overlap} and {@code compute} paired by rank): the step's and the
     * caller stream's idle time's difference, then, per caller span name, the sum of its differences on each rank
     * (its pairs', and its unpaired spans' whole durations), the {@code top} names whose largest difference over the
     * ranks is largest. The step is as long as its slowest rank; an op whose difference varies much between ranks
     * spends the difference waiting for its peers, the ranks' skew, which a benchmark's barrier before each sample
     * hides.
     */
    public static List<String> acrossRanks(List<RankTrace> overlap, List<RankTrace> compute, int top, String mode) {
        Map<Integer, RankTrace> alone = new LinkedHashMap<>();
        compute.forEach(r -> alone.put(r.rank(), r));
        List<RankTrace> ranks = overlap.stream().filter(r -> alone.containsKey(r.rank())).toList();
        if (ranks.isEmpty()) {
            return List.of();
        }
        int n = ranks.size();
        double[] step = new double[n];
        double[] idle = new double[n];
        Map<String, double[]> byName = new LinkedHashMap<>();
        for (int i = 0; i < n; i++) {
            TraceComparison c = of(ranks.get(i), alone.get(ranks.get(i).rank()));
            step[i] = c.overlapUs() - c.computeUs();
            idle[i] = c.overlapIdleUs() - c.computeIdleUs();
            for (Pair p : c.pairs()) {
                byName.computeIfAbsent(p.name(), k -> new double[n])[i] += p.differenceUs();
            }
            for (Span sp : c.overlapOnly()) {
                byName.computeIfAbsent(key(sp.name()), k -> new double[n])[i] += sp.durationUs();
            }
            for (Span sp : c.computeOnly()) {
                byName.computeIfAbsent(key(sp.name()), k -> new double[n])[i] -= sp.durationUs();
            }
        }
        List<Map.Entry<String, double[]>> rows = new ArrayList<>(byName.entrySet());
        rows.sort(Comparator.comparingDouble((Map.Entry<String, double[]> e) ->
                java.util.Arrays.stream(e.getValue()).max().orElseThrow()).reversed());
        List<String> lines = new ArrayList<>();
        StringBuilder head = new StringBuilder(String.format(Locale.ROOT, "  %-32s", mode + " us over alone"));
        ranks.forEach(r -> head.append(String.format(Locale.ROOT, " %8s", "rank " + r.rank())));
        lines.add(head.toString());
        lines.add(row("step", step));
        lines.add(row("caller idle", idle));
        for (Map.Entry<String, double[]> e : rows.subList(0, Math.min(top, rows.size()))) {
            lines.add(row(e.getKey(), e.getValue()));
        }
        return lines;
    }

    private static String row(String name, double[] v) {
        StringBuilder sb = new StringBuilder(String.format(Locale.ROOT, "  %-32s", name));
        for (double x : v) {
            sb.append(String.format(Locale.ROOT, " %+8.0f", x));
        }
        return sb.toString();
    }

    /** A span's name without its method ("fc1_fprop (ring)") or the compute alone's suffix ("... GEMMs only"). */
    static String key(String name) {
        String n = name.endsWith(" GEMMs only") ? name.substring(0, name.length() - " GEMMs only".length()) : name;
        int paren = n.lastIndexOf(" (");
        return paren > 0 && n.endsWith(")") ? n.substring(0, paren) : n;
    }

    private static List<Span> callerSpans(RankTrace r) {
        return r.spans().stream().filter(s -> s.stream().equals(CALLER) && s.kind() != SpanKind.HOST)
                .sorted(Comparator.comparingDouble(Span::startUs)).toList();
    }

    /** The caller stream's time from 0 to {@code end} that none of its spans covers. */
    private static double idle(List<Span> spans, double end) {
        List<double[]> covered = TraceBreakdown.intervals(spans, java.util.EnumSet.allOf(SpanKind.class));
        double busy = 0;
        for (double[] iv : covered) {
            busy += Math.min(iv[1], end) - Math.min(iv[0], end);
        }
        return end - busy;
    }

    /**
     * The comparison as text: the totals, then the {@code top} pairs that lost the most, then the unpaired spans; the
     * first step named {@code mode} (the demo's overlap step, or its no_overlap step beside no_comm).
     */
    public List<String> describe(int top, String mode) {
        List<String> lines = new ArrayList<>();
        lines.add(String.format(Locale.ROOT, "%s step %.0f us against the compute alone %.0f us (%+.0f us); the"
                        + " caller stream idle %.0f us against %.0f us (%+.0f us)", mode, overlapUs, computeUs,
                overlapUs - computeUs, overlapIdleUs, computeIdleUs, overlapIdleUs - computeIdleUs));
        lines.add(String.format(Locale.ROOT, "  %-32s %12s %12s %10s", "caller span", mode + " us", "alone us",
                "diff us"));
        List<Pair> sorted = new ArrayList<>(pairs);
        sorted.sort(Comparator.comparingDouble(Pair::differenceUs).reversed());
        for (Pair p : sorted.subList(0, Math.min(top, sorted.size()))) {
            lines.add(String.format(Locale.ROOT, "  %-32s %12.0f %12.0f %+10.0f", p.name(), p.overlapUs(),
                    p.computeUs(), p.differenceUs()));
        }
        for (Span s : overlapOnly) {
            lines.add(String.format(Locale.ROOT, "  %-32s %12.0f %12s %+10.0f", key(s.name()), s.durationUs(), "-",
                    s.durationUs()));
        }
        for (Span s : computeOnly) {
            lines.add(String.format(Locale.ROOT, "  %-32s %12s %12.0f %+10.0f", key(s.name()), "-", s.durationUs(),
                    -s.durationUs()));
        }
        return lines;
    }
}

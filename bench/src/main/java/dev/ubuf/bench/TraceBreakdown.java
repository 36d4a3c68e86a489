package dev.ubuf.bench;

import dev.ubuf.trace.RankTrace;
import dev.ubuf.trace.Span;
import dev.ubuf.trace.SpanKind;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Where one rank's traced step spent its time: how long GEMMs, other kernels and communication kept the GPU busy
 * (each the union of its spans over every stream; kernel time without the communication some kernel spans enclose), how much of the communication ran while a GEMM ran, per
 * collective (its hidden share), and per GEMM or kernel name the time and the part of it under communication.
 * Communication is the data movement itself: copies, reductions and NCCL calls; waits, signals and events are
 * bookkeeping. A collective is named by its streams ("fc1_fprop: comm 0" belongs to fc1_fprop); work on the
 * caller's own streams is "caller". Span times come from CUDA events, so a gap the host left between two events
 * counts as time too; where the trace has the host's spans, {@link HostWait} says how much of that there was.
 */
public record TraceBreakdown(int rank, double stepUs, double gemmUs, double kernelUs, double commUs,
                             double commUnderGemmUs, List<Collective> collectives, List<Work> work, HostWait host) {
    /** Data movement, as opposed to the bookkeeping spans (waits, signals, events) and the ops' outlines. */
    static final Set<SpanKind> COMMUNICATION = EnumSet.of(SpanKind.COPY, SpanKind.REDUCE, SpanKind.NCCL);

    /** One collective's communication: busy time (union of its spans) and the part of it under some GEMM. */
    public record Collective(String name, double commUs, double underGemmUs) {
        public double hiddenShare() {
            return commUs > 0 ? underGemmUs / commUs : Double.NaN;
        }
    }

    /** GEMMs or kernels of one name (shapes dropped): how many, their summed time, and how much ran under comm. */
    public record Work(SpanKind kind, String name, int count, double us, double underCommUs) {
    }

    /**
     * The host against the GPU, from the trace's {@link SpanKind#HOST} spans (null without them): when the host had
     * issued the step's last span, and how long the caller's streams sat idle waiting for the host to issue their
     * next span (each span's GPU start, or its host opening if earlier, minus the end of the stream's span before
     * it, where that is positive, the host opened the span after that end and the span began on its issue, within
     * {@link #LAUNCH_SLACK_US} of the host closing it), with the spans that waited longest.
     */
    public record HostWait(double issuedUs, double waitedUs, List<Waited> longest) {
        public HostWait {
            longest = List.copyOf(longest);
        }
    }

    /** One span whose stream waited for the host to issue it. */
    public record Waited(String stream, String name, double us) {
    }

    public TraceBreakdown {
        collectives = List.copyOf(collectives);
        work = List.copyOf(work);
    }

    /** How long after the host issued a span its GPU start may come and still count as waiting for the host. */
    static final double LAUNCH_SLACK_US = 50;

    /** How many of the longest host waits {@link HostWait#longest()} keeps. */
    static final int LONGEST_WAITS = 3;

    static HostWait hostLag(RankTrace r) {
        List<Span> host = r.spans().stream().filter(s -> s.kind() == SpanKind.HOST).toList();
        if (host.isEmpty()) {
            return null;
        }
        Map<String, List<Span>> hostByKey = new LinkedHashMap<>();
        for (Span h : host) {
            hostByKey.computeIfAbsent(h.args().get("stream") + "\n" + h.name(), k -> new ArrayList<>()).add(h);
        }
        double waited = 0;
        List<Waited> waits = new ArrayList<>();
        Map<String, List<Span>> gpuByStream = new LinkedHashMap<>();
        for (Span s : r.spans()) {
            if (s.kind() != SpanKind.HOST && hostByKey.containsKey(s.stream() + "\n" + s.name())) {
                gpuByStream.computeIfAbsent(s.stream(), k -> new ArrayList<>()).add(s);
            }
        }
        for (var e : gpuByStream.entrySet()) {
            List<Span> spans = new ArrayList<>(e.getValue());
            spans.sort(Comparator.comparingDouble(Span::startUs));
            Map<String, Integer> seen = new LinkedHashMap<>();
            double prevEnd = 0;
            for (Span s : spans) {
                String key = s.stream() + "\n" + s.name();
                int i = seen.merge(key, 1, Integer::sum) - 1;
                List<Span> hs = hostByKey.get(key);
                Span h = hs.get(Math.min(i, hs.size() - 1));
                double idle = Math.min(s.startUs(), h.startUs()) - prevEnd;
                // A span that began well after the host had issued it waited for something else (an event of
                // another stream, a peer), not for the host: a forked stream idles until its fork.
                boolean startedOnIssue = s.startUs() <= h.endUs() + LAUNCH_SLACK_US;
                if (h.startUs() > prevEnd && idle > 0 && startedOnIssue) {
                    waited += idle;
                    waits.add(new Waited(s.stream(), s.name(), idle));
                }
                prevEnd = Math.max(prevEnd, s.endUs());
            }
        }
        waits.sort(Comparator.comparingDouble(Waited::us).reversed());
        double issued = host.stream().mapToDouble(Span::endUs).max().orElse(0);
        return new HostWait(issued, waited, waits.subList(0, Math.min(LONGEST_WAITS, waits.size())));
    }

    /** The breakdown of {@code r}'s step. */
    public static TraceBreakdown of(RankTrace r) {
        List<double[]> gemm = intervals(r.spans(), EnumSet.of(SpanKind.GEMM));
        List<double[]> comm = intervals(r.spans(), COMMUNICATION);
        Map<String, List<Span>> byCollective = new LinkedHashMap<>();
        for (Span s : r.spans()) {
            if (COMMUNICATION.contains(s.kind())) {
                byCollective.computeIfAbsent(collective(s.stream()), k -> new ArrayList<>()).add(s);
            }
        }
        List<Collective> collectives = new ArrayList<>();
        byCollective.forEach((name, spans) -> {
            List<double[]> mine = intervals(spans, COMMUNICATION);
            collectives.add(new Collective(name, length(mine), length(intersect(mine, gemm))));
        });
        Map<String, Work> work = new LinkedHashMap<>();
        for (Span s : r.spans()) {
            if (s.kind() != SpanKind.GEMM && s.kind() != SpanKind.KERNEL) {
                continue;
            }
            String name = workName(s);
            List<double[]> self = List.of(new double[]{s.startUs(), s.endUs()});
            double under = length(intersect(self, comm));
            work.merge(s.kind() + " " + name, new Work(s.kind(), name, 1, s.durationUs(), under),
                    (a, b) -> new Work(a.kind(), a.name(), a.count() + 1, a.us() + b.us(),
                            a.underCommUs() + b.underCommUs()));
        }
        List<Work> sorted = new ArrayList<>(work.values());
        sorted.sort(Comparator.comparingDouble(Work::us).reversed());
        // A kernel span may enclose a collective (the FP8 amax reduction): kernel time is what is not communication.
        List<double[]> kernels = intervals(r.spans(), EnumSet.of(SpanKind.KERNEL));
        double kernelUs = length(kernels) - length(intersect(kernels, comm));
        return new TraceBreakdown(r.rank(), r.gpuEndUs(), length(gemm), kernelUs, length(comm),
                length(intersect(comm, gemm)), collectives, sorted, hostLag(r));
    }

    /** The whole step's communication under GEMMs over all of it. */
    public double hiddenShare() {
        return commUs > 0 ? commUnderGemmUs / commUs : Double.NaN;
    }

    /** The breakdown as text: a summary line, a table of collectives, the {@code top} longest GEMMs and kernels. */
    public List<String> describe(int top) {
        List<String> lines = new ArrayList<>();
        lines.add(String.format(Locale.ROOT, "rank %d: step %.0f us; GPU busy with GEMMs %.0f us (%.0f%%), other"
                        + " kernels %.0f us, communication %.0f us of which %.0f us under a GEMM (hidden %.2f)", rank,
                stepUs, gemmUs, 100 * gemmUs / stepUs, kernelUs, commUs, commUnderGemmUs, hiddenShare()));
        if (host != null) {
            lines.add(String.format(Locale.ROOT, "  host: issued the step's last span at %.0f us; the caller's streams"
                    + " waited %.0f us for the host%s", host.issuedUs(), host.waitedUs(), host.longest().isEmpty() ? ""
                    : " (longest before: " + String.join(", ", host.longest().stream().map(w -> String.format(
                    Locale.ROOT, "%s %.0f us", w.name(), w.us())).toList()) + ")"));
        }
        lines.add(String.format(Locale.ROOT, "  %-24s %12s %14s %7s", "collective", "comm us", "under GEMM us",
                "hidden"));
        for (Collective c : collectives) {
            lines.add(String.format(Locale.ROOT, "  %-24s %12.0f %14.0f %7.2f", c.name(), c.commUs(), c.underGemmUs(),
                    c.hiddenShare()));
        }
        lines.add(String.format(Locale.ROOT, "  %-6s %-40s %5s %10s %14s", "kind", "GEMM or kernel", "runs", "us",
                "under comm us"));
        for (Work w : work.subList(0, Math.min(top, work.size()))) {
            lines.add(String.format(Locale.ROOT, "  %-6s %-40s %5d %10.0f %14.0f", w.kind().id(), w.name(), w.count(),
                    w.us(), w.underCommUs()));
        }
        return lines;
    }

    /** "fc1_fprop: comm 0" -> "fc1_fprop"; the caller's own streams ("caller", "side") -> "caller". */
    static String collective(String stream) {
        int colon = stream.indexOf(':');
        return colon > 0 ? stream.substring(0, colon) : "caller";
    }

    /** A GEMM by its op and shape (m x n x k), a kernel by its name without the per-call detail. */
    static String workName(Span s) {
        if (s.kind() == SpanKind.GEMM) {
            Object m = s.args().get("m");
            Object n = s.args().get("n");
            Object k = s.args().get("k");
            String shape = m != null && n != null && k != null ? m + "x" + n + "x" + k : s.name();
            String op = s.args().get("op") instanceof String o ? o + " " : "";
            return collective(s.stream()).equals("caller") ? s.name() : op + shape;
        }
        return s.name();
    }

    /** The union of the spans of {@code kinds} as sorted, disjoint [start, end) intervals. */
    static List<double[]> intervals(List<Span> spans, Set<SpanKind> kinds) {
        List<double[]> all = new ArrayList<>();
        for (Span s : spans) {
            if (kinds.contains(s.kind()) && s.endUs() > s.startUs()) {
                all.add(new double[]{s.startUs(), s.endUs()});
            }
        }
        all.sort(Comparator.comparingDouble(a -> a[0]));
        List<double[]> merged = new ArrayList<>();
        for (double[] iv : all) {
            if (!merged.isEmpty() && iv[0] <= merged.getLast()[1]) {
                merged.getLast()[1] = Math.max(merged.getLast()[1], iv[1]);
            } else {
                merged.add(iv.clone());
            }
        }
        return merged;
    }

    /** The intersection of two sorted, disjoint interval lists. */
    static List<double[]> intersect(List<double[]> a, List<double[]> b) {
        List<double[]> out = new ArrayList<>();
        int i = 0;
        int j = 0;
        while (i < a.size() && j < b.size()) {
            double lo = Math.max(a.get(i)[0], b.get(j)[0]);
            double hi = Math.min(a.get(i)[1], b.get(j)[1]);
            if (lo < hi) {
                out.add(new double[]{lo, hi});
            }
            if (a.get(i)[1] < b.get(j)[1]) {
                i++;
            } else {
                j++;
            }
        }
        return out;
    }

    static double length(List<double[]> intervals) {
        return intervals.stream().mapToDouble(iv -> iv[1] - iv[0]).sum();
    }
}

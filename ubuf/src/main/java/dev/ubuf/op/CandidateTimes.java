package dev.ubuf.op;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What the planner measured for one shape: per candidate, in the planner's candidate order (the NCCL reference first,
 * then each method's tuning space in registry order), the median over the timed rounds of each round's maximum over
 * ranks, and how many timed rounds ran; and, where a runoff ran ({@link #runoffFinalists}), the finalists' medians
 * in it and its rounds.
 *
 * @param runoffMs     per finalist, its median in the runoff (empty: no runoff)
 * @param runoffRounds timed rounds of the runoff (0 without one)
 */
public record CandidateTimes(Map<String, Double> medianMs, int rounds, Map<String, Double> runoffMs,
                             int runoffRounds) {
    /**
     * Medians within this share of the fastest are a tie: their order comes from noise, so the earliest candidate
     * among them is chosen, and the same measurement always picks the same one.
     */
    public static final double NEAR_TIE = 0.01;
    /**
     * Candidates within this share of the fastest are timed again, alone together: with a dozen candidates a round
     * is long and the GPU's clocks drift across it, so two methods a few percent apart swap places from one
     * measurement to the next (the planner's choice was 2.6-5.5% slower than the benchmark's fastest on 5 of 88
     * shapes at tp 2, 4x H200, 2026-11-28).
     */
    public static final double RUNOFF_SHARE = 0.05;
    /** At most this many finalists, the fastest first. */
    public static final int RUNOFF_MAX = 4;

    public static final CandidateTimes NONE = new CandidateTimes(Map.of(), 0);

    public CandidateTimes {
        medianMs = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(medianMs));
        runoffMs = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(runoffMs));
        if (rounds < 0 || runoffRounds < 0) {
            throw new IllegalArgumentException("rounds must be >= 0, got " + rounds + " and " + runoffRounds);
        }
        if (!medianMs.keySet().containsAll(runoffMs.keySet())) {
            throw new IllegalArgumentException("runoff candidates " + runoffMs.keySet() + " not all among "
                    + medianMs.keySet());
        }
        if (runoffMs.isEmpty() != (runoffRounds == 0)) {
            throw new IllegalArgumentException("a runoff needs both times and rounds, got " + runoffMs.size()
                    + " candidates and " + runoffRounds + " rounds");
        }
    }

    /** A measurement without a runoff. */
    public CandidateTimes(Map<String, Double> medianMs, int rounds) {
        this(medianMs, rounds, Map.of(), 0);
    }

    public boolean isEmpty() {
        return medianMs.isEmpty();
    }

    /** The lowest median. */
    public double fastestMs() {
        return medianMs.values().stream().mapToDouble(Double::doubleValue).min()
                .orElseThrow(() -> new IllegalStateException("nothing was measured"));
    }

    /**
     * The candidates a runoff times again: those within {@link #RUNOFF_SHARE} of the fastest, at most
     * {@link #RUNOFF_MAX} of them (the fastest), in candidate order. Fewer than two: no runoff is needed.
     */
    public List<String> runoffFinalists() {
        double limit = fastestMs() * (1 + RUNOFF_SHARE);
        List<String> near = medianMs.entrySet().stream().filter(e -> e.getValue() <= limit)
                .sorted(Map.Entry.comparingByValue()).limit(RUNOFF_MAX).map(Map.Entry::getKey).toList();
        return medianMs.keySet().stream().filter(near::contains).toList();
    }

    /** These times with {@code runoffMs}, the finalists' medians in a runoff of {@code runoffRounds} rounds. */
    public CandidateTimes withRunoff(Map<String, Double> runoffMs, int runoffRounds) {
        if (!this.runoffMs.isEmpty()) {
            throw new IllegalStateException("a runoff already ran");
        }
        return new CandidateTimes(medianMs, rounds, runoffMs, runoffRounds);
    }

    /**
     * What the choice compares: without a runoff every candidate's median; with one only the finalists, each by
     * its two medians weighted by their rounds (the runoff adds samples to the first measurement, it does not
     * replace it).
     */
    public Map<String, Double> decidingMs() {
        if (runoffMs.isEmpty()) {
            return medianMs;
        }
        Map<String, Double> m = new LinkedHashMap<>();
        medianMs.forEach((k, v) -> {
            Double r = runoffMs.get(k);
            if (r != null) {
                m.put(k, (v * rounds + r * runoffRounds) / (rounds + runoffRounds));
            }
        });
        return m;
    }

    /** The earliest candidate whose {@link #decidingMs} is within {@link #NEAR_TIE} of the lowest. */
    public String choice() {
        Map<String, Double> m = decidingMs();
        double limit = m.values().stream().mapToDouble(Double::doubleValue).min()
                .orElseThrow(() -> new IllegalStateException("nothing was measured")) * (1 + NEAR_TIE);
        return m.entrySet().stream().filter(e -> e.getValue() <= limit).findFirst().orElseThrow().getKey();
    }

    /**
     * One line per candidate: label, median ms, median as % of the fastest, with a runoff the finalist's runoff
     * median, and a mark on {@code chosen}.
     */
    public List<String> table(String chosen) {
        List<String> lines = new ArrayList<>();
        if (isEmpty()) {
            return lines;
        }
        double fastest = fastestMs();
        boolean runoff = !runoffMs.isEmpty();
        lines.add(String.format("  %-28s %10s %11s", "candidate", "median ms", "% fastest")
                + (runoff ? String.format(" %10s", "runoff ms") : ""));
        medianMs.forEach((k, v) -> {
            Double r = runoffMs.get(k);
            String col = !runoff ? "" : r == null ? String.format(" %10s", "-") : String.format(" %10.4f", r);
            lines.add(String.format("  %-28s %10.4f %10.1f%%", k, v, 100 * v / fastest) + col
                    + (k.equals(chosen) ? "  <- chosen" : ""));
        });
        lines.add("  (" + rounds + " interleaved rounds per candidate, each round's maximum over ranks"
                + (runoff ? "; the " + runoffMs.size() + " within " + Math.round(100 * RUNOFF_SHARE)
                + "% of the fastest timed again in " + runoffRounds + " rounds, chosen by both medians" : "") + ")");
        return lines;
    }
}

package dev.ubuf.op;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What the planner measured for one shape: per candidate, in the planner's candidate order (the NCCL reference first,
 * then each method's tuning space in registry order), the median over the timed rounds of each round's maximum over
 * ranks, and how many timed rounds ran.
 */
public record CandidateTimes(Map<String, Double> medianMs, int rounds) {
    /**
     * Medians within this share of the fastest are a tie: their order comes from noise, so the earliest candidate
     * among them is chosen, and the same measurement always picks the same one.
     */
    public static final double NEAR_TIE = 0.01;

    public static final CandidateTimes NONE = new CandidateTimes(Map.of(), 0);

    public CandidateTimes {
        medianMs = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(medianMs));
        if (rounds < 0) {
            throw new IllegalArgumentException("rounds must be >= 0, got " + rounds);
        }
    }

    public boolean isEmpty() {
        return medianMs.isEmpty();
    }

    /** The lowest median. */
    public double fastestMs() {
        return medianMs.values().stream().mapToDouble(Double::doubleValue).min()
                .orElseThrow(() -> new IllegalStateException("nothing was measured"));
    }

    /** The earliest candidate whose median is within {@link #NEAR_TIE} of the lowest. */
    public String choice() {
        double limit = fastestMs() * (1 + NEAR_TIE);
        return medianMs.entrySet().stream().filter(e -> e.getValue() <= limit).findFirst().orElseThrow().getKey();
    }

    /** One line per candidate: label, median ms, median as % of the fastest, and a mark on {@code chosen}. */
    public List<String> table(String chosen) {
        List<String> lines = new ArrayList<>();
        if (isEmpty()) {
            return lines;
        }
        double fastest = fastestMs();
        lines.add(String.format("  %-28s %10s %11s", "candidate", "median ms", "% fastest"));
        medianMs.forEach((k, v) -> lines.add(String.format("  %-28s %10.4f %10.1f%%%s", k, v, 100 * v / fastest,
                k.equals(chosen) ? "  <- chosen" : "")));
        lines.add("  (" + rounds + " interleaved rounds per candidate, each round's maximum over ranks)");
        return lines;
    }
}

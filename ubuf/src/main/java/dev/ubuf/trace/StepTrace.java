package dev.ubuf.trace;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A traced step of every rank: a title, what the trace's reader needs to know (sizes, configuration, how the ranks'
 * clocks were aligned) as metadata, and the ranks' traces ordered by rank.
 */
public record StepTrace(String title, Map<String, Object> metadata, List<RankTrace> ranks) {
    public StepTrace {
        metadata = Collections.unmodifiableMap(new LinkedHashMap<>(metadata));
        ranks = List.copyOf(ranks);
    }

    /** The end of the latest span over all ranks, in µs. */
    public double endUs() {
        return ranks.stream().mapToDouble(RankTrace::endUs).max().orElse(0);
    }
}

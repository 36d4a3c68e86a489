package dev.ubuf.ag;

import dev.ubuf.plan.Plan;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/** Builds AG plans: one rank's, or a whole domain's checked for agreement. */
public final class AgPlans {
    private AgPlans() {
    }

    public static Plan plan(AgOverlapMethod method, AgShape shape, int rank, AgOptions options) {
        return Objects.requireNonNull(method, "method").plan(shape, rank, options);
    }

    /** The plans of ranks 0..tp-1, validated together with {@link Plan#validateDomain}. */
    public static List<Plan> domain(AgOverlapMethod method, AgShape shape, AgOptions options) {
        Objects.requireNonNull(method, "method");
        List<Plan> plans = new ArrayList<>();
        for (int r = 0; r < shape.tp(); r++) {
            plans.add(method.plan(shape, r, options));
        }
        Plan.validateDomain(plans);
        return List.copyOf(plans);
    }
}

package dev.ubuf.rs;

import dev.ubuf.exec.ExecutionSettings;
import dev.ubuf.op.Schedule;
import dev.ubuf.plan.Plan;

import java.util.Map;
import java.util.Objects;

/**
 * An RS method compiled for one shape: its typed options ({@code rsOptions}) and the string options they came from
 * ({@code options}, empty for the typed form). Making one checks the method can run the shape
 * ({@link RsOverlapMethod#whyUnsupported}); {@link #plan(int)} is then pure arithmetic.
 */
public record RsSchedule(RsOverlapMethod method, RsShape shape, RsOptions rsOptions, Map<String, String> options)
        implements Schedule {

    public RsSchedule {
        Objects.requireNonNull(method, "method");
        Objects.requireNonNull(shape, "shape");
        Objects.requireNonNull(rsOptions, "rsOptions");
        options = Map.copyOf(options);
        method.whyUnsupported(shape, rsOptions).ifPresent(why -> {
            throw new IllegalArgumentException(why + " (" + shape + ")");
        });
    }

    @Override
    public Plan plan(int rank) {
        return method.plan(shape, rsOptions, rank);
    }

    @Override
    public ExecutionSettings settings(ExecutionSettings base, int smCount) {
        return method.settings(this, base, smCount);
    }
}

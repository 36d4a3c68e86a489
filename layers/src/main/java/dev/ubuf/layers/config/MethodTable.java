package dev.ubuf.layers.config;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * What runs for each GEMM of a resolved {@link UbConfig}: the overlap method and its options, or
 * {@link UbMethod#NONE} with the reason (a flag is off, no sequence parallelism, tp = 1, no communication).
 */
public record MethodTable(UbConfig config, List<Entry> entries) {

    public MethodTable {
        Objects.requireNonNull(config, "config");
        entries = List.copyOf(entries);
    }

    /**
     * One GEMM's line.
     *
     * @param method        what runs; {@link UbMethod#NONE} when not overlapped
     * @param options       the settings the method runs with; empty when not overlapped
     * @param communication the collective the GEMM carries under sequence parallelism
     * @param reason        why this method (the flag that enables it) or why none
     */
    public record Entry(GemmName gemm, UbMethod method, Optional<GemmOverlapConfig> options,
                        String communication, String reason) {
        public Entry {
            Objects.requireNonNull(gemm, "gemm");
            Objects.requireNonNull(method, "method");
            Objects.requireNonNull(options, "options");
            Objects.requireNonNull(communication, "communication");
            Objects.requireNonNull(reason, "reason");
            if ((method == UbMethod.NONE) != options.isEmpty()) {
                throw new IllegalArgumentException(gemm + ": options exist exactly when the GEMM is overlapped");
            }
        }

        static Entry unoverlapped(GemmName gemm, String communication, String reason) {
            return new Entry(gemm, UbMethod.NONE, Optional.empty(), communication, reason);
        }

        public boolean overlapped() {
            return method != UbMethod.NONE;
        }
    }

    /** The line of {@code gemm}; absent when {@code ub_name} restricts the table to another layer. */
    public Optional<Entry> entry(GemmName gemm) {
        return entries.stream().filter(e -> e.gemm() == gemm).findFirst();
    }

    /** The GEMMs that run overlapped. */
    public List<GemmName> overlapped() {
        return entries.stream().filter(Entry::overlapped).map(Entry::gemm).toList();
    }

    /** A fixed-width text table: gemm, communication, method, options (or the reason when not overlapped). */
    public String describe() {
        StringBuilder s = new StringBuilder();
        s.append("tensor_model_parallel_size=").append(config.tensorModelParallelSize())
                .append(" sequence_parallel=").append(config.sequenceParallel());
        for (UbFlag f : UbFlag.values()) {
            s.append(' ').append(f).append('=').append(config.flag(f));
        }
        config.ubName().ifPresent(n -> s.append(" ub_name=").append(n.teName()));
        config.fp8().ifPresent(r -> s.append(" fp8=true ").append(Fp8Key.describe(r)));
        s.append('\n');
        int commWidth = "communication".length();
        for (Entry e : entries) {
            commWidth = Math.max(commWidth, e.communication().length());
        }
        String format = "%-11s %-" + commWidth + "s %-14s %s%n";
        s.append(String.format(format, "gemm", "communication", "method", "options / reason"));
        for (Entry e : entries) {
            String last = e.options().map(o -> o.options() + "  (" + e.reason() + ")").orElse(e.reason());
            s.append(String.format(format, e.gemm(), e.communication(), e.method(), last));
        }
        return s.toString();
    }
}

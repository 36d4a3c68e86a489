package dev.ubuf.layers.config;

import java.util.EnumMap;
import java.util.Objects;
import java.util.Optional;

/**
 * The configured keys of one GEMM's entry while a {@link UbConfig.Builder} collects them; absent keys get TE's
 * defaults in {@link UbConfig.Builder#build()}. A key set again replaces the earlier value (and its origin).
 * Values are checked on their own here (ranges, keys ubuf cannot honour yet); checks that need other settings
 * (the method against the GEMM's role and the flags, aggregate against tp, fp8_buf against fp8 and the role) run in
 * {@code build()}.
 */
public final class GemmSettings {
    private final GemmName gemm;
    private final EnumMap<GemmKey, Sourced> values = new EnumMap<>(GemmKey.class);
    private ConfigOrigin declaredAt;

    GemmSettings(GemmName gemm, ConfigOrigin declaredAt) {
        this.gemm = Objects.requireNonNull(gemm, "gemm");
        this.declaredAt = Objects.requireNonNull(declaredAt, "declaredAt");
    }

    public GemmName gemm() {
        return gemm;
    }

    public GemmSettings method(UbMethod method) {
        return set(GemmKey.METHOD, Objects.requireNonNull(method, "method"), ConfigOrigin.BUILDER);
    }

    public GemmSettings isReduceScatter(boolean value) {
        return set(GemmKey.IS_REDUCE_SCATTER, value, ConfigOrigin.BUILDER);
    }

    public GemmSettings numSm(int value) {
        return set(GemmKey.NUM_SM, value, ConfigOrigin.BUILDER);
    }

    public GemmSettings cgaSize(int value) {
        return set(GemmKey.CGA_SIZE, value, ConfigOrigin.BUILDER);
    }

    public GemmSettings numSplits(int value) {
        return set(GemmKey.NUM_SPLITS, value, ConfigOrigin.BUILDER);
    }

    public GemmSettings setSmMargin(boolean value) {
        return set(GemmKey.SET_SM_MARGIN, value, ConfigOrigin.BUILDER);
    }

    public GemmSettings aggregate(boolean value) {
        return set(GemmKey.AGGREGATE, value, ConfigOrigin.BUILDER);
    }

    public GemmSettings useCe(boolean value) {
        return set(GemmKey.USE_CE, value, ConfigOrigin.BUILDER);
    }

    public GemmSettings atomicGemm(boolean value) {
        return set(GemmKey.ATOMIC_GEMM, value, ConfigOrigin.BUILDER);
    }

    public GemmSettings fp8Buf(boolean value) {
        return set(GemmKey.FP8_BUF, value, ConfigOrigin.BUILDER);
    }

    public GemmSettings commPriority(int value) {
        return set(GemmKey.COMM_PRIORITY, value, ConfigOrigin.BUILDER);
    }

    public GemmSettings gemmPriority(int value) {
        return set(GemmKey.GEMM_PRIORITY, value, ConfigOrigin.BUILDER);
    }

    public GemmSettings pipelineRsOverlapFirstGemm(boolean value) {
        return set(GemmKey.PIPELINE_RS_OVERLAP_FIRST_GEMM, value, ConfigOrigin.BUILDER);
    }

    /**
     * Sets {@code key} to {@code value}: an {@link UbMethod} for {@code method}, a Boolean or an Integer as
     * {@link GemmKey#kind()} says.
     *
     * @throws UbConfigException when the value is out of range or one ubuf cannot honour yet
     */
    GemmSettings set(GemmKey key, Object value, ConfigOrigin origin) {
        String path = path(key);
        Class<?> expected = switch (key.kind()) {
            case METHOD -> UbMethod.class;
            case BOOLEAN -> Boolean.class;
            case INTEGER -> Integer.class;
        };
        if (!expected.isInstance(value)) {
            throw new UbConfigException(path, origin, "expected a " + expected.getSimpleName() + ", got " + value);
        }
        String problem = switch (key) {
            case METHOD -> value == UbMethod.NONE
                    ? "none is not a method a configuration can name: to run " + gemm + " unoverlapped, turn off"
                    + " the flag that overlaps it" : null;
            case NUM_SM -> GemmOverlapConfig.numSmProblem((Integer) value);
            case CGA_SIZE -> GemmOverlapConfig.cgaSizeProblem((Integer) value);
            case NUM_SPLITS -> GemmOverlapConfig.numSplitsProblem((Integer) value);
            case PIPELINE_RS_OVERLAP_FIRST_GEMM ->
                    (Boolean) value ? GemmOverlapConfig.notSupportedYet(key) : null;
            default -> null;
        };
        if (problem != null) {
            // Range problems name the key already ("num_sm must be >= 0"); keep the message about the value.
            throw new UbConfigException(path, origin, problem);
        }
        values.put(key, new Sourced(value, origin));
        return this;
    }

    void clear(GemmKey key) {
        values.remove(key);
    }

    Optional<Sourced> get(GemmKey key) {
        return Optional.ofNullable(values.get(key));
    }

    boolean has(GemmKey key) {
        return values.containsKey(key);
    }

    /** Where the entry was (last) declared: its key in a file, or the builder call. */
    ConfigOrigin declaredAt() {
        return declaredAt;
    }

    void declaredAt(ConfigOrigin origin) {
        this.declaredAt = Objects.requireNonNull(origin, "origin");
    }

    String path(GemmKey key) {
        return gemm.teName() + "." + key.teName();
    }

    /** The origin of {@code key}'s value, else of the entry. */
    ConfigOrigin origin(GemmKey key) {
        Sourced s = values.get(key);
        return s != null ? s.origin() : declaredAt;
    }
}

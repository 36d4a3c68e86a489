package dev.ubuf.layers.config;

import java.util.Objects;

/**
 * A configuration that ubuf rejects: an unknown key, a value of the wrong type or range, a key ubuf knows but
 * cannot honour yet, or settings that contradict each other. The message reads
 * {@code <origin>: <key>: <reason>}, e.g. {@code tp_overlap.yaml:14:11: qkv_fprop.method: ...}.
 */
public final class UbConfigException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    private final String key;
    private final transient ConfigOrigin origin;
    private final String reason;

    public UbConfigException(String key, ConfigOrigin origin, String reason) {
        super(origin + ": " + (key.isEmpty() ? "" : key + ": ") + reason);
        this.key = Objects.requireNonNull(key, "key");
        this.origin = Objects.requireNonNull(origin, "origin");
        this.reason = Objects.requireNonNull(reason, "reason");
    }

    /** The dotted key the problem is about ({@code qkv_fprop.method}, {@code tensor_model_parallel_size}), or "". */
    public String key() {
        return key;
    }

    /** Where the offending value was set (a file position when it came from a file). */
    public ConfigOrigin origin() {
        return origin;
    }

    /** The message without origin and key. */
    public String reason() {
        return reason;
    }
}

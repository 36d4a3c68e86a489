package dev.ubuf.layers.config;

import java.util.Objects;

/**
 * Where a configuration value came from: a file position (1-based line and column), or a source without
 * positions (the typed builder, a {@code Map}). Error messages start with it.
 */
public record ConfigOrigin(String source, int line, int column) {
    /** Values set through {@link UbConfig.Builder}'s typed methods. */
    public static final ConfigOrigin BUILDER = new ConfigOrigin("builder", 0, 0);
    /** TE's default, for a value nobody set. */
    public static final ConfigOrigin DEFAULT = new ConfigOrigin("default", 0, 0);

    public ConfigOrigin {
        Objects.requireNonNull(source, "source");
        if (line < 0 || column < 0) {
            throw new IllegalArgumentException("line and column are 1-based (0 when there is none), got "
                    + line + ":" + column);
        }
    }

    /** A position in a file (or any named text): line and column are 1-based. */
    public static ConfigOrigin file(String name, int line, int column) {
        if (line < 1 || column < 1) {
            throw new IllegalArgumentException("a file position is 1-based, got " + line + ":" + column);
        }
        return new ConfigOrigin(name, line, column);
    }

    /** A source without positions, e.g. "map" for {@link UbConfig.Builder#apply(java.util.Map)}. */
    public static ConfigOrigin named(String name) {
        return new ConfigOrigin(name, 0, 0);
    }

    public boolean hasPosition() {
        return line > 0;
    }

    /** {@code file:line:column}, or the source's name. */
    @Override
    public String toString() {
        return hasPosition() ? source + ":" + line + ":" + column : source;
    }
}

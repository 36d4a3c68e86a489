package dev.ubuf.layers.config;

import java.util.Objects;

/** A configured value and where it was set. */
record Sourced(Object value, ConfigOrigin origin) {
    Sourced {
        Objects.requireNonNull(value, "value");
        Objects.requireNonNull(origin, "origin");
    }

    boolean bool() {
        return (Boolean) value;
    }

    int integer() {
        return (Integer) value;
    }
}

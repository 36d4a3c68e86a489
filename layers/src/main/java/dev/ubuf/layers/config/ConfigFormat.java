package dev.ubuf.layers.config;

import java.nio.file.Path;
import java.util.Locale;

/** The file formats a configuration is read from. */
public enum ConfigFormat {
    YAML, JSON;

    /** By extension: {@code .yaml}/{@code .yml} or {@code .json}. */
    public static ConfigFormat forFile(Path file) {
        String name = file.getFileName() == null ? "" : file.getFileName().toString().toLowerCase(Locale.ROOT);
        if (name.endsWith(".yaml") || name.endsWith(".yml")) {
            return YAML;
        }
        if (name.endsWith(".json")) {
            return JSON;
        }
        throw new UbConfigException("", ConfigOrigin.named(file.toString()),
                "cannot tell the format of the file from its name: expected .yaml, .yml or .json");
    }
}

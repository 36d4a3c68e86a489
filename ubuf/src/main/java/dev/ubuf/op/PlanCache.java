package dev.ubuf.op;

import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Optional;
import java.util.Properties;

/**
 * The planner's choices, per (device, libraries, shape, settings) key, remembered in memory and, when a file is given,
 * on disk (a properties file, rewritten atomically), so a shape is tuned once per machine, not once per process.
 */
public final class PlanCache {
    private final Optional<Path> file;
    private final Properties choices = new Properties();

    public PlanCache(Optional<Path> file) {
        this.file = file;
        file.filter(Files::isRegularFile).ifPresent(f -> {
            try (Reader r = Files.newBufferedReader(f)) {
                choices.load(r);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read the plan cache " + f + " (set UB_PLAN_CACHE=off to run"
                        + " without it)", e);
            }
        });
    }

    public synchronized Optional<String> get(String key) {
        return Optional.ofNullable(choices.getProperty(key));
    }

    /** Remembers a choice; {@code persist}: also rewrite the file (one rank of a domain writes it). */
    public synchronized void put(String key, String label, boolean persist) {
        choices.setProperty(key, label);
        if (file.isEmpty() || !persist) {
            return;
        }
        Path f = file.get();
        try {
            if (f.getParent() != null) {
                Files.createDirectories(f.getParent());
            }
            Path tmp = Files.createTempFile(f.getParent() == null ? Path.of(".") : f.getParent(), "plans", ".tmp");
            try (Writer w = Files.newBufferedWriter(tmp)) {
                choices.store(w, "ubuf planner choices: key = method label (nccl = the NCCL reference)");
            }
            Files.move(tmp, f, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the plan cache " + f + " (set UB_PLAN_CACHE to a writable"
                    + " file, or off)", e);
        }
    }
}

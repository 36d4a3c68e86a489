package dev.ubuf.cuda;

import dev.ubuf.posix.NativeEnvironment;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A setting ubuf puts into this process's C environment before the CUDA driver starts, unless the user set the
 * variable: once per process, never throwing (a failure is logged, saying what the driver does without it).
 */
final class DriverDefault {
    private final String variable;
    private final String value;
    private final String withoutIt;
    private final AtomicBoolean applied = new AtomicBoolean();

    /** {@code withoutIt}: what happens when the value cannot be set, for the warning. */
    DriverDefault(String variable, String value, String withoutIt) {
        this.variable = variable;
        this.value = value;
        this.withoutIt = withoutIt;
    }

    /** Sets the variable unless it is set; only the first call does anything. */
    void applyOnce() {
        if (!applied.compareAndSet(false, true)) {
            return;
        }
        try {
            NativeEnvironment.setIfAbsent(variable, value);
        } catch (RuntimeException | LinkageError e) {
            System.getLogger(DriverDefault.class.getName()).log(System.Logger.Level.WARNING,
                    "could not set " + variable + "=" + value + " (" + e + "); " + withoutIt);
        }
    }
}

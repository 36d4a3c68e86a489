package dev.ubuf.posix;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import dev.ubuf.ffi.NativeLibrary;
import java.lang.foreign.FunctionDescriptor;
import java.lang.invoke.MethodHandle;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Makes the process end within a grace period once it starts to exit (SIGTERM, SIGINT, System.exit): a shutdown hook
 * starts a daemon thread that, after the grace, ends the process with libc's {@code _exit(143)}. Without it a JVM can
 * outlive its exit forever: a shutdown hook or the CUDA driver's own exit handlers wait for a GPU whose stream waits on
 * a peer that is gone, and SIGTERM then never ends the process (only SIGKILL did, 2026-11-26). {@code _exit} skips the
 * C exit handlers that hang; the GPU driver frees the process's resources when it ends, as after SIGKILL.
 */
public final class BoundedExit {
    /** The exit status when the grace ran out: a process ended by SIGTERM. */
    public static final int STATUS = 143;
    /** How long an exit may take: shutdown hooks and the native exit handlers, together. */
    public static final Duration DEFAULT_GRACE = Duration.ofSeconds(10);

    private static final AtomicBoolean INSTALLED = new AtomicBoolean();

    private BoundedExit() {
    }

    /** Installs the guard once per process (later calls do nothing), with {@link #DEFAULT_GRACE}. */
    public static void install() {
        install(DEFAULT_GRACE);
    }

    /** Installs the guard once per process with {@code grace}; later calls do nothing. */
    public static void install(Duration grace) {
        if (grace.isNegative() || grace.isZero()) {
            throw new IllegalArgumentException("the exit grace must be positive, got " + grace);
        }
        if (!INSTALLED.compareAndSet(false, true)) {
            return;
        }
        MethodHandle exit = NativeLibrary.standardLibraries().bind("_exit", FunctionDescriptor.ofVoid(JAVA_INT));
        Runtime.getRuntime().addShutdownHook(new Thread(() -> Thread.ofPlatform().daemon().name("ubuf-bounded-exit")
                .start(() -> {
                    try {
                        Thread.sleep(grace);
                    } catch (InterruptedException e) {
                        return;
                    }
                    // Straight to stderr, not System.Logger: this runs during shutdown, after the logging framework's
                    // own shutdown hook may have closed its handlers, and just before _exit.
                    System.err.println("ubuf: the process did not finish exiting within " + grace.toSeconds()
                            + " s (a shutdown hook or the GPU driver waits); ending it with status " + STATUS);
                    System.err.flush();
                    try {
                        exit.invokeExact(STATUS);
                    } catch (Throwable t) {
                        Runtime.getRuntime().halt(STATUS);
                    }
                }), "ubuf-bounded-exit-hook"));
    }
}

package dev.ubuf.resource;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * What one owner holds, closed once: resources are registered by name as they are made and closed in reverse order
 * of registration. Every one is closed even when some fail; the first failure is thrown with the later ones
 * suppressed. A second {@link #close()} does nothing, and nothing can be registered after the first.
 *
 * <pre>{@code
 * private final Closer closer = new Closer("timer of rank 0");
 * ...
 * stream = closer.register("stream", ctx.createStream());      // in a constructor
 * ...
 * public void close() { closer.close(); }
 * }</pre>
 *
 * <p>A constructor that fails halfway gives back what it made with {@link #closeAfter(Throwable)}. Failures of
 * checked exceptions are thrown wrapped in an {@link IllegalStateException} naming the resource; unchecked ones and
 * errors are thrown as they are. Thread-safe; resources are closed outside the lock.
 */
public final class Closer implements AutoCloseable {
    /** How a resource is released: {@link AutoCloseable#close()}, or any other action of the owner's. */
    @FunctionalInterface
    public interface Action {
        void close() throws Exception;
    }

    private record Entry(String name, Action action) {
    }

    private final String owner;
    private final List<Entry> entries = new ArrayList<>();
    private volatile boolean closed;

    /** {@code owner} names the holder in error messages ("the step tracer of rank 0"). */
    public Closer(String owner) {
        this.owner = Objects.requireNonNull(owner, "owner");
    }

    /** Takes ownership of {@code resource} (null is allowed and skipped) and returns it. */
    public <T extends AutoCloseable> T register(String name, T resource) {
        if (resource != null) {
            add(name, resource::close);
        }
        return resource;
    }

    /** Runs {@code action} at close, in its place in the reverse order. */
    public void onClose(String name, Action action) {
        add(name, Objects.requireNonNull(action, "action"));
    }

    private synchronized void add(String name, Action action) {
        Objects.requireNonNull(name, "name");
        if (closed) {
            throw new IllegalStateException(owner + " is closed: cannot take " + name);
        }
        entries.add(new Entry(name, action));
    }

    public boolean isClosed() {
        return closed;
    }

    /** Throws {@link IllegalStateException} ("OWNER is closed") once {@link #close()} was called. */
    public void requireOpen() {
        if (closed) {
            throw new IllegalStateException(owner + " is closed");
        }
    }

    /** The names registered and not yet closed, in order of registration. */
    public synchronized List<String> names() {
        return entries.stream().map(Entry::name).toList();
    }

    /**
     * Closes everything registered, last first, once.
     *
     * @throws RuntimeException the first failure (a checked one wrapped), with the later ones suppressed
     */
    @Override
    public void close() {
        Throwable first = closeAll(null);
        if (first != null) {
            throw unchecked(first);
        }
    }

    /**
     * Closes everything registered, last first, adding each failure to {@code primary}'s suppressed exceptions, and
     * returns {@code primary} for the caller to throw: for a constructor that failed after making some resources.
     */
    public <T extends Throwable> T closeAfter(T primary) {
        Objects.requireNonNull(primary, "primary");
        closeAll(primary);
        return primary;
    }

    /** Closes every entry; returns the first failure when {@code into} is null, else adds them all to it. */
    private Throwable closeAll(Throwable into) {
        List<Entry> toClose;
        synchronized (this) {
            if (closed) {
                return null;
            }
            closed = true;
            toClose = List.copyOf(entries);
            entries.clear();
        }
        Throwable first = null;
        for (int i = toClose.size() - 1; i >= 0; i--) {
            Entry e = toClose.get(i);
            try {
                e.action().close();
            } catch (Throwable t) {
                Throwable failure = t instanceof Exception && !(t instanceof RuntimeException)
                        ? new IllegalStateException("closing " + e.name() + " of " + owner + " failed: " + t, t)
                        : t;
                if (into != null) {
                    into.addSuppressed(failure);
                } else if (first == null) {
                    first = failure;
                } else {
                    first.addSuppressed(failure);
                }
            }
        }
        return first;
    }

    private static RuntimeException unchecked(Throwable t) {
        if (t instanceof Error e) {
            throw e;
        }
        return (RuntimeException) t;
    }

    @Override
    public String toString() {
        return "Closer[" + owner + (closed ? ", closed" : ", " + names()) + "]";
    }
}

package dev.ubuf.testutil;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReferenceArray;

/** Runs one body per rank on its own thread and collects each rank's value or error. */
public final class RankThreads {
    public interface Body<T> {
        T run(int rank) throws Exception;
    }

    public record Outcome<T>(int rank, T value, Throwable error) {
        public T get() {
            if (error != null) {
                throw new AssertionError("rank " + rank + " failed: " + error, error);
            }
            return value;
        }

        public <E extends Throwable> E errorOf(Class<E> type) {
            if (!type.isInstance(error)) {
                throw new AssertionError("rank " + rank + ": expected " + type.getSimpleName() + " but got "
                        + (error == null ? "success (" + value + ")" : error), error);
            }
            return type.cast(error);
        }
    }

    private RankThreads() {
    }

    /** Runs {@code body} for ranks 0..n-1; waits at most 60 s (a hang guard, not a timing assertion). */
    public static <T> List<Outcome<T>> run(int n, Body<T> body) throws InterruptedException {
        return run(java.util.stream.IntStream.range(0, n).toArray(), body);
    }

    public static <T> List<Outcome<T>> run(int[] ranks, Body<T> body) throws InterruptedException {
        AtomicReferenceArray<Outcome<T>> outcomes = new AtomicReferenceArray<>(ranks.length);
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < ranks.length; i++) {
            int index = i;
            int rank = ranks[i];
            threads.add(Thread.ofPlatform().daemon().name("test-rank-" + rank).start(() -> {
                try {
                    outcomes.set(index, new Outcome<>(rank, body.run(rank), null));
                } catch (Throwable t) {
                    outcomes.set(index, new Outcome<>(rank, null, t));
                }
            }));
        }
        for (Thread thread : threads) {
            thread.join(60_000);
            if (thread.isAlive()) {
                throw new AssertionError(thread.getName() + " still running after 60 s (hang)");
            }
        }
        List<Outcome<T>> result = new ArrayList<>();
        for (int i = 0; i < ranks.length; i++) {
            result.add(outcomes.get(i));
        }
        return result;
    }
}

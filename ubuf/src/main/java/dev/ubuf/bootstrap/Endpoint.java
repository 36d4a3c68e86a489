package dev.ubuf.bootstrap;

import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * One rank's side of the rendezvous: sends frames to the hub, matches the hub's answers to waiting operations, and
 * remembers job-wide news (lost ranks, abort) so later operations fail at once. Shared by the rank's world bootstrap
 * and all its subgroups.
 *
 * <p>Lock order: the hub may call {@link #onFrame} while holding its own monitor; this class never calls the hub (or
 * the link) while holding its own monitor.
 */
final class Endpoint {
    /** An operation waiting for the hub's answer. */
    record Waiter(int[] members, CompletableFuture<byte[][]> result) {
    }

    private record Key(String group, long seq) {
    }

    /** Carries a {@link Failure} through a future; the caller turns it into the public exception. */
    static final class FailureSignal extends RuntimeException {
        final transient Failure failure;

        FailureSignal(Failure failure) {
            super(null, null, false, false);
            this.failure = failure;
        }
    }

    private final int worldRank;
    private final int hubRank;
    private final Consumer<Frame> link;
    private final Map<Key, Waiter> waiting = new HashMap<>();
    private final Map<Integer, Failure.Lost> lost = new LinkedHashMap<>();
    private Failure.Aborted aborted;
    private boolean closed;

    /**
     * @param hubRank world rank whose process runs the hub when it is remote (its loss fails every operation),
     *                or -1 when the hub is in this process
     * @param link    sends a frame to the hub; must not block for long
     */
    Endpoint(int worldRank, int hubRank, Consumer<Frame> link) {
        this.worldRank = worldRank;
        this.hubRank = hubRank;
        this.link = link;
    }

    int worldRank() {
        return worldRank;
    }

    /**
     * Registers the wait for operation {@code seq} of {@code group}, or fails at once if the job is aborted or a
     * needed rank is already gone.
     */
    synchronized Waiter register(String group, long seq, int[] members) {
        Failure failure = failureFor(members);
        if (failure != null) {
            throw new FailureSignal(failure);
        }
        Waiter waiter = new Waiter(members, new CompletableFuture<>());
        waiting.put(new Key(group, seq), waiter);
        return waiter;
    }

    synchronized void unregister(String group, long seq) {
        waiting.remove(new Key(group, seq));
    }

    /** Why an operation over {@code members} cannot succeed now, or null. */
    synchronized Failure failureFor(int[] members) {
        if (aborted != null) {
            return aborted;
        }
        if (hubRank >= 0 && lost.containsKey(hubRank)) {
            return lost.get(hubRank); // the hub relays every operation, whatever the group
        }
        for (int member : members) {
            Failure.Lost gone = lost.get(member);
            if (gone != null) {
                return gone;
            }
        }
        return null;
    }

    void send(Frame frame) {
        link.accept(frame);
    }

    /** A frame from the hub. */
    void onFrame(Frame frame) {
        switch (frame) {
            case Frame.Result r -> finish(r.group(), r.seq(), r.payloads(), null);
            case Frame.Failed f -> finish(f.group(), f.seq(), null, f.failure());
            case Frame.Notice n -> notice(n.failure());
            default -> throw new IllegalArgumentException("rank " + worldRank + " got an unexpected " + frame);
        }
    }

    private void finish(String group, long seq, byte[][] payloads, Failure failure) {
        Waiter waiter;
        synchronized (this) {
            waiter = waiting.remove(new Key(group, seq));
        }
        if (waiter == null) {
            return; // the caller gave up (its own deadline) or the failure arrived twice
        }
        if (failure == null) {
            waiter.result().complete(payloads);
        } else {
            waiter.result().completeExceptionally(new FailureSignal(failure));
        }
    }

    private void notice(Failure failure) {
        Map<Key, Waiter> failed = new HashMap<>();
        synchronized (this) {
            switch (failure) {
                case Failure.Lost l -> {
                    if (lost.putIfAbsent(l.lostRank(), l) != null) {
                        return;
                    }
                    boolean hubGone = l.lostRank() == hubRank;
                    for (Iterator<Map.Entry<Key, Waiter>> it = waiting.entrySet().iterator(); it.hasNext(); ) {
                        Map.Entry<Key, Waiter> entry = it.next();
                        if (hubGone || contains(entry.getValue().members(), l.lostRank())) {
                            failed.put(entry.getKey(), entry.getValue());
                            it.remove();
                        }
                    }
                }
                case Failure.Aborted a -> {
                    if (aborted != null) {
                        return;
                    }
                    aborted = a;
                    failed.putAll(waiting);
                    waiting.clear();
                }
                default -> throw new IllegalArgumentException("not a notice: " + failure);
            }
        }
        for (Waiter waiter : failed.values()) {
            waiter.result().completeExceptionally(new FailureSignal(failure));
        }
    }

    /** The connection to the hub ended (remote hub only). */
    void hubLost(String detail) {
        notice(new Failure.Lost(hubRank, false, detail));
    }

    /** This rank aborts: fail our own waiters now, then tell the hub (which tells everyone). */
    void abort(String reason) {
        Failure.Aborted abort = new Failure.Aborted(worldRank, reason);
        boolean first;
        synchronized (this) {
            first = aborted == null;
        }
        notice(abort);
        if (first) {
            try {
                send(new Frame.Abort(reason));
            } catch (RuntimeException e) {
                // the hub is unreachable; our own operations already fail with the abort
            }
        }
    }

    synchronized boolean isClosed() {
        return closed;
    }

    /**
     * Marks the endpoint closed and fails this rank's own pending operations (another thread may be waiting in one);
     * returns false if it already was closed.
     */
    boolean markClosed() {
        Map<Key, Waiter> pending;
        synchronized (this) {
            if (closed) {
                return false;
            }
            closed = true;
            pending = new HashMap<>(waiting);
            waiting.clear();
        }
        Failure closedHere = new Failure.Invalid("rank " + worldRank + " closed its bootstrap while this operation "
                + "was pending");
        for (Waiter waiter : pending.values()) {
            waiter.result().completeExceptionally(new FailureSignal(closedHere));
        }
        return true;
    }

    private static boolean contains(int[] values, int value) {
        for (int v : values) {
            if (v == value) {
                return true;
            }
        }
        return false;
    }
}

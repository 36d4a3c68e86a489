package dev.ubuf.bootstrap;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The collectives of one group (the world or a subgroup) of one rank, on top of its {@link Endpoint}. Every operation
 * is a contribution to the hub under (group, next sequence number) followed by a wait for the hub's answer with a
 * deadline. Transport-independent: TCP and in-memory bootstraps both delegate here.
 */
final class GroupBootstrap implements Bootstrap {
    private final Endpoint endpoint;
    private final String key;
    private final String displayName;
    private final int[] members;
    private final int rank;
    private final Duration timeout;
    private final boolean world;
    private final Object opLock = new Object();
    private final Map<String, Integer> subgroupInstances = new HashMap<>();
    private final List<GroupBootstrap> children = new ArrayList<>();
    private long nextSeq;
    private BootstrapException brokenBy;
    private volatile boolean closed;

    GroupBootstrap(Endpoint endpoint, String key, String displayName, int[] members, int rank, Duration timeout,
                   boolean world) {
        this.endpoint = endpoint;
        this.key = key;
        this.displayName = displayName;
        this.members = members;
        this.rank = rank;
        this.timeout = timeout;
        this.world = world;
    }

    static GroupBootstrap world(Endpoint endpoint, int worldSize, Duration timeout) {
        int[] members = new int[worldSize];
        Arrays.setAll(members, i -> i);
        return new GroupBootstrap(endpoint, Frame.WORLD, "world", members, endpoint.worldRank(), timeout, true);
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int size() {
        return members.length;
    }

    @Override
    public Duration timeout() {
        return timeout;
    }

    int worldRank() {
        return endpoint.worldRank();
    }

    /** The connect rendezvous of a fresh world (operation #0), within what is left of the connect deadline. */
    void connect(Duration remaining) {
        exchange(OpKind.CONNECT, -1, new byte[0], remaining);
    }

    @Override
    public byte[][] allGather(byte[] mine) {
        Objects.requireNonNull(mine, "mine");
        return exchange(OpKind.ALL_GATHER, -1, mine.clone());
    }

    @Override
    public byte[] broadcast(byte[] dataOrNull, int root) {
        if (root < 0 || root >= members.length) {
            throw new IllegalArgumentException("broadcast root " + root + " outside group of " + members.length);
        }
        if (root == rank && dataOrNull == null) {
            throw new IllegalArgumentException("rank " + rank + " is the broadcast root and must pass data");
        }
        byte[] payload = root == rank ? dataOrNull.clone() : null;
        return exchange(OpKind.BROADCAST, root, payload)[0];
    }

    @Override
    public void barrier() {
        exchange(OpKind.BARRIER, -1, new byte[0]);
    }

    @Override
    public Bootstrap subgroup(int[] ranks) {
        Objects.requireNonNull(ranks, "ranks");
        if (ranks.length == 0) {
            throw new IllegalArgumentException("a subgroup needs at least one rank");
        }
        boolean[] seen = new boolean[members.length];
        int position = -1;
        for (int i = 0; i < ranks.length; i++) {
            int r = ranks[i];
            if (r < 0 || r >= members.length) {
                throw new IllegalArgumentException("subgroup rank " + r + " outside group of " + members.length);
            }
            if (seen[r]) {
                throw new IllegalArgumentException("subgroup lists rank " + r + " twice: " + Arrays.toString(ranks));
            }
            seen[r] = true;
            if (r == rank) {
                position = i;
            }
        }
        if (position < 0) {
            throw new IllegalArgumentException("rank " + rank + " is not in subgroup " + Arrays.toString(ranks)
                    + ": only members call subgroup()");
        }
        int[] childMembers = Arrays.stream(ranks).map(r -> members[r]).toArray();
        // Same sorted member set and same instance count on every member: the same key, whatever the order given;
        // the hub then compares the orders and reports a mismatch instead of two groups that wait forever.
        String setName = Arrays.toString(Arrays.stream(childMembers).sorted().toArray());
        GroupBootstrap child;
        synchronized (opLock) {
            ensureOpen();
            int instance = subgroupInstances.merge(setName, 1, Integer::sum) - 1;
            String childKey = key + "/" + setName + "#" + instance;
            String childName = "subgroup " + Arrays.toString(childMembers) + (instance > 0 ? " (#" + instance + ")" : "")
                    + (world ? "" : " of " + displayName);
            child = new GroupBootstrap(endpoint, childKey, childName, childMembers, position, timeout, false);
        }
        synchronized (children) {
            children.add(child);
        }
        child.exchange(OpKind.SUBGROUP, -1, new byte[0]);
        return child;
    }

    @Override
    public java.util.Optional<BootstrapException> knownFailure() {
        Failure f = endpoint.failureFor(members);
        return f == null ? java.util.Optional.empty()
                : java.util.Optional.of(f.toException(worldRank(), "health check of " + displayName));
    }

    @Override
    public void abort(String reason) {
        endpoint.abort(reason == null || reason.isBlank() ? "(no reason given)" : reason);
    }

    /**
     * Contributes {@code payload} (already this rank's private copy) and waits for the result. One operation at a
     * time per group; every failure makes the group unusable, since its members' sequence numbers may now differ.
     */
    private byte[][] exchange(OpKind kind, int root, byte[] payload) {
        return exchange(kind, root, payload, timeout);
    }

    private byte[][] exchange(OpKind kind, int root, byte[] payload, Duration deadline) {
        synchronized (opLock) {
            ensureOpen();
            long seq = nextSeq++;
            String operation = kind.label() + (kind == OpKind.BROADCAST ? " from root " + root : "") + " #" + seq
                    + " in " + displayName;
            Failure already = endpoint.failureFor(members);
            if (already != null) {
                throw broken(already.toException(worldRank(), operation));
            }
            if (brokenBy != null) {
                throw new BootstrapException(worldRank(), operation + " refused: this bootstrap is unusable after an "
                        + "earlier failure: " + brokenBy.getMessage(), brokenBy);
            }
            Endpoint.Waiter waiter;
            try {
                waiter = endpoint.register(key, seq, members);
            } catch (Endpoint.FailureSignal signal) {
                throw broken(signal.failure.toException(worldRank(), operation));
            }
            try {
                endpoint.send(new Frame.Contribute(key, members, seq, kind, root, deadline.toMillis(), payload));
            } catch (RuntimeException e) {
                endpoint.unregister(key, seq);
                throw broken(new BootstrapException(worldRank(), operation + " failed: could not send: " + e, e));
            }
            try {
                return waiter.result().get(localWaitNanos(deadline), TimeUnit.NANOSECONDS);
            } catch (ExecutionException e) {
                if (e.getCause() instanceof Endpoint.FailureSignal signal) {
                    throw broken(signal.failure.toException(worldRank(), operation));
                }
                throw broken(new BootstrapException(worldRank(), operation + " failed: " + e.getCause(), e.getCause()));
            } catch (TimeoutException e) {
                endpoint.unregister(key, seq);
                throw broken(new BootstrapTimeoutException(worldRank(), operation, List.of(), deadline,
                        "no verdict from the bootstrap root (rank 0), which tracks who has arrived: it may be hung"));
            } catch (InterruptedException e) {
                endpoint.unregister(key, seq);
                Thread.currentThread().interrupt();
                throw broken(new BootstrapException(worldRank(), operation + " interrupted"));
            }
        }
    }

    /**
     * The hub's deadline is authoritative (it knows who is missing); we wait a little longer so its verdict can
     * arrive, and only then give up on our own.
     */
    private static long localWaitNanos(Duration deadline) {
        long nanos = deadline.toNanos();
        long slack = Math.max(TimeUnit.MILLISECONDS.toNanos(250), Math.min(nanos / 10, TimeUnit.SECONDS.toNanos(5)));
        return nanos + slack;
    }

    private BootstrapException broken(BootstrapException e) {
        if (brokenBy == null) {
            brokenBy = e;
        }
        return e;
    }

    private void ensureOpen() {
        if (closed || endpoint.isClosed()) {
            throw new IllegalStateException("rank " + worldRank() + ": the bootstrap of " + displayName
                    + " is closed");
        }
    }

    @Override
    public void close() {
        closeGroup(true);
    }

    /**
     * Closes this group and its subgroups. {@code announce}: tell the hub (a subgroup's members then fail instead of
     * waiting); the world's closing is announced by its owner.
     */
    void closeGroup(boolean announce) {
        List<GroupBootstrap> toClose;
        synchronized (children) {
            if (closed) {
                return;
            }
            closed = true;
            toClose = new ArrayList<>(children);
        }
        for (GroupBootstrap child : toClose) {
            child.closeGroup(announce && !world); // a closing world leaves the job: the hub tells everyone
        }
        if (announce && !world && !endpoint.isClosed()) {
            try {
                endpoint.send(new Frame.Leave(key, members));
            } catch (RuntimeException e) {
                // the hub is gone; nobody waits on us through it
            }
        }
    }

    @Override
    public String toString() {
        return "Bootstrap[" + displayName + ", rank " + rank + " of " + members.length + ", world rank " + worldRank()
                + (closed ? ", closed]" : "]");
    }
}

package dev.ubuf.bootstrap;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;

/**
 * The rendezvous every operation goes through: it collects the contributions of each (group, sequence number), checks
 * that all ranks called the same thing, and sends each member the result — or the failure: a deadline that passed
 * (naming who had not arrived), a lost or departed member, an abort, a mismatch.
 *
 * <p>Transport-agnostic: TCP rank 0 feeds it from one reader thread per connection; the in-memory group calls it
 * from the ranks' threads. Replies go through {@link Outlet}, which must not block (TCP enqueues; in-memory completes
 * a future). All state is guarded by this object's monitor; the deadline timer is one daemon thread owned by the hub.
 */
final class Hub implements AutoCloseable {
    /** Delivers a frame to a world rank; never blocks, never calls back into the hub. */
    interface Outlet {
        void deliver(int worldRank, Frame frame);
    }

    private final int worldSize;
    private final Outlet outlet;
    private final ScheduledThreadPoolExecutor timer;
    private final Map<String, GroupState> groups = new HashMap<>();
    private final Map<Integer, Failure.Lost> lost = new LinkedHashMap<>();
    private Failure.Aborted aborted;
    private boolean closed;

    Hub(int worldSize, Outlet outlet, String timerThreadName) {
        this.worldSize = worldSize;
        this.outlet = outlet;
        this.timer = new ScheduledThreadPoolExecutor(1, runnable -> {
            Thread thread = new Thread(runnable, timerThreadName);
            thread.setDaemon(true);
            return thread;
        });
        this.timer.setRemoveOnCancelPolicy(true);
        this.timer.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
    }

    private static final class GroupState {
        final String key;
        final int[] members;
        final Map<Long, PendingOp> pending = new HashMap<>();
        final Set<Integer> departed = new LinkedHashSet<>();
        Failure failure;

        GroupState(String key, int[] members) {
            this.key = key;
            this.members = members;
        }

        int groupRank(int worldRank) {
            for (int i = 0; i < members.length; i++) {
                if (members[i] == worldRank) {
                    return i;
                }
            }
            return -1;
        }

        boolean contains(int worldRank) {
            return groupRank(worldRank) >= 0;
        }
    }

    private static final class PendingOp {
        final long seq;
        final OpKind kind;
        final int root;
        final int firstWorldRank;
        final byte[][] payloads;
        final boolean[] arrived;
        int arrivedCount;
        long deadlineNanos;
        long timeoutMillis;
        ScheduledFuture<?> timeout;

        PendingOp(long seq, OpKind kind, int root, int firstWorldRank, int size) {
            this.seq = seq;
            this.kind = kind;
            this.root = root;
            this.firstWorldRank = firstWorldRank;
            this.payloads = new byte[size][];
            this.arrived = new boolean[size];
        }
    }

    /** A frame a rank sent to the hub: a contribution, a leave or an abort. */
    synchronized void receive(int fromWorldRank, Frame frame) {
        if (closed) {
            return;
        }
        switch (frame) {
            case Frame.Contribute c -> contribute(fromWorldRank, c);
            case Frame.Leave l -> {
                if (Frame.WORLD.equals(l.group())) {
                    rankGone(fromWorldRank, true, "it closed its bootstrap");
                } else {
                    leaveGroup(fromWorldRank, l);
                }
            }
            case Frame.Abort a -> abort(fromWorldRank, a.reason());
            default -> throw new IllegalArgumentException("rank " + fromWorldRank + " sent the hub a " + frame);
        }
    }

    private void contribute(int from, Frame.Contribute c) {
        if (aborted != null) {
            reply(from, c, aborted);
            return;
        }
        GroupState group = groups.get(c.group());
        if (group == null) {
            String problem = membersProblem(c.members());
            if (problem != null) {
                reply(from, c, new Failure.Invalid(problem));
                return;
            }
            group = new GroupState(c.group(), c.members().clone());
            groups.put(c.group(), group);
        } else if (!Arrays.equals(group.members, c.members())) {
            Failure mismatch = new Failure.Mismatch("rank " + from + " names the members of " + c.group() + " "
                    + Arrays.toString(c.members()) + ", other ranks " + Arrays.toString(group.members));
            reply(from, c, mismatch);
            failGroup(group, mismatch);
            return;
        }
        int groupRank = group.groupRank(from);
        if (groupRank < 0) {
            reply(from, c, new Failure.Invalid("rank " + from + " is not a member of " + c.group() + " "
                    + Arrays.toString(group.members)));
            return;
        }
        if (group.failure != null) {
            reply(from, c, group.failure);
            return;
        }
        Failure gone = goneMember(group);
        if (gone != null) {
            reply(from, c, gone);
            return;
        }
        if (c.kind() == OpKind.BROADCAST && (c.root() < 0 || c.root() >= group.members.length)) {
            reply(from, c, new Failure.Invalid("broadcast root " + c.root() + " outside the group of "
                    + group.members.length));
            return;
        }
        PendingOp op = group.pending.get(c.seq());
        if (op == null) {
            op = new PendingOp(c.seq(), c.kind(), c.root(), from, group.members.length);
            group.pending.put(c.seq(), op);
        } else if (op.kind != c.kind() || op.root != c.root()) {
            Failure mismatch = new Failure.Mismatch("as operation #" + c.seq() + " of " + c.group() + ", rank "
                    + op.firstWorldRank + " called " + describe(op.kind, op.root) + " but rank " + from + " called "
                    + describe(c.kind(), c.root()));
            reply(from, c, mismatch);
            failGroup(group, mismatch);
            return;
        } else if (op.arrived[groupRank]) {
            reply(from, c, new Failure.Mismatch("rank " + from + " contributed twice to operation #" + c.seq()
                    + " of " + c.group()));
            return;
        }
        op.arrived[groupRank] = true;
        op.payloads[groupRank] = c.payload();
        op.arrivedCount++;
        scheduleDeadline(group, op, c.timeoutMillis());
        if (op.arrivedCount == group.members.length) {
            complete(group, op);
        }
    }

    private static String describe(OpKind kind, int root) {
        return kind == OpKind.BROADCAST ? kind.label() + " from root " + root : kind.label();
    }

    private String membersProblem(int[] members) {
        if (members.length == 0) {
            return "a group needs at least one member";
        }
        boolean[] seen = new boolean[worldSize];
        for (int m : members) {
            if (m < 0 || m >= worldSize) {
                return "group member " + m + " outside world of " + worldSize;
            }
            if (seen[m]) {
                return "group member " + m + " listed twice";
            }
            seen[m] = true;
        }
        return null;
    }

    /** The deadline is the earliest of the contributors' own (arrival + their timeout). */
    private void scheduleDeadline(GroupState group, PendingOp op, long timeoutMillis) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Math.max(1, timeoutMillis));
        if (op.timeout != null && deadline - op.deadlineNanos >= 0) {
            return;
        }
        if (op.timeout != null) {
            op.timeout.cancel(false);
        }
        op.deadlineNanos = deadline;
        op.timeoutMillis = timeoutMillis;
        if (timer.isShutdown()) {
            return;
        }
        op.timeout = timer.schedule(() -> expire(group, op), deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
    }

    private synchronized void expire(GroupState group, PendingOp op) {
        if (closed || group.pending.get(op.seq) != op) {
            return; // completed or failed meanwhile
        }
        int[] missing = IntStream.range(0, group.members.length).filter(i -> !op.arrived[i])
                .map(i -> group.members[i]).toArray();
        failGroup(group, new Failure.TimedOut(missing, op.timeoutMillis));
    }

    private void complete(GroupState group, PendingOp op) {
        group.pending.remove(op.seq);
        if (op.timeout != null) {
            op.timeout.cancel(false);
        }
        byte[][] result = switch (op.kind) {
            case ALL_GATHER -> op.payloads;
            case BROADCAST -> new byte[][]{op.payloads[op.root]};
            case CONNECT, SUBGROUP, BARRIER -> new byte[0][];
        };
        if (Wire.resultFrameBytes(group.key, result) > Wire.MAX_FRAME_BYTES) {
            Failure tooLarge = new Failure.Invalid("the result (" + Wire.resultFrameBytes(group.key, result)
                    + " bytes) exceeds the bootstrap message limit of " + Wire.MAX_FRAME_BYTES + " bytes");
            for (int member : group.members) {
                outlet.deliver(member, new Frame.Failed(group.key, op.seq, tooLarge));
            }
            group.failure = tooLarge;
            return;
        }
        Frame.Result frame = new Frame.Result(group.key, op.seq, result);
        for (int member : group.members) {
            outlet.deliver(member, frame);
        }
    }

    /** Fails every pending operation of the group (telling the members that arrived) and remembers why. */
    private void failGroup(GroupState group, Failure failure) {
        if (group.failure == null) {
            group.failure = failure;
        }
        failPending(group, failure);
    }

    private void failPending(GroupState group, Failure failure) {
        List<PendingOp> ops = new ArrayList<>(group.pending.values());
        group.pending.clear();
        for (PendingOp op : ops) {
            if (op.timeout != null) {
                op.timeout.cancel(false);
            }
            for (int i = 0; i < group.members.length; i++) {
                if (op.arrived[i] && !lost.containsKey(group.members[i])) {
                    outlet.deliver(group.members[i], new Frame.Failed(group.key, op.seq, failure));
                }
            }
        }
    }

    private Failure goneMember(GroupState group) {
        for (int member : group.members) {
            Failure.Lost gone = lost.get(member);
            if (gone != null) {
                return gone;
            }
        }
        for (int member : group.departed) {
            return new Failure.Lost(member, true, "it closed its bootstrap of " + group.key);
        }
        return null;
    }

    private void reply(int to, Frame.Contribute c, Failure failure) {
        outlet.deliver(to, new Frame.Failed(c.group(), c.seq(), failure));
    }

    /** A member closed its bootstrap of a subgroup: that group's pending and later operations fail. */
    private void leaveGroup(int worldRank, Frame.Leave leave) {
        GroupState group = groups.get(leave.group());
        if (group == null) {
            if (membersProblem(leave.members()) != null) {
                return;
            }
            group = new GroupState(leave.group(), leave.members().clone());
            groups.put(leave.group(), group);
        }
        if (!group.contains(worldRank) || !group.departed.add(worldRank)) {
            return;
        }
        failPending(group, new Failure.Lost(worldRank, true, "it closed its bootstrap of " + group.key));
        if (group.departed.size() == group.members.length) {
            groups.remove(group.key); // everyone left: nothing can arrive for it any more
        }
    }

    /**
     * World rank {@code worldRank} is gone: it closed its bootstrap, or its connection ended. Every other rank hears
     * at once; operations of groups holding it fail.
     */
    synchronized void rankGone(int worldRank, boolean closedByItself, String detail) {
        if (closed || lost.containsKey(worldRank)) {
            return;
        }
        Failure.Lost gone = new Failure.Lost(worldRank, closedByItself, detail);
        lost.put(worldRank, gone);
        for (GroupState group : groups.values()) {
            if (group.contains(worldRank)) {
                failPending(group, gone);
            }
        }
        broadcastNotice(gone, worldRank);
    }

    /** The job is broken: everything pending and later fails with the reason, on every rank. */
    synchronized void abort(int originRank, String reason) {
        if (closed || aborted != null) {
            return;
        }
        aborted = new Failure.Aborted(originRank, reason);
        for (GroupState group : groups.values()) {
            failPending(group, aborted);
        }
        broadcastNotice(aborted, -1);
    }

    private void broadcastNotice(Failure failure, int except) {
        Frame.Notice notice = new Frame.Notice(failure);
        for (int rank = 0; rank < worldSize; rank++) {
            if (rank != except && !lost.containsKey(rank)) {
                outlet.deliver(rank, notice);
            }
        }
    }

    synchronized boolean isLost(int worldRank) {
        return lost.containsKey(worldRank);
    }

    /** Stops the deadline timer; later frames are ignored. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (GroupState group : groups.values()) {
            for (PendingOp op : group.pending.values()) {
                if (op.timeout != null) {
                    op.timeout.cancel(false);
                }
            }
        }
        timer.shutdownNow();
    }

    /** Joins the timer thread (bounded); call after {@link #close()} and outside the monitor. */
    void awaitStopped(long millis) {
        try {
            timer.awaitTermination(millis, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

}

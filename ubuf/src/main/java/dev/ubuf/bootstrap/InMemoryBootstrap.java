package dev.ubuf.bootstrap;

import java.time.Duration;
import java.util.Objects;

/**
 * A bootstrap for ranks that are threads of one JVM (one JVM driving several GPUs). Same semantics as
 * {@link TcpBootstrap}: deadlines naming the missing ranks, abort, mismatch detection, and a rank whose bootstrap is
 * closed while others wait for it is reported to them as {@link PeerLostException}.
 *
 * <pre>{@code
 * try (InMemoryBootstrap.Group group = InMemoryBootstrap.group(4, Duration.ofSeconds(30))) {
 *     // thread i:
 *     Bootstrap b = group.rank(i);
 *     byte[][] all = b.allGather(mine);
 * }
 * }</pre>
 */
public final class InMemoryBootstrap extends WorldBootstrap {
    private final Group group;
    private final Endpoint endpoint;
    private final GroupBootstrap world;

    private InMemoryBootstrap(Group group, int rank) {
        this.group = group;
        this.endpoint = new Endpoint(rank, -1, frame -> group.hub.receive(rank, frame));
        this.world = GroupBootstrap.world(endpoint, group.size(), group.timeout);
    }

    /** A group of {@code size} ranks whose every operation has deadline {@code timeout}. */
    public static Group group(int size, Duration timeout) {
        return new Group(size, timeout);
    }

    /** Convenience: the deadline from a {@link BootstrapConfig}. */
    public static Group group(int size, BootstrapConfig config) {
        return new Group(size, config.timeout());
    }

    /** The ranks of one in-memory job and the hub they meet at. Closing it closes every rank. */
    public static final class Group implements AutoCloseable {
        private final Duration timeout;
        private final Hub hub;
        private final InMemoryBootstrap[] ranks;
        private int open;

        private Group(int size, Duration timeout) {
            if (size < 1) {
                throw new IllegalArgumentException("an in-memory bootstrap group needs at least 1 rank, got " + size);
            }
            this.timeout = new BootstrapConfig(Objects.requireNonNull(timeout, "timeout")).timeout();
            this.hub = new Hub(size, this::deliver, "ubuf-bootstrap-timer-in-memory");
            this.ranks = new InMemoryBootstrap[size];
            for (int i = 0; i < size; i++) {
                ranks[i] = new InMemoryBootstrap(this, i);
            }
            this.open = size;
        }

        /** Each rank gets its own copies of result payloads, as it would over a socket. */
        private void deliver(int worldRank, Frame frame) {
            Frame own = frame instanceof Frame.Result r
                    ? new Frame.Result(r.group(), r.seq(), deepCopy(r.payloads()))
                    : frame;
            ranks[worldRank].endpoint.onFrame(own);
        }

        private static byte[][] deepCopy(byte[][] payloads) {
            byte[][] copy = new byte[payloads.length][];
            for (int i = 0; i < payloads.length; i++) {
                copy[i] = payloads[i] == null ? null : payloads[i].clone();
            }
            return copy;
        }

        public int size() {
            return ranks.length;
        }

        public Duration timeout() {
            return timeout;
        }

        /** The bootstrap of rank {@code rank} (the same object on every call); drive it from that rank's thread. */
        public InMemoryBootstrap rank(int rank) {
            if (rank < 0 || rank >= ranks.length) {
                throw new IllegalArgumentException("rank " + rank + " outside group of " + ranks.length);
            }
            return ranks[rank];
        }

        private void rankClosed() {
            boolean last;
            synchronized (this) {
                last = --open == 0;
            }
            if (last) {
                hub.close();
            }
        }

        /** Closes every rank still open and stops the deadline timer thread. */
        @Override
        public void close() {
            for (InMemoryBootstrap rank : ranks) {
                rank.close();
            }
            hub.close();
            hub.awaitStopped(1000);
        }
    }

    @Override
    GroupBootstrap world() {
        return world;
    }

    /** Leaves the group: ranks waiting for this one get {@link PeerLostException}. Idempotent. */
    @Override
    public void close() {
        world.closeGroup(false);
        if (endpoint.markClosed()) {
            group.hub.receive(world.rank(), new Frame.Leave(Frame.WORLD, new int[0]));
            group.rankClosed();
        }
    }

    @Override
    public String toString() {
        return "InMemoryBootstrap[rank " + rank() + " of " + size() + "]";
    }
}

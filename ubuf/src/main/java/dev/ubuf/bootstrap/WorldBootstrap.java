package dev.ubuf.bootstrap;

import java.time.Duration;
import java.util.Optional;

/**
 * A job's bootstrap whose collectives are its world group's: every operation but {@link #close()} (which differs by
 * transport) goes to {@link #world()}.
 */
abstract sealed class WorldBootstrap implements Bootstrap permits InMemoryBootstrap, TcpBootstrap {

    /** The group of all the job's ranks, on this rank's endpoint. */
    abstract GroupBootstrap world();

    @Override
    public int rank() {
        return world().rank();
    }

    @Override
    public int size() {
        return world().size();
    }

    @Override
    public Duration timeout() {
        return world().timeout();
    }

    @Override
    public byte[][] allGather(byte[] mine) {
        return world().allGather(mine);
    }

    @Override
    public byte[] broadcast(byte[] dataOrNull, int root) {
        return world().broadcast(dataOrNull, root);
    }

    @Override
    public void barrier() {
        world().barrier();
    }

    @Override
    public Bootstrap subgroup(int[] ranks) {
        return world().subgroup(ranks);
    }

    @Override
    public Optional<BootstrapException> knownFailure() {
        return world().knownFailure();
    }

    @Override
    public void abort(String reason) {
        world().abort(reason);
    }
}

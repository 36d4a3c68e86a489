package dev.ubuf.exec;

import dev.ubuf.cuda.CudaStream;

import java.util.List;

/**
 * How a plan's signals and waits are carried out on the GPU, chosen once when the executor is built. A signal is the
 * k-th of {@code perCall} signals a rank sends to (peer, flag) in a call; a wait needs {@code count} signals of the
 * current call on a flag that receives {@code perCall} per call. {@code absolute} is the host-computed sequence
 * number both correspond to (calls * perCall + k), for strategies that write it.
 */
interface Signalling extends AutoCloseable {
    /** Called on the caller's stream before a call's fork (the graph-safe strategy advances its device epoch). */
    void beginCall(CudaStream caller);

    void signal(CudaStream s, int peer, int flag, int perCall, int k, int absolute);

    void await(CudaStream s, int flag, int perCall, int count, int absolute);

    /** One signal of a run: the arguments of {@link #signal}. */
    record Send(int peer, int flag, int perCall, int k, int absolute) {
    }

    /** One wait of a run: the arguments of {@link #await}. */
    record Wait(int flag, int perCall, int count, int absolute) {
    }

    /**
     * Signals that one stream makes in a row, nothing between them: as one operation where the strategy can (a kernel
     * launch each costs more than the signal), else one by one.
     */
    default void signalRun(CudaStream s, List<Send> sends) {
        for (Send x : sends) {
            signal(s, x.peer(), x.flag(), x.perCall(), x.k(), x.absolute());
        }
    }

    /** Waits that one stream makes in a row: as one operation where the strategy can, else one by one. */
    default void awaitRun(CudaStream s, List<Wait> waits) {
        for (Wait w : waits) {
            await(s, w.flag(), w.perCall(), w.count(), w.absolute());
        }
    }

    /** Whether a call may be captured into a CUDA graph and replayed. */
    boolean graphSafe();

    /**
     * After the domain failed: make every wait of the calls issued so far pass, so this rank's streams drain and its
     * memory can be freed ({@code completedValues[f]} is the value flag f reaches once every issued call's signals
     * have arrived). Gives up after {@code deadline} (the GPU's queues may be stuck too).
     *
     * @return whether the waits were released within the deadline
     */
    boolean releaseWaits(int[] completedValues, java.time.Duration deadline);

    @Override
    void close();
}

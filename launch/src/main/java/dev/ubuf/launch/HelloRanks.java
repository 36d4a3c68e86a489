package dev.ubuf.launch;

/**
 * The smallest program to start with the launcher: each rank prints where it sits in the job, read from the
 * environment the launcher gives every rank. It needs no GPU, so it also shows the launcher works on a laptop:
 * {@code bin/ubuf-launch --nproc-per-node 2 dev.ubuf.launch.HelloRanks}.
 */
public final class HelloRanks {
    private HelloRanks() {
    }

    public static void main(String[] args) {
        System.out.println("hello from rank " + variable("RANK") + " of " + variable("WORLD_SIZE")
                + " (local rank " + variable("LOCAL_RANK") + " of " + variable("LOCAL_WORLD_SIZE") + " on this node),"
                + " rank 0 at " + variable("MASTER_ADDR") + ":" + variable("MASTER_PORT")
                + ", job token " + (System.getenv("UBUF_JOB_TOKEN") == null ? "unset" : "set")
                + ", UB_TIMEOUT " + variable("UB_TIMEOUT"));
    }

    private static String variable(String name) {
        String value = System.getenv(name);
        return value == null ? "unset" : value;
    }
}

package dev.ubuf.bootstrap;

import java.util.Map;

/**
 * A rank in a child process for the multi-process bootstrap tests; reads RANK etc. and UB_TIMEOUT from its
 * environment. Scenarios: {@code collectives SEED ROUNDS}, {@code wait-for-loss LOST_RANK}, {@code sleep}.
 */
public final class BootstrapChildMain {
    private BootstrapChildMain() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> env = System.getenv();
        try (TcpBootstrap bootstrap = TcpBootstrap.connect(LaunchEnvironment.fromEnvironment(env),
                BootstrapConfig.fromEnvironment(env))) {
            int rank = bootstrap.rank();
            switch (args[0]) {
                case "collectives" -> {
                    CollectiveScenario.run(bootstrap, Long.parseLong(args[1]), Integer.parseInt(args[2]));
                    System.out.println("OK rank " + rank);
                }
                case "wait-for-loss" -> {
                    int expected = Integer.parseInt(args[1]);
                    bootstrap.barrier();
                    try {
                        // READY is printed inside the try: from this line on, a loss is caught and reported.
                        System.out.println("READY rank " + rank);
                        while (true) {
                            bootstrap.allGather(new byte[]{(byte) rank});
                        }
                    } catch (PeerLostException e) {
                        System.out.println("LOST " + e.lostRank() + " seen by rank " + rank + ": " + e.getMessage());
                        System.exit(e.lostRank() == expected ? 0 : 3);
                    }
                }
                case "sleep" -> {
                    bootstrap.barrier();
                    System.out.println("READY rank " + rank);
                    Thread.sleep(60_000);
                    System.exit(4); // should have been killed long before
                }
                default -> throw new IllegalArgumentException("unknown scenario " + args[0]);
            }
        }
    }
}

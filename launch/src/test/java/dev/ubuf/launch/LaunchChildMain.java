package dev.ubuf.launch;

import dev.ubuf.bootstrap.TcpBootstrap;

import java.util.Arrays;

/**
 * A rank started by {@link Launcher} in {@link LauncherTest}. Modes: {@code bootstrap} (report the environment, join
 * the TCP bootstrap, allGather ranks, print many lines), {@code fail RANK CODE} (that rank exits with CODE, the others
 * wait to be stopped), {@code die RANK} (that rank kills itself with SIGKILL).
 */
public final class LaunchChildMain {
    private LaunchChildMain() {
    }

    public static void main(String[] args) throws Exception {
        int rank = Integer.parseInt(System.getenv("RANK"));
        switch (args[0]) {
            case "bootstrap" -> {
                String token = System.getenv("UBUF_JOB_TOKEN");
                System.out.println("env rank=" + rank + " world=" + System.getenv("WORLD_SIZE") + " local="
                        + System.getenv("LOCAL_RANK") + " lws=" + System.getenv("LOCAL_WORLD_SIZE")
                        + " master=" + System.getenv("MASTER_ADDR") + " port-set=" + (System.getenv("MASTER_PORT")
                        != null) + " token-hex-length=" + (token != null && token.matches("[0-9a-f]{32}")
                        ? 32 : -1) + " timeout=" + System.getenv("UB_TIMEOUT") + " args=" + Arrays.toString(args));
                try (TcpBootstrap bootstrap = TcpBootstrap.connectFromEnvironment()) {
                    byte[][] all = bootstrap.allGather(new byte[]{(byte) rank});
                    int[] ranks = Arrays.stream(all).mapToInt(b -> b[0]).toArray();
                    System.out.println("gathered " + Arrays.toString(ranks));
                    for (int i = 0; i < 300; i++) {
                        System.out.println("line " + i + " of rank " + rank);
                        System.err.println("err " + i + " of rank " + rank);
                    }
                    System.out.print("unterminated tail of rank " + rank);
                    System.out.flush();
                    bootstrap.barrier();
                }
            }
            case "fail" -> {
                int failing = Integer.parseInt(args[1]);
                if (rank == failing) {
                    Thread.sleep(200); // let the others get going
                    System.err.println("rank " + rank + " failing on purpose");
                    System.exit(Integer.parseInt(args[2]));
                }
                System.out.println("rank " + rank + " waiting to be stopped");
                Thread.sleep(60_000);
            }
            case "die" -> {
                if (rank == Integer.parseInt(args[1])) {
                    Thread.sleep(200);
                    new ProcessBuilder("kill", "-9", Long.toString(ProcessHandle.current().pid())).start().waitFor();
                }
                Thread.sleep(60_000);
            }
            default -> throw new IllegalArgumentException(args[0]);
        }
    }
}

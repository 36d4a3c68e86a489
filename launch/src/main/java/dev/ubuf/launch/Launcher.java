package dev.ubuf.launch;

import dev.ubuf.bootstrap.BootstrapConfig;
import dev.ubuf.bootstrap.LaunchEnvironment;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.File;
import java.math.BigDecimal;
import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * {@code ubuf-launch}: starts one JVM per rank on this node, torchrun-style, and supervises them.
 *
 * <p>Each child runs {@code MAIN_CLASS ARGS...} with this JVM's java binary and classpath (plus {@code --classpath}
 * entries first), {@code --enable-native-access=ALL-UNNAMED} and every {@code --jvm-arg}, and the launcher's
 * environment plus {@code RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, UBUF_JOB_TOKEN} (a
 * fresh random token per job) and {@code UB_TIMEOUT} ({@code --timeout}, else the launcher's own, checked before any
 * rank starts). Output lines are prefixed with {@code [rank i] }.
 *
 * <p>At most {@value #MAX_RANKS} ranks, and no more than the GPUs visible on this node where they can be counted
 * (one rank per GPU); on a machine whose GPUs cannot be counted (no NVIDIA driver) the limit alone applies.
 *
 * <p>If a rank exits with a non-zero code (or dies), the others are stopped (SIGTERM, then SIGKILL after the grace
 * period) and the launcher exits with that rank's code, naming it. Exit 0 when every rank succeeds.
 */
@Command(name = "ubuf-launch", mixinStandardHelpOptions = true, version = "ubuf-launch 0.1",
        description = "Starts N ranks of a Java main class on this node (one JVM per GPU) and supervises them.",
        footer = {"", "Every rank gets the launcher's environment plus RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE"
                + " (ranks on this node, = N), MASTER_ADDR, MASTER_PORT, UBUF_JOB_TOKEN (random per job) and"
                + " UB_TIMEOUT when set. Output lines are prefixed with [rank i]. If a rank fails, the others are"
                + " stopped and the launcher exits with its code.",
                "", "Example (no GPU needed): ubuf-launch --nproc-per-node 2 dev.ubuf.launch.HelloRanks"})
public final class Launcher implements Callable<Integer> {
    private static final int TOKEN_BYTES = 16; // 32 hex characters
    /** Ranks one node may start: one JVM per GPU, and no node has more GPUs, so more is a typo. */
    public static final int MAX_RANKS = 64;

    @Option(names = "--nproc-per-node", required = true, paramLabel = "N",
            description = "Number of ranks (processes) to start on this node: 1.." + MAX_RANKS
                    + ", and at most the GPUs visible here where they can be counted.")
    int nprocPerNode;

    @Option(names = "--master-addr", defaultValue = "127.0.0.1", paramLabel = "ADDR",
            description = "Address where rank 0 listens (default: ${DEFAULT-VALUE}, loopback).")
    String masterAddr;

    @Option(names = "--master-port", defaultValue = "0", paramLabel = "PORT",
            description = "Port where rank 0 listens; 0 picks a free one (default).")
    int masterPort;

    @Option(names = "--timeout", paramLabel = "SECONDS",
            description = "Deadline of every wait of the ranks, passed to them as UB_TIMEOUT (default: UB_TIMEOUT"
                    + " from the environment, checked here; unset, the ranks use 110 s).")
    Double timeoutSeconds;

    @Option(names = "--jvm-arg", paramLabel = "ARG",
            description = "An option for every child JVM (repeatable), e.g. --jvm-arg=-Xmx8g.")
    List<String> jvmArgs = new ArrayList<>();

    @Option(names = {"--classpath", "-cp"}, paramLabel = "PATH",
            description = "Your classes and jars (separated by ':'), put before the launcher's own class path,"
                    + " which brings ubuf.")
    String classpath;

    @Option(names = "--kill-grace", defaultValue = "5", paramLabel = "SECONDS",
            description = "After a rank fails: how long the others get to exit after SIGTERM before SIGKILL "
                    + "(default: ${DEFAULT-VALUE}).")
    double killGraceSeconds;

    @Parameters(index = "0", paramLabel = "MAIN_CLASS", description = "Main class every rank runs.")
    String mainClass;

    @Parameters(index = "1..*", paramLabel = "ARGS", description = "Arguments for the main class.")
    List<String> programArgs = new ArrayList<>();

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    private final PrintStream out;
    private final PrintStream err;
    private final LaunchHost host;

    public Launcher() {
        this(System.out, System.err, LaunchHost.current());
    }

    /**
     * A launcher on {@code host} that writes the ranks' prefixed output and its own messages to the given streams.
     */
    public Launcher(PrintStream out, PrintStream err, LaunchHost host) {
        this.out = out;
        this.err = err;
        this.host = host;
    }

    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    /**
     * Parses {@code args} and runs the job on this machine; returns the exit code (0 all ranks succeeded, the failed
     * rank's code or 1 on failure, 2 for a usage error).
     */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        return run(args, out, err, LaunchHost.current());
    }

    /** Like {@link #run(String[], PrintStream, PrintStream)} on a given host. */
    public static int run(String[] args, PrintStream out, PrintStream err, LaunchHost host) {
        CommandLine commandLine = new CommandLine(new Launcher(out, err, host));
        commandLine.setStopAtPositional(true); // everything after MAIN_CLASS belongs to the program
        commandLine.setOut(new PrintWriter(out, true, StandardCharsets.UTF_8));
        commandLine.setErr(new PrintWriter(err, true, StandardCharsets.UTF_8));
        return commandLine.execute(args);
    }

    @Override
    public Integer call() {
        validate();
        String rankTimeout = checkedTimeout();
        int port = masterPort == 0 ? pickFreePort(masterAddr) : masterPort;
        String token = HexFormat.of().formatHex(randomBytes());
        List<String> command = childCommand();
        err.println("ubuf-launch: starting " + nprocPerNode + " ranks of " + mainClass + ", rank 0 at " + masterAddr
                + ":" + port);
        return new Job(command, port, token, rankTimeout).run();
    }

    private void validate() {
        if (nprocPerNode < 1 || nprocPerNode > MAX_RANKS) {
            throw usage("--nproc-per-node must be 1.." + MAX_RANKS + " (one JVM per GPU), got " + nprocPerNode);
        }
        if (host.visibleGpus().isPresent() && nprocPerNode > host.visibleGpus().getAsInt()) {
            throw usage("--nproc-per-node " + nprocPerNode + " exceeds the " + host.visibleGpus().getAsInt()
                    + " GPU(s) visible on this node (" + VisibleGpus.DRIVER_GPUS + ", "
                    + VisibleGpus.CUDA_VISIBLE_DEVICES + "=" + host.environment()
                    .getOrDefault(VisibleGpus.CUDA_VISIBLE_DEVICES, "unset") + "): one rank per GPU");
        }
        if (masterPort < 0 || masterPort > 65535) {
            throw usage("--master-port must be in 0..65535, got " + masterPort);
        }
        if (!(killGraceSeconds >= 0) || Double.isInfinite(killGraceSeconds)) {
            throw usage("--kill-grace must be a finite number of seconds >= 0, got " + killGraceSeconds);
        }
    }

    /**
     * The UB_TIMEOUT the ranks get: --timeout, else the launcher's own, or null (the ranks' default). Checked by the
     * ranks' own rules here, so that a typo fails before any rank starts.
     */
    private String checkedTimeout() {
        String variable = BootstrapConfig.TIMEOUT_VARIABLE;
        if (timeoutSeconds != null) {
            try {
                BootstrapConfig.fromEnvironment(Map.of(variable, timeoutText()));
            } catch (IllegalArgumentException e) {
                throw usage("--timeout: " + e.getMessage());
            }
            return timeoutText();
        }
        String inherited = host.environment().get(variable);
        if (inherited == null || inherited.isBlank()) {
            return null;
        }
        try {
            BootstrapConfig.fromEnvironment(Map.of(variable, inherited));
        } catch (IllegalArgumentException e) {
            // the ranks' rule decides; the message says where the value came from and how to get past it
            throw usage(variable + "='" + inherited + "' in the environment is not a positive number of seconds"
                    + " (at most a year); fix or unset " + variable + ", or pass --timeout SECONDS");
        }
        return inherited.trim();
    }

    private CommandLine.ParameterException usage(String message) {
        return new CommandLine.ParameterException(spec.commandLine(), message);
    }

    /** "20" rather than "20.0": what a person would have written. */
    private String timeoutText() {
        return BigDecimal.valueOf(timeoutSeconds).stripTrailingZeros().toPlainString();
    }

    private static byte[] randomBytes() {
        byte[] bytes = new byte[TOKEN_BYTES];
        new SecureRandom().nextBytes(bytes);
        return bytes;
    }

    /** Binds port 0 on the master address and returns what the system chose (released again at once). */
    static int pickFreePort(String address) {
        try (ServerSocket socket = new ServerSocket()) {
            socket.setReuseAddress(true);
            socket.bind(new InetSocketAddress(InetAddress.getByName(address), 0));
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException("could not find a free port on " + address + ": " + e, e);
        }
    }

    private List<String> childCommand() {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("--enable-native-access=ALL-UNNAMED");
        command.addAll(jvmArgs);
        String own = System.getProperty("java.class.path", "");
        String childClasspath = classpath == null || classpath.isBlank() ? own
                : own.isEmpty() ? classpath : classpath + File.pathSeparator + own;
        if (!childClasspath.isEmpty()) {
            command.add("-cp");
            command.add(childClasspath);
        }
        command.add(mainClass);
        command.addAll(programArgs);
        return command;
    }

    /** One run of N ranks: start, pump output, supervise, stop on first failure. */
    private final class Job {
        private final List<String> command;
        private final int port;
        private final String token;
        private final String rankTimeout;
        private final Process[] processes;
        private final List<Thread> pumps = new ArrayList<>();
        private final LinkedBlockingQueue<Integer> exited = new LinkedBlockingQueue<>();

        Job(List<String> command, int port, String token, String rankTimeout) {
            this.command = command;
            this.port = port;
            this.token = token;
            this.rankTimeout = rankTimeout;
            this.processes = new Process[nprocPerNode];
        }

        int run() {
            Thread stopOnSignal = new Thread(this::killAll, "ubuf-launch-shutdown");
            Runtime.getRuntime().addShutdownHook(stopOnSignal);
            try {
                for (int rank = 0; rank < nprocPerNode; rank++) {
                    try {
                        processes[rank] = start(rank);
                    } catch (IOException e) {
                        err.println("ubuf-launch: could not start rank " + rank + ": " + e);
                        killAll();
                        awaitAll(Duration.ofSeconds(30));
                        return 1;
                    }
                }
                return supervise();
            } finally {
                joinPumps();
                try {
                    Runtime.getRuntime().removeShutdownHook(stopOnSignal);
                } catch (IllegalStateException e) {
                    // the JVM is shutting down: the hook runs anyway
                }
            }
        }

        private Process start(int rank) throws IOException {
            ProcessBuilder builder = new ProcessBuilder(command);
            Map<String, String> env = builder.environment();
            env.clear(); // exactly the environment that was checked
            env.putAll(host.environment());
            env.putAll(new LaunchEnvironment(rank, nprocPerNode, rank, masterAddr, port, token).toEnvironment());
            env.put(LaunchEnvironment.LOCAL_WORLD_SIZE, Integer.toString(nprocPerNode));
            if (rankTimeout != null) {
                env.put(BootstrapConfig.TIMEOUT_VARIABLE, rankTimeout);
            } else {
                env.remove(BootstrapConfig.TIMEOUT_VARIABLE);
            }
            Process process = builder.start();
            process.getOutputStream().close(); // ranks read no stdin
            String prefix = "[rank " + rank + "] ";
            pumps.add(Thread.ofPlatform().name("ubuf-launch-stdout-" + rank)
                    .start(new LinePrefixer(process.getInputStream(), out, prefix)));
            pumps.add(Thread.ofPlatform().name("ubuf-launch-stderr-" + rank)
                    .start(new LinePrefixer(process.getErrorStream(), err, prefix)));
            int r = rank;
            process.onExit().thenRun(() -> exited.add(r));
            return process;
        }

        /** Waits for every rank; on the first failure stops the others. Returns the launcher's exit code. */
        private int supervise() {
            int failedRank = -1;
            int failedCode = 0;
            int remaining = nprocPerNode;
            long forceAt = 0;
            boolean forced = false;
            while (remaining > 0) {
                Integer rank;
                try {
                    if (failedRank >= 0 && !forced) {
                        rank = exited.poll(Math.max(0, forceAt - System.nanoTime()), TimeUnit.NANOSECONDS);
                        if (rank == null) {
                            err.println("ubuf-launch: ranks still running " + Duration.ofNanos(
                                    (long) (killGraceSeconds * 1e9)).toMillis() + " ms after SIGTERM: killing them");
                            forceKill();
                            forced = true;
                            continue;
                        }
                    } else {
                        rank = exited.take();
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    killAll();
                    return 1;
                }
                remaining--;
                int code = processes[rank].exitValue();
                if (code != 0 && failedRank < 0) {
                    failedRank = rank;
                    failedCode = code;
                    err.println("ubuf-launch: rank " + rank + " exited with code " + code + describeSignal(code)
                            + "; stopping the other ranks");
                    terminateAlive();
                    forceAt = System.nanoTime() + (long) (killGraceSeconds * 1e9);
                }
            }
            if (failedRank >= 0) {
                err.println("ubuf-launch: job failed: rank " + failedRank + " exited with code " + failedCode
                        + describeSignal(failedCode));
                return failedCode > 0 && failedCode < 256 ? failedCode : 1;
            }
            return 0;
        }

        private static String describeSignal(int code) {
            return code > 128 && code < 160 ? " (killed by signal " + (code - 128) + "?)" : "";
        }

        private void terminateAlive() {
            for (Process process : processes) {
                if (process != null && process.isAlive()) {
                    process.descendants().forEach(ProcessHandle::destroy);
                    process.destroy();
                }
            }
        }

        private void forceKill() {
            for (Process process : processes) {
                if (process != null && process.isAlive()) {
                    process.descendants().forEach(ProcessHandle::destroyForcibly);
                    process.destroyForcibly();
                }
            }
        }

        /** On a signal to the launcher, or a failed start: SIGTERM, a short grace, then SIGKILL. */
        private void killAll() {
            terminateAlive();
            awaitAll(Duration.ofMillis(Math.max(100, (long) (killGraceSeconds * 1000))));
            forceKill();
        }

        private void awaitAll(Duration limit) {
            long deadline = System.nanoTime() + limit.toNanos();
            for (Process process : processes) {
                if (process == null) {
                    continue;
                }
                try {
                    process.waitFor(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }

        /** The output of exited ranks is complete once their pipes are drained (bounded: a grandchild may hold one). */
        private void joinPumps() {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            for (Thread pump : pumps) {
                try {
                    pump.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }
}

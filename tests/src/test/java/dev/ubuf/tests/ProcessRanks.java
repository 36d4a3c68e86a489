package dev.ubuf.tests;

import dev.ubuf.bootstrap.LaunchEnvironment;
import dev.ubuf.launch.LaunchHost;
import dev.ubuf.launch.Launcher;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Runs a {@link RankScenario} with one child JVM per rank ({@link ProcessRankMain}), on this test's class path, and
 * collects every rank's output. Two ways: through the launcher ({@link #launch}: the way users start jobs; it stops
 * every rank as soon as one fails), or unsupervised ({@link #runUnsupervised}: plain processes that nobody stops, for
 * the kill tests, where the survivor must notice the death by itself).
 *
 * <p>The guards are hang guards, not timing assertions: a job still running at its guard is killed, and the test
 * fails with the output so far.
 */
final class ProcessRanks {
    private static final String MASTER_ADDR = "127.0.0.1";

    private ProcessRanks() {
    }

    /** What a launcher job left: the launcher's exit code and the ranks' prefixed output (stdout and stderr). */
    record LaunchResult(int exitCode, String output) {
        /** The job exited 0 and each of its {@code ranks} ranks printed that it passed {@code scenario}. */
        void assertEveryRankPassed(RankScenario scenario, int ranks) {
            org.junit.jupiter.api.Assertions.assertEquals(0, exitCode, () -> "job " + scenario + " failed; output:\n"
                    + output);
            for (int rank = 0; rank < ranks; rank++) {
                int rk = rank;
                org.junit.jupiter.api.Assertions.assertTrue(printedPass(rank, scenario), () -> "no '"
                        + ProcessRankMain.passedLine(rk, scenario) + "' from rank " + rk + " in:\n" + output);
            }
        }

        /** Whether rank {@code rank} printed that it passed {@code scenario} (a whole job, or a batch's part). */
        boolean printedPass(int rank, RankScenario scenario) {
            return output.contains("[rank " + rank + "] " + ProcessRankMain.passedLine(rank, scenario) + "\n");
        }
    }

    /** Writes to both streams; {@code second} (a console) is flushed with {@code first}. */
    private static final class Tee extends java.io.OutputStream {
        private final java.io.OutputStream first;
        private final java.io.OutputStream second;

        Tee(java.io.OutputStream first, java.io.OutputStream second) {
            this.first = first;
            this.second = second;
        }

        @Override
        public synchronized void write(int b) throws IOException {
            first.write(b);
            second.write(b);
        }

        @Override
        public synchronized void write(byte[] b, int off, int len) throws IOException {
            first.write(b, off, len);
            second.write(b, off, len);
        }

        @Override
        public synchronized void flush() throws IOException {
            first.flush();
            second.flush();
        }
    }

    /**
     * A {@link ScenarioBatch} run through the launcher once, at the first question about any of its parts, so that
     * each part can be its own test. The ranks' output goes to the console as it comes (each part's passed lines). A launch that fails as a whole (the hang guard, the launcher itself) fails every
     * part's question with the same error.
     */
    static final class BatchJob {
        private final int ranks;
        private final Duration ubTimeout;
        private final ScenarioBatch batch;
        private final Duration guard;
        private final Map<String, String> env;
        private LaunchResult result;
        private AssertionError broken;

        BatchJob(int ranks, Duration ubTimeout, ScenarioBatch batch, Duration guard, Map<String, String> env) {
            this.ranks = ranks;
            this.ubTimeout = ubTimeout;
            this.batch = batch;
            this.guard = guard;
            this.env = Map.copyOf(env);
        }

        ScenarioBatch batch() {
            return batch;
        }

        synchronized LaunchResult result() throws InterruptedException {
            if (result == null && broken == null) {
                try {
                    result = launch(ranks, ubTimeout, batch, guard, env, System.out);
                } catch (AssertionError e) {
                    broken = e;
                }
            }
            if (broken != null) {
                throw new AssertionError("the batch could not run: " + broken.getMessage(), broken);
            }
            return result;
        }

        /** Every rank printed that it passed {@code part}; else the batch's exit code and output. */
        void assertPassed(RankScenario part) throws InterruptedException {
            if (!batch.parts().contains(part)) {
                throw new IllegalArgumentException(part + " is not a part of " + batch);
            }
            LaunchResult r = result();
            for (int rank = 0; rank < ranks; rank++) {
                int rk = rank;
                assertTrue(r.printedPass(rank, part), () -> "rank " + rk + " did not pass " + part
                        + (r.exitCode() == 0 ? "" : " (the batch failed with exit code " + r.exitCode()
                        + " at this part or an earlier one)") + "; output:\n" + r.output());
            }
        }
    }

    /**
     * What unsupervised ranks left: each rank's exit code, whether every rank exited by itself before the guard
     * (ranks still alive then are killed; -1 for one that would not die), and the ranks' prefixed output.
     */
    record UnsupervisedResult(int[] exitCodes, boolean allExitedBeforeGuard, String output) {
        @Override
        public String toString() {
            return "exit codes " + Arrays.toString(exitCodes) + (allExitedBeforeGuard ? "" : " (killed at the guard)")
                    + ", output:\n" + output;
        }
    }

    /**
     * {@code ubuf-launch --nproc-per-node ranks --timeout ubTimeout ProcessRankMain scenario...}, run in this JVM.
     * UB_TIMEOUT reaches the ranks through the launcher's {@code --timeout}; the rest of this JVM's environment is
     * inherited.
     */
    static LaunchResult launch(int ranks, Duration ubTimeout, RankScenario scenario, Duration guard)
            throws InterruptedException {
        return launch(ranks, ubTimeout, scenario, guard, Map.of());
    }

    /** As {@link #launch(int, Duration, RankScenario, Duration)}, the ranks' environment plus {@code env}. */
    static LaunchResult launch(int ranks, Duration ubTimeout, RankScenario scenario, Duration guard,
                               Map<String, String> env) throws InterruptedException {
        return launch(ranks, ubTimeout, scenario, guard, env, null);
    }

    /**
     * As {@link #launch(int, Duration, RankScenario, Duration, Map)}, the ranks' output also copied to {@code echo}
     * as it comes (null: kept only for the result): a long job then shows its progress, and the GPU runner's stall
     * watch, which stops a test JVM whose console is silent for 90 s, sees it alive.
     */
    static LaunchResult launch(int ranks, Duration ubTimeout, RankScenario scenario, Duration guard,
                               Map<String, String> env, java.io.OutputStream echo) throws InterruptedException {
        List<String> args = new ArrayList<>(List.of("--nproc-per-node", Integer.toString(ranks),
                "--timeout", Long.toString(ubTimeout.toSeconds()), "--classpath", testClasspath(),
                ProcessRankMain.class.getName()));
        args.addAll(scenario.toArgs());
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PrintStream sink = new PrintStream(echo == null ? bytes : new Tee(bytes, echo), true, StandardCharsets.UTF_8);
        // The tests count their GPUs themselves (CPU scenarios need none), so the launcher is not asked to.
        Map<String, String> hostEnv = new java.util.HashMap<>(System.getenv());
        hostEnv.putAll(env);
        LaunchHost host = new LaunchHost(hostEnv, OptionalInt.empty());
        FutureTask<Integer> job = new FutureTask<>(() -> Launcher.run(args.toArray(String[]::new), sink, sink, host));
        Thread thread = Thread.ofPlatform().name("launcher-" + scenario.toArgs().getFirst()).start(job);
        try {
            int code = job.get(guard.toNanos(), TimeUnit.NANOSECONDS);
            // the output goes into the assertions' messages: shown when a test fails, not for every passing job
            return new LaunchResult(code, bytes.toString(StandardCharsets.UTF_8));
        } catch (TimeoutException e) {
            thread.interrupt(); // the launcher stops its ranks when interrupted
            thread.join(TimeUnit.SECONDS.toMillis(30));
            throw new AssertionError("job " + scenario + " was still running after the hang guard of " + guard
                    + "; output:\n" + bytes.toString(StandardCharsets.UTF_8));
        } catch (ExecutionException e) {
            throw new AssertionError("the launcher itself failed; output:\n" + bytes.toString(StandardCharsets.UTF_8),
                    e.getCause());
        }
    }

    /**
     * Starts {@code ranks} child JVMs with the launch environment (fresh port and job token) plus {@code env}, and
     * waits until all have exited or {@code guard} passed. Nobody stops a rank when another fails.
     */
    static UnsupervisedResult runUnsupervised(int ranks, Map<String, String> env, RankScenario scenario,
                                              Duration guard) throws InterruptedException {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                .toString(), "--enable-native-access=ALL-UNNAMED", "-cp", testClasspath(),
                ProcessRankMain.class.getName()));
        command.addAll(scenario.toArgs());
        int port = freePort();
        byte[] tokenBytes = new byte[16];
        new SecureRandom().nextBytes(tokenBytes);
        String token = HexFormat.of().formatHex(tokenBytes);
        StringBuffer output = new StringBuffer();
        Process[] processes = new Process[ranks];
        List<Thread> pumps = new ArrayList<>();
        long deadline = System.nanoTime() + guard.toNanos();
        boolean allExited = true;
        try {
            for (int rank = 0; rank < ranks; rank++) {
                ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
                builder.environment().putAll(new LaunchEnvironment(rank, ranks, rank, MASTER_ADDR, port, token)
                        .toEnvironment());
                builder.environment().put(LaunchEnvironment.LOCAL_WORLD_SIZE, Integer.toString(ranks));
                builder.environment().putAll(env);
                try {
                    processes[rank] = builder.start();
                } catch (IOException e) {
                    throw new UncheckedIOException("could not start rank " + rank, e);
                }
                processes[rank].getOutputStream().close();
                pumps.add(pump(processes[rank], "[rank " + rank + "] ", output));
            }
            for (Process p : processes) {
                allExited &= p.waitFor(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            for (Process p : processes) {
                if (p != null && p.isAlive()) {
                    p.descendants().forEach(ProcessHandle::destroyForcibly);
                    p.destroyForcibly();
                    p.waitFor(10, TimeUnit.SECONDS);
                }
            }
            for (Thread pump : pumps) {
                pump.join(TimeUnit.SECONDS.toMillis(5)); // a rank's output is complete once its pipe is drained
            }
        }
        int[] codes = Arrays.stream(processes).mapToInt(p -> p.isAlive() ? -1 : p.exitValue()).toArray();
        return new UnsupervisedResult(codes, allExited, output.toString());
    }

    private static Thread pump(Process process, String prefix, StringBuffer output) {
        return Thread.ofPlatform().daemon().name("rank-output " + prefix.trim()).start(() -> {
            try (BufferedReader reader = new BufferedReader(
                    new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = reader.readLine()) != null) {
                    output.append(prefix).append(line).append('\n');
                }
            } catch (IOException e) {
                // the process is gone: what we read is its output
            }
        });
    }

    private static int freePort() {
        try (ServerSocket socket = new ServerSocket()) {
            socket.setReuseAddress(true);
            socket.bind(new InetSocketAddress(InetAddress.getByName(MASTER_ADDR), 0));
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException("no free port on " + MASTER_ADDR, e);
        }
    }

    /**
     * The class path a child JVM needs to run this module's test classes. Under Maven (surefire) that is
     * {@code java.class.path}; under the JUnit console launcher ({@code java -jar junit-platform-console-standalone
     * ... -cp jars}, the GPU bundle) {@code java.class.path} holds only the console jar, and the test jars sit in the
     * URL class loader that loaded this class. So: this class's own location, then the URLs of its loaders, then
     * {@code java.class.path} (which also brings JUnit, that the scenarios' assertions use).
     */
    static String testClasspath() {
        Set<String> entries = new LinkedHashSet<>();
        try {
            entries.add(Path.of(ProcessRankMain.class.getProtectionDomain().getCodeSource().getLocation().toURI())
                    .toString());
        } catch (URISyntaxException | RuntimeException e) {
            // no file location (unusual loader): the loaders and java.class.path below still apply
        }
        for (ClassLoader loader = ProcessRankMain.class.getClassLoader(); loader != null; loader = loader.getParent()) {
            if (loader instanceof URLClassLoader urls) {
                for (URL url : urls.getURLs()) {
                    try {
                        entries.add(Path.of(url.toURI()).toString());
                    } catch (URISyntaxException | RuntimeException e) {
                        // not a local file: a child JVM could not use it either
                    }
                }
            }
        }
        for (String entry : System.getProperty("java.class.path", "").split(File.pathSeparator)) {
            if (!entry.isBlank()) {
                entries.add(entry);
            }
        }
        return String.join(File.pathSeparator, entries);
    }

    /** Rank 1 halted as planned, rank 0 exited with the "detected" code, and said so naming rank 1. */
    static void assertSurvivorReportedTheDeath(ProcessRanks.UnsupervisedResult result) {
        assertTrue(result.allExitedBeforeGuard(), () -> "a rank hung: " + result);
        assertEquals(PeerDeathDetected.DYING_RANK_EXIT_CODE, result.exitCodes()[1], () -> "rank 1: " + result);
        assertEquals(PeerDeathDetected.EXIT_CODE, result.exitCodes()[0], () -> "rank 0: " + result);
        String report = Arrays.stream(result.output().split("\n"))
                .filter(line -> line.startsWith("[rank 0] " + PeerDeathDetected.MARKER + " rank 0:"))
                .findFirst().orElseThrow(() -> new AssertionError("rank 0 printed no report: " + result));
        assertTrue(report.contains("rank 1"), () -> "rank 0's report does not name rank 1: " + report);
    }
}

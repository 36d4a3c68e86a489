package dev.ubuf.testutil;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * A child JVM running a test main class from this test classpath (same java binary, same classpath), with its
 * stdout and stderr merged and collected line by line. For tests that need real processes.
 */
public final class ChildJvm implements AutoCloseable {
    /** Flags that make a tiny child start fast; native access for the FFM bindings. */
    public static final List<String> FAST_JVM_FLAGS = List.of(
            "--enable-native-access=ALL-UNNAMED", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto");

    private final String name;
    private final Process process;
    private final List<String> lines = new ArrayList<>();
    private final Thread pump;

    private ChildJvm(String name, Process process) {
        this.name = name;
        this.process = process;
        this.pump = Thread.ofPlatform().daemon().name("child-output-" + name).start(this::pumpOutput);
    }

    public static String javaBinary() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    public static ChildJvm start(String name, Class<?> mainClass, Map<String, String> env, String... args) {
        return start(name, System.getProperty("java.class.path"), mainClass, env, args);
    }

    /** Like {@link #start(String, Class, Map, String...)} with an explicit class path. */
    public static ChildJvm start(String name, String classPath, Class<?> mainClass, Map<String, String> env,
            String... args) {
        List<String> command = new ArrayList<>();
        command.add(javaBinary());
        command.addAll(FAST_JVM_FLAGS);
        command.add("-cp");
        command.add(classPath);
        command.add(mainClass.getName());
        command.addAll(List.of(args));
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        builder.environment().putAll(env);
        try {
            return new ChildJvm(name, builder.start());
        } catch (IOException e) {
            throw new UncheckedIOException("could not start child JVM " + name, e);
        }
    }

    private void pumpOutput() {
        try (BufferedReader reader = new BufferedReader(
                new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = reader.readLine()) != null) {
                synchronized (lines) {
                    lines.add(line);
                    lines.notifyAll();
                }
            }
        } catch (IOException e) {
            // the process is gone; what we have is the output
        }
    }

    public Process process() {
        return process;
    }

    public long pid() {
        return process.pid();
    }

    /** Waits (hang guard, not a timing assertion) until a line matches; fails with the output so far otherwise. */
    public String awaitLine(Predicate<String> matcher, Duration guard) throws InterruptedException {
        long deadline = System.nanoTime() + guard.toNanos();
        synchronized (lines) {
            int seen = 0;
            while (true) {
                for (; seen < lines.size(); seen++) {
                    if (matcher.test(lines.get(seen))) {
                        return lines.get(seen);
                    }
                }
                long remaining = deadline - System.nanoTime();
                if (remaining <= 0 || (!process.isAlive() && !pump.isAlive())) {
                    throw new AssertionError("child " + name + " printed no matching line; output:\n" + output());
                }
                lines.wait(Math.max(1, TimeUnit.NANOSECONDS.toMillis(remaining)));
            }
        }
    }

    /** Waits for exit (hang guard) and for the output to be fully collected; returns the exit code. */
    public int waitFor(Duration guard) throws InterruptedException {
        if (!process.waitFor(guard.toMillis(), TimeUnit.MILLISECONDS)) {
            process.destroyForcibly();
            throw new AssertionError("child " + name + " did not exit within " + guard + "; output:\n" + output());
        }
        pump.join(guard.toMillis());
        return process.exitValue();
    }

    public String output() {
        synchronized (lines) {
            return String.join("\n", lines);
        }
    }

    @Override
    public void close() {
        process.destroyForcibly();
    }
}

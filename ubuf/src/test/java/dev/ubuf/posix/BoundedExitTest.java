package dev.ubuf.posix;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ubuf.testutil.ChildJvm;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** SIGTERM ends a process whose exit hangs (a shutdown hook that never returns), within the guard's grace. */
class BoundedExitTest {
    /** A child whose exit hangs forever, with or without the guard (args[0]: "guard" or "none"). */
    public static final class HangingExit {
        public static void main(String[] args) throws InterruptedException {
            if (args[0].equals("guard")) {
                BoundedExit.install(Duration.ofSeconds(1));
            }
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                while (true) {
                    try {
                        Thread.sleep(60_000);
                    } catch (InterruptedException e) {
                        // a stuck hook does not give up
                    }
                }
            }));
            System.out.println("ready");
            Thread.sleep(120_000);
        }
    }

    @Test
    void sigtermEndsAProcessWhoseExitHangs(@TempDir Path dir) throws Exception {
        // Output to a file: a pipe's last lines may be lost when a child ends with _exit.
        Path out = dir.resolve("child.txt");
        Process p = new ProcessBuilder(List.of(ChildJvm.javaBinary(), "--enable-native-access=ALL-UNNAMED", "-cp",
                System.getProperty("java.class.path"), HangingExit.class.getName(), "guard"))
                .redirectErrorStream(true).redirectOutput(out.toFile()).start();
        try {
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (!Files.readString(out).contains("ready")) {
                assertTrue(p.isAlive() && System.nanoTime() < deadline, "the child never got ready: "
                        + Files.readString(out));
                Thread.sleep(20);
            }
            p.destroy(); // SIGTERM
            assertTrue(p.waitFor(20, TimeUnit.SECONDS), "SIGTERM did not end the child: " + Files.readString(out));
            assertEquals(BoundedExit.STATUS, p.exitValue(), Files.readString(out));
            assertTrue(Files.readString(out).contains("did not finish exiting within 1 s"), Files.readString(out));
        } finally {
            p.destroyForcibly();
        }
    }

    @Test
    void withoutTheGuardTheSameProcessOutlivesSigterm() throws Exception {
        try (ChildJvm child = ChildJvm.start("unguarded", HangingExit.class, Map.of(), "none")) {
            child.awaitLine("ready"::equals, Duration.ofSeconds(30));
            child.process().destroy();
            assertTrue(!child.process().waitFor(5, TimeUnit.SECONDS),
                    "the hazard the guard removes: a hanging exit outlives SIGTERM");
            child.process().destroyForcibly();
        }
    }
}

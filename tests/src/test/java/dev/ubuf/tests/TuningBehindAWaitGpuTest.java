package dev.ubuf.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ubuf.gemm.GemmTuner;
import dev.ubuf.testutil.GpuAssumptions;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The rule behind the demo's deadlock at tp 4 (GEMM tuning inside a step), on one GPU: with every stream in one
 * hardware queue, a stream waiting on a flag that is raised later holds the queue, and timing a GEMM then holds the
 * host thread that would raise it. A tuner that times at first use (what a domain's tuner did) is held; a domain's
 * tuner ({@link GemmTuner.Policy#AT_INITIALISATION}) runs the GEMM untimed and returns. The first half shows the
 * hazard is real on this GPU, so the second half is evidence, not luck.
 */
class TuningBehindAWaitGpuTest {
    @Test
    void aDomainTunerDoesNotTimeWhileAStreamWaits() throws Exception {
        GpuAssumptions.assumeGpus(1);
        String held = child(GemmTuner.Policy.ON_FIRST_USE, TuningBehindAWaitMain.BLOCKED);
        assertTrue(held.contains("returned=false"), "timing at first use is held behind the wait: " + held);
        String free = child(GemmTuner.Policy.AT_INITIALISATION, 0);
        assertTrue(free.contains("returned=true untuned=1 timed=0"), "the domain tuner runs it untimed: " + free);
    }

    private static String child(GemmTuner.Policy policy, int expectedExit) throws IOException, InterruptedException {
        // Output to a file: reading a pipe only after the child ended lost its text ("Stream closed").
        Path log = Files.createTempFile("tuning-behind-a-wait-", ".txt");
        try {
            ProcessBuilder b = new ProcessBuilder(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                    .toString(), "--enable-native-access=ALL-UNNAMED", "-cp", ProcessRanks.testClasspath(),
                    TuningBehindAWaitMain.class.getName(), policy.name())).redirectErrorStream(true)
                    .redirectOutput(log.toFile());
            b.environment().put("CUDA_DEVICE_MAX_CONNECTIONS", "1");
            Process p = b.start();
            boolean exited = p.waitFor(8 * TuningBehindAWaitMain.PATIENCE.toSeconds(), TimeUnit.SECONDS);
            if (!exited) {
                p.destroyForcibly().waitFor();
            }
            String out = Files.readString(log, StandardCharsets.UTF_8);
            assertTrue(exited, policy + ": the child did not end: " + out);
            assertEquals(expectedExit, p.exitValue(), policy + ": " + out);
            return out;
        } finally {
            Files.deleteIfExists(log);
        }
    }
}

package dev.ubuf.bench;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The Python scripts that turn results files into the combined file and docs/results.md's tables, the sweep's and the
 * test suite's GPU-call scripts, and the PyTorch baselines' GEMM timing, inputs and serving, run their own checks
 * (scripts/test_combine_rounds.py, scripts/test_results_tables.py, scripts/test_sweep_tables.py,
 * scripts/test_sweep_calls.py, scripts/test_gpu_lanes.py, scripts/test_plan_vs_sweep.py, scripts/test_sweep_slack.py,
 * bench/torch/test_gemm_timing.py, bench/torch/test_ubuf_random.py, bench/torch/test_torch_gemm_serve.py,
 * bench/torch/test_torch_layer.py) here, where python3 is on the PATH; elsewhere this test is skipped.
 */
class ResultsScriptsTest {
    private static final Path SCRIPTS = Path.of("..", "scripts");

    @Test
    void combineRoundsPassesItsChecks() throws Exception {
        passesItsChecks(SCRIPTS.resolve("test_combine_rounds.py"));
    }

    /** Also fails when docs/results.md's generated tables differ from the results files they name. */
    @Test
    void resultsTablesPassItsChecks() throws Exception {
        passesItsChecks(SCRIPTS.resolve("test_results_tables.py"));
    }

    /** The model-shape sweep's table (results-tables.py --sweep) on synthetic records. */
    @Test
    void sweepTablesPassTheirChecks() throws Exception {
        passesItsChecks(SCRIPTS.resolve("test_sweep_tables.py"));
    }

    /** sweep-calls.sh (with run-gpu.sh's alternate= stage) and sweep-finish.sh on a fake bundle, without a GPU. */
    @Test
    void sweepCallsPassTheirChecks() throws Exception {
        passesItsChecks(SCRIPTS.resolve("test_sweep_calls.py"));
    }

    /** The planner's own times against the sweep's (plan-vs-sweep.py) on synthetic files. */
    @Test
    void planVsSweepPassesItsChecks() throws Exception {
        passesItsChecks(SCRIPTS.resolve("test_plan_vs_sweep.py"));
    }

    /** Where auto's time above the ideal goes (sweep-slack.py) on a synthetic combined file. */
    @Test
    void sweepSlackPassesItsChecks() throws Exception {
        passesItsChecks(SCRIPTS.resolve("test_sweep_slack.py"));
    }

    /** gpu-lanes.sh on a fake bundle: every GPU class once in the whole suite and across its two halves. */
    @Test
    void gpuLanesPassTheirChecks() throws Exception {
        passesItsChecks(SCRIPTS.resolve("test_gpu_lanes.py"));
    }

    @Test
    void gemmParityDriverPassesItsChecks() throws Exception {
        passesItsChecks(SCRIPTS.resolve("test_gemm_parity.py"));
    }

    @Test
    void theBaselinesGemmTimingPassesItsChecks() throws Exception {
        passesItsChecks(Path.of("torch", "test_gemm_timing.py"));
    }

    @Test
    void theBaselinesCopyOfUbufsRandomInputsPassesItsChecks() throws Exception {
        passesItsChecks(Path.of("torch", "test_ubuf_random.py"));
    }

    @Test
    void theGemmServersInputChecksPassTheirChecks() throws Exception {
        passesItsChecks(Path.of("torch", "test_torch_gemm_serve.py"));
    }

    /** torch_layer.py's options, records and MFU, and its hand-written backward on NumPy (skipped without NumPy). */
    @Test
    void theLayerTwinPassesItsChecks() throws Exception {
        passesItsChecks(Path.of("torch", "test_torch_layer.py"));
    }

    /** Runs a Python check script; it prints an "ok" line per check and exits 0 when all pass. */
    private static void passesItsChecks(Path script) throws Exception {
        assumeTrue(Files.isRegularFile(script), "no " + script + " beside bench/");
        assumeTrue(python3Runs(), "python3 is not on the PATH");
        Process p = new ProcessBuilder("python3", script.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "timed out:\n" + out);
        assertEquals(0, p.exitValue(), out);
    }

    private static boolean python3Runs() {
        try {
            Process p = new ProcessBuilder("python3", "--version").redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            return p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}

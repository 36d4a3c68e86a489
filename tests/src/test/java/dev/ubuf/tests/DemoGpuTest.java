package dev.ubuf.tests;

import dev.ubuf.cli.UbufCli;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code ubuf demo}'s GPU path at a small size: three iterations of training with and without overlap on two GPUs,
 * which must exit 0, print the three timed modes, agree on every iteration's loss within the demo's tolerance (the
 * runs start from the same weights and see the same batches) and write one results record per mode.
 */
class DemoGpuTest {
    private static final Pattern ITER = Pattern.compile(
            "iter +(\\d+)\\s+loss overlap (\\S+)\\s+no_overlap (\\S+)\\s+step ms overlap (\\S+)\\s+no_overlap (\\S+)"
                    + "\\s+no_comm (\\S+)");

    @ParameterizedTest(name = "{0} layers={1} {2}")
    @CsvSource({"bf16, 1, ''", "fp32, 2, --swiglu"})
    void theGpuDemoTrainsWithAndWithoutOverlapAndTheLossesAgree(String dtype, int layers, String swiglu,
                                                                @TempDir Path dir) throws Exception {
        Gpu.assumeGpus(2);
        Path results = dir.resolve("demo.json");
        List<String> args = new ArrayList<>(List.of("demo", "--tp", "2", "--hidden", "256", "--ffn", "1024",
                "--tokens", "256", "--layers", Integer.toString(layers), "--iters", "3", "--warmup", "0",
                "--dtype", dtype, "--out", results.toString()));
        if (!swiglu.isEmpty()) {
            args.add(swiglu);
        }
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = UbufCli.run(args.toArray(String[]::new), new PrintWriter(out, true), new PrintWriter(err, true));
        String text = out.toString();
        String all = "exit " + code + "\nstdout:\n" + text + "\nstderr:\n" + err;
        assertEquals(0, code, all);
        assertTrue(!text.contains("SIMULATION"), "the GPU path must run, not the simulation:\n" + all);
        for (String mode : new String[]{"overlap", "no_overlap", "no_comm"}) {
            assertTrue(text.contains("median step " + mode), mode + " missing:\n" + all);
        }
        assertTrue(text.contains("AGREE") && !text.contains("DISAGREE"), all);
        Matcher m = ITER.matcher(text);
        int iterations = 0;
        double tol = "fp32".equals(dtype) ? 1e-3 : 3e-2;
        while (m.find()) {
            iterations++;
            double on = Double.parseDouble(m.group(2));
            double off = Double.parseDouble(m.group(3));
            assertTrue(Double.isFinite(on) && on > 0, "loss must be finite and positive:\n" + all);
            assertTrue(Math.abs(on - off) <= tol * Math.abs(off), "iteration " + m.group(1) + ": losses " + on
                    + " (overlap) and " + off + " (no_overlap) differ by more than " + tol + " relative:\n" + all);
            for (int g = 4; g <= 6; g++) {
                assertTrue(Double.parseDouble(m.group(g)) > 0, "step times must be positive:\n" + all);
            }
        }
        assertEquals(3, iterations, "one line per iteration:\n" + all);
        String json = Files.readString(results);
        assertEquals(3, json.split("\"op\" : \"layer\"", -1).length - 1, json);
        for (String key : new String[]{"\"hidden_share\"", "\"speedup\"", "\"loss_max_rel_diff\"", "\"no_comm\""}) {
            assertTrue(json.contains(key), key + " missing:\n" + json);
        }
    }
}

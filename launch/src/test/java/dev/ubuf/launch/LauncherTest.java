package dev.ubuf.launch;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The launcher run in this JVM, starting real child JVMs. The ranks' output is kept in the result and shown only in
 * a failing assertion's message. Unless a test says otherwise, the machine is one whose GPUs cannot be counted and
 * whose environment has no UB_TIMEOUT, so the tests read the same on any machine.
 */
class LauncherTest {
    private static final List<String> FAST = List.of("--jvm-arg=-XX:TieredStopAtLevel=1",
            "--jvm-arg=-XX:+UseSerialGC", "--jvm-arg=-Xshare:auto");
    private static final LaunchHost NO_GPU_COUNT = host(Map.of(), OptionalInt.empty());

    private record Result(int exitCode, String out, String err) {
        @Override
        public String toString() {
            return "exit " + exitCode + "\n--- stdout\n" + out + "\n--- stderr\n" + err;
        }
    }

    /** This JVM's environment without UB_TIMEOUT, plus {@code extra}. */
    private static LaunchHost host(Map<String, String> extra, OptionalInt gpus) {
        Map<String, String> env = new HashMap<>(System.getenv());
        env.remove("UB_TIMEOUT");
        env.putAll(extra);
        return new LaunchHost(env, gpus);
    }

    private static Result launch(String... args) {
        return launchOn(NO_GPU_COUNT, args);
    }

    private static Result launchOn(LaunchHost host, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        List<String> all = new ArrayList<>(FAST);
        all.addAll(Arrays.asList(args));
        int code;
        try (PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
             PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            code = Launcher.run(all.toArray(String[]::new), o, e, host);
        }
        return new Result(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void twoAndFourRanksSucceedWithPrefixedOutputAndTheirEnvironment() {
        for (int n : new int[]{2, 4}) {
            Result result = launch("--nproc-per-node", String.valueOf(n), "--timeout", "20",
                    LaunchChildMain.class.getName(), "bootstrap", "--not-a-launcher-option");
            assertEquals(0, result.exitCode(), result::toString);
            String all = result.out();
            for (int rank = 0; rank < n; rank++) {
                assertTrue(all.contains("[rank " + rank + "] env rank=" + rank + " world=" + n + " local=" + rank
                        + " lws=" + n + " master=127.0.0.1 port-set=true token-hex-length=32 timeout=20 "
                        + "args=[bootstrap, --not-a-launcher-option]"), all);
                assertTrue(all.contains("[rank " + rank + "] gathered " + Arrays.toString(
                        java.util.stream.IntStream.range(0, n).toArray())), all);
                assertTrue(all.contains("[rank " + rank + "] unterminated tail of rank " + rank + "\n"), all);
            }
            assertWholeLines(result.out(), "line", n);
            assertWholeLines(result.err(), "err", n);
        }
    }

    /** Every "line i of rank r" arrived whole, under its own rank's prefix, in order per rank. */
    private static void assertWholeLines(String text, String word, int ranks) {
        Pattern pattern = Pattern.compile("\\[rank (\\d+)] " + word + " (\\d+) of rank (\\d+)");
        int[] next = new int[ranks];
        for (String line : text.split("\n", -1)) {
            if (!line.contains(" " + word + " ")) {
                continue;
            }
            Matcher m = pattern.matcher(line);
            assertTrue(m.matches(), "a line was torn or interleaved: '" + line + "'");
            int rank = Integer.parseInt(m.group(1));
            assertEquals(rank, Integer.parseInt(m.group(3)), "prefix names another rank: " + line);
            assertEquals(next[rank]++, Integer.parseInt(m.group(2)), "lines out of order: " + line);
        }
        for (int rank = 0; rank < ranks; rank++) {
            assertEquals(300, next[rank], word + " lines of rank " + rank);
        }
    }

    @Test
    void aFailingRankStopsTheOthersAndIsNamed() {
        Result result = launch("--nproc-per-node", "4", "--kill-grace", "5", LaunchChildMain.class.getName(),
                "fail", "1", "3");
        assertEquals(3, result.exitCode());
        assertTrue(result.err().contains("ubuf-launch: rank 1 exited with code 3; stopping the other ranks"),
                result.err());
        assertTrue(result.err().contains("[rank 1] rank 1 failing on purpose"), result.err());
        assertTrue(result.err().contains("job failed: rank 1 exited with code 3"), result.err());
    }

    @Test
    void aRankKilledBySignalStopsTheOthers() {
        Result result = launch("--nproc-per-node", "2", LaunchChildMain.class.getName(), "die", "0");
        assertEquals(137, result.exitCode());
        assertTrue(result.err().contains("rank 0 exited with code 137 (killed by signal 9?)"), result.err());
    }

    @Test
    void usageErrorsExitWithTwoBeforeStartingAnything() {
        assertUsageError(launch("--nproc-per-node", "0", "Main"), "--nproc-per-node must be 1..64");
        assertUsageError(launch("--nproc-per-node", "2"), "Missing required parameter: 'MAIN_CLASS'");
        assertUsageError(launch("--nproc-per-node", "2", "--timeout", "-1", "Main"),
                "--timeout: UB_TIMEOUT must be a positive number of seconds");
        assertUsageError(launch("--nproc-per-node", "2", "--master-port", "70000", "Main"),
                "--master-port must be in 0..65535, got 70000");
    }

    @Test
    void moreRanksThanTheStatedLimitAreRefusedEvenWhereGpusCannotBeCounted() {
        assertUsageError(launch("--nproc-per-node", "1000", "Main"),
                "--nproc-per-node must be 1..64 (one JVM per GPU), got 1000");
    }

    @Test
    void moreRanksThanVisibleGpusAreRefused() {
        LaunchHost twoGpus = host(Map.of("CUDA_VISIBLE_DEVICES", "0,1"), OptionalInt.of(2));
        assertUsageError(launchOn(twoGpus, "--nproc-per-node", "3", "Main"),
                "--nproc-per-node 3 exceeds the 2 GPU(s) visible on this node");
    }

    @Test
    void aBadUbTimeoutInTheEnvironmentIsRefusedByName() {
        Result result = launchOn(host(Map.of("UB_TIMEOUT", "abc"), OptionalInt.empty()), "--nproc-per-node", "2",
                "Main");
        assertUsageError(result, "UB_TIMEOUT='abc' in the environment is not a positive number of seconds");
    }

    @Test
    void theEnvironmentsUbTimeoutReachesTheRanksAndTimeoutOverridesIt() {
        LaunchHost withTimeout = host(Map.of("UB_TIMEOUT", "25"), OptionalInt.empty());
        Result inherited = launchOn(withTimeout, "--nproc-per-node", "2", HelloRanks.class.getName());
        assertEquals(0, inherited.exitCode(), inherited::toString);
        assertTrue(inherited.out().contains("[rank 1] hello from rank 1 of 2 (local rank 1 of 2 on this node)"),
                inherited::toString);
        assertTrue(inherited.out().contains("job token set, UB_TIMEOUT 25"), inherited::toString);

        Result overridden = launchOn(withTimeout, "--nproc-per-node", "1", "--timeout", "7",
                HelloRanks.class.getName());
        assertTrue(overridden.out().contains("UB_TIMEOUT 7"), overridden::toString);
    }

    /** Exit 2, the message, and no rank started (nothing was printed with a rank prefix). */
    private static void assertUsageError(Result result, String message) {
        assertEquals(2, result.exitCode(), result::toString);
        assertTrue(result.err().contains(message), () -> "no '" + message + "' in:\n" + result);
        assertFalse(result.out().contains("[rank 0]") || result.err().contains("[rank 0]"), result::toString);
        assertFalse(result.err().contains("starting"), result::toString);
    }
}

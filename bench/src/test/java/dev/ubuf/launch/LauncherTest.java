package dev.ubuf.launch;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The launcher run in this JVM, starting real child JVMs. */
class LauncherTest {
    private static final List<String> FAST = List.of("--jvm-arg=-XX:TieredStopAtLevel=1",
            "--jvm-arg=-XX:+UseSerialGC", "--jvm-arg=-Xshare:auto");

    private record Result(int exitCode, String out, String err) {
    }

    private static Result launch(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        List<String> all = new ArrayList<>(FAST);
        all.addAll(Arrays.asList(args));
        int code;
        try (PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
             PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            code = Launcher.run(all.toArray(String[]::new), o, e);
        }
        Result result = new Result(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
        System.out.println("launcher exit " + code + "\n--- stdout (tail)\n" + tail(result.out) + "\n--- stderr (tail)\n"
                + tail(result.err));
        return result;
    }

    private static String tail(String text) {
        return text.length() < 2000 ? text : "..." + text.substring(text.length() - 2000);
    }

    @Test
    void twoAndFourRanksSucceedWithPrefixedOutputAndTheirEnvironment() {
        for (int n : new int[]{2, 4}) {
            Result result = launch("--nproc-per-node", String.valueOf(n), "--timeout", "20",
                    LaunchChildMain.class.getName(), "bootstrap", "--not-a-launcher-option");
            assertEquals(0, result.exitCode(), result.err());
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
        assertEquals(2, launch("--nproc-per-node", "0", "Main").exitCode());
        assertEquals(2, launch("--nproc-per-node", "2").exitCode(), "main class missing");
        assertEquals(2, launch("--nproc-per-node", "2", "--timeout", "-1", "Main").exitCode());
        assertEquals(2, launch("--nproc-per-node", "2", "--master-port", "70000", "Main").exitCode());
    }
}

package dev.ubuf.bench;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.IntStream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The demo's line per iteration, read with the patterns of the GPU tests that run the demo (DemoGpuTest,
 * DemoReplicasGpuTest, copied here): every line matches, warm-up lines included, one match per line.
 */
class LayerDemoLinesTest {
    /** DemoGpuTest's. */
    private static final Pattern ONE_GROUP = Pattern.compile(
            "iter +(\\d+)\\s+loss overlap (\\S+)\\s+no_overlap (\\S+)\\s+step ms overlap (\\S+)\\s+no_overlap (\\S+)"
                    + "\\s+no_comm (\\S+)");
    /** DemoGpuTest's, with --compare-bf16. */
    private static final Pattern COMPARE = Pattern.compile("iter +(\\d+)\\s.*loss overlap (\\S+)\\s.*"
            + "bf16_overlap loss (\\S+) step ms (\\S+)");
    /** DemoReplicasGpuTest's. */
    private static final Pattern REPLICAS = Pattern.compile(
            "iter +(\\d+)\\s+loss overlap (\\S+)\\s+no_overlap (\\S+)\\s+step ms overlap (\\S+)\\s+no_overlap (\\S+)"
                    + "\\s+no_comm (\\S+)\\s+per replica overlap (\\S+) no_overlap (\\S+)");

    /** Lines of {@code warmup} warm-up and then timed iterations, {@code replicas} replicas, comparing or not. */
    private static String lines(int warmup, int total, int replicas, boolean compare) {
        StringBuilder b = new StringBuilder();
        for (int it = 0; it < total; it++) {
            double[] ms = compare ? new double[]{1.5 + it, 2.5, 0.5, 1.25} : new double[]{1.5 + it, 2.5, 0.5};
            double[] on = IntStream.range(0, replicas).mapToDouble(g -> 0.25 + g).toArray();
            double[] off = IntStream.range(0, replicas).mapToDouble(g -> 0.5 + g).toArray();
            double meanOn = 0.25 + (replicas - 1) / 2.0;
            double meanOff = 0.5 + (replicas - 1) / 2.0;
            b.append(LayerDemo.iterationLine(it, it < warmup, meanOn, meanOff, ms, compare ? 0.125 : Double.NaN, on,
                    off)).append('\n');
        }
        return b.toString();
    }

    private static int count(Pattern p, String text, List<Integer> iterations) {
        Matcher m = p.matcher(text);
        int n = 0;
        while (m.find()) {
            assertEquals(iterations.get(n), Integer.parseInt(m.group(1)), text);
            n++;
        }
        return n;
    }

    @Test
    void everyIterationIsOneLineTheGpuTestsRead() {
        List<Integer> four = List.of(0, 1, 2, 3);
        String one = lines(1, 4, 1, false);
        assertEquals(4, count(ONE_GROUP, one, four), "one line per iteration, warm-up included:\n" + one);
        String two = lines(1, 4, 2, false);
        assertEquals(4, count(REPLICAS, two, four), "one line per iteration, warm-up included:\n" + two);
        String compare = lines(1, 4, 1, true);
        assertEquals(4, count(COMPARE, compare, four), "one line per iteration, warm-up included:\n" + compare);
        assertEquals(4, count(ONE_GROUP, compare, four), compare);
        for (String text : List.of(one, two, compare)) {
            assertEquals(4, text.lines().count(), text);
            assertTrue(text.lines().findFirst().orElseThrow().endsWith("(warm-up)"), text);
            assertEquals(1, text.split("warm-up", -1).length - 1, "only the warm-up iteration says so:\n" + text);
        }
    }

    @Test
    void theFieldsAreTheValuesGiven() {
        Matcher m = REPLICAS.matcher(LayerDemo.iterationLine(7, false, 0.75, 1.0, new double[]{1.5, 2.5, 0.5},
                Double.NaN, new double[]{0.25, 1.25}, new double[]{0.5, 1.5}));
        assertTrue(m.find());
        assertEquals(List.of("7", "0.750000", "1.000000", "1.500", "2.500", "0.500", "0.250000/1.250000",
                "0.500000/1.500000"), IntStream.rangeClosed(1, 8).mapToObj(m::group).toList());
        String single = LayerDemo.iterationLine(0, false, 0.75, 1.0, new double[]{1.5, 2.5, 0.5}, Double.NaN,
                new double[]{0.75}, new double[]{1.0});
        assertFalse(single.contains("per replica") || single.contains("bf16_overlap") || single.contains("NaN"),
                single);
    }
}

package dev.ubuf.cli;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Every command explains itself: --help and the help command exit 0, every option says what it does and its default. */
class HelpTest {
    @ParameterizedTest
    @ValueSource(strings = {"--help", "-h", "info --help", "bench --help", "bench gemm --help", "bench p2p --help", "bench pushes --help",
            "bench ag --help", "bench rs --help", "bench sweep --help", "bench ce --help", "plan --help", "help",
            "help info", "help bench", "help plan", "bench help ag", "bench help rs", "bench help sweep"})
    void helpExitsZeroWithTheCommandsUsage(String args) {
        Ubuf result = Ubuf.run(args.split(" "));
        assertEquals(0, result.exitCode(), result::toString);
        assertTrue(result.out().startsWith("Usage: ubuf"), result::toString);
        assertEquals("", result.err(), result::toString);
    }

    @Test
    void everyOptionOfEveryBenchmarkHasADescriptionWithItsDefault() {
        List<String> missing = new ArrayList<>();
        CommandLine bench = new CommandLine(new UbufCli()).getSubcommands().get("bench");
        for (CommandLine benchmark : bench.getSubcommands().values()) {
            CommandSpec spec = benchmark.getCommandSpec();
            for (OptionSpec option : spec.options()) {
                if (option.usageHelp() || option.versionHelp()) {
                    continue;
                }
                String text = String.join(" ", option.description());
                boolean flag = option.typeInfo().isBoolean() && !option.negatable();
                boolean explained = !text.isBlank() && (flag || text.contains("(default: ")
                        || text.contains("Default: "));
                if (!explained) {
                    missing.add(spec.qualifiedName() + " " + option.longestName());
                }
            }
        }
        assertEquals(List.of(), missing, "options without a description or a default");
    }

    @Test
    void theHelpShowsDefaultsFilledIn() {
        String ag = Ubuf.run("bench", "ag", "--help").out();
        assertTrue(ag.contains("(default: 20)"), ag);
        assertTrue(oneLine(ag).contains("Element type: bf16, fp16, fp32 (default: bf16)"), ag);
        assertFalse(ag.contains("${"), ag);
    }

    @Test
    void theVariantKeysAreListedPerBenchmarkInOneOrder() {
        String rs = Ubuf.run("bench", "rs", "--help").out();
        String rsLine = oneLine(rs);
        assertInOrder(rsLine, "pipeline: cs = ", "splits = ", "margin = ", "ring: cs = ", "sub = ", "slots = ",
                "lowp = ", "bidir = ", "scatter: sub = ", "lowp = ");
        assertTrue(rsLine.contains("Methods: oneshot, pipeline, ring, scatter, auto, nccl"), rs);
        String ag = oneLine(Ubuf.run("bench", "ag", "--help").out());
        assertInOrder(ag, "aggregate: cs = ", "ms = ", "bidir: cs = ", "ms = ", "ring: cs = ", "ms = ");
        assertTrue(ag.contains("Methods: aggregate, bidir, fanout, oneshot, ring, auto, nccl"), ag);
        assertFalse(ag.contains("lowp"), ag);
        assertEquals(rs, Ubuf.run("bench", "rs", "--help").out(), "the same help every time");
    }

    /** The help as one line: picocli wraps long lines wherever they reach the width. */
    private static String oneLine(String help) {
        return help.replaceAll("\\s+", " ");
    }

    private static void assertInOrder(String text, String... parts) {
        int at = -1;
        for (String part : parts) {
            int next = text.indexOf(part, at + 1);
            assertTrue(next > at, () -> "'" + part + "' missing or out of order in:\n" + text);
            at = next;
        }
    }

    @Test
    void theBenchHelpSaysWhereResultsGo() {
        String bench = Ubuf.run("bench", "--help").out();
        assertTrue(oneLine(bench).contains("with --out FILE it also writes them"), bench);
    }

    @Test
    void withoutABenchmarkTheUsageGoesToStderrWithExitTwo() {
        Ubuf bench = Ubuf.run("bench");
        assertEquals(2, bench.exitCode(), bench::toString);
        assertTrue(bench.err().contains("name a benchmark: gemm, p2p, pushes, ag, rs, sweep, ce, fp8 or kernels"), bench::toString);
        assertTrue(bench.err().contains("Usage: ubuf bench"), bench::toString);
        Ubuf none = Ubuf.run();
        assertEquals(2, none.exitCode(), none::toString);
        assertTrue(none.err().contains("Usage: ubuf"), none::toString);
    }
}

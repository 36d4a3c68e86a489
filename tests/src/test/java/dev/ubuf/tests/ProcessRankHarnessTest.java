package dev.ubuf.tests;

import dev.ubuf.bootstrap.Bootstrap;
import dev.ubuf.bootstrap.InMemoryBootstrap;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The multi-process test harness without a GPU: scenarios survive the trip through the command line, bad words are
 * rejected by name, the kill scenarios refuse thread mode, and real child JVMs run a scenario through the launcher and
 * unsupervised (CPU scenarios), with the exit codes and output the GPU tests rely on.
 */
class ProcessRankHarnessTest {
    private static final Duration GUARD = Duration.ofSeconds(60); // hang guard only

    @Test
    void everyScenarioReadsBackFromItsCommandLineWords() {
        List<RankScenario> all = List.of(new P2pScenario(), new P2pScenario(dev.ubuf.config.BufferSharing.LEGACY_IPC),
                new RegisterCyclesScenario(1000),
                new OverlapScenario(dev.ubuf.op.Collective.ALL_GATHER, "aggregate", DType.FP16, 2000, 512, 384, false,
                        true, false),
                new OverlapScenario(dev.ubuf.op.Collective.REDUCE_SCATTER, "pipeline:splits=4", DType.BF16, 6, 136,
                        128, true, false, true),
                new PeerDeathScenario(3), new HandshakeScenario(true), new HandshakeScenario(false),
                new BootstrapPeerDeathScenario(),
                new ScenarioBatch(List.of(new HandshakeScenario(false), new OverlapScenario(
                        dev.ubuf.op.Collective.REDUCE_SCATTER, "scatter:sub=2,lowp=1", DType.BF16, 6, 136, 128, true,
                        false, true), new HandshakeScenario(true))));
        for (RankScenario s : all) {
            assertEquals(s, RankScenario.parse(s.toArgs()), () -> "round trip of " + s.toArgs());
        }
    }

    @Test
    void badCommandLinesAreRejectedNamingTheScenarioAndTheParameter() {
        assertMessage(List.of(), "no scenario named");
        assertMessage(List.of("allgather"), "unknown scenario 'allgather'");
        assertMessage(List.of("overlap", "ALL_GATHER", "ring", "BF16", "2000"), "takes 9 parameters");
        assertMessage(List.of("overlap", "SIDEWAYS", "ring", "BF16", "2000", "512", "384", "true", "false", "false"),
                "parameter collective");
        assertMessage(List.of("overlap", "REDUCE_SCATTER", "ring", "BF16", "2000", "0", "384", "true", "false",
                "false"), "parameter k must be a positive");
        assertMessage(List.of("overlap", "REDUCE_SCATTER", "ring", "BF16", "2000", "512", "384", "true", "false",
                "yes"), "parameter bias must be true or false");
        assertMessage(List.of("register-cycles", "many"), "parameter cycles must be an integer");
        assertMessage(List.of("p2p", "LEGACY_IPC", "extra"), "takes 1 parameters");
        assertMessage(List.of("p2p", "SHARED_MEMORY"), "parameter sharing");
        assertMessage(List.of("batch"), "takes a count of parts");
        assertMessage(List.of("batch", "0"), "count of parts must be a positive integer");
        assertMessage(List.of("batch", "2", "2", "handshake", "false"), "part 1 of 2 is missing");
        assertMessage(List.of("batch", "1", "3", "handshake", "false"), "has 3 words, only 2 are left");
        assertMessage(List.of("batch", "1", "2", "handshake", "false", "extra"), "1 words after its 1 parts");
        assertMessage(List.of("batch", "1", "2", "handshake", "maybe"), "parameter lastRankFails");
        assertThrows(IllegalArgumentException.class, () -> new ScenarioBatch(List.of(
                new ScenarioBatch(List.of(new HandshakeScenario(false))))));
    }

    private static void assertMessage(List<String> args, String expected) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> RankScenario.parse(args));
        assertTrue(e.getMessage().contains(expected), () -> "'" + e.getMessage() + "' lacks '" + expected + "'");
    }

    @Test
    void killScenariosRefuseToRunWithAThreadPerRank() throws Exception {
        UbufEnvironment env = new UbufEnvironment(true, Duration.ofSeconds(5), false);
        InMemoryBootstrap.Group group = InMemoryBootstrap.group(2, Duration.ofSeconds(5));
        try (Bootstrap rank0 = group.rank(0)) {
            for (RankScenario s : List.of(new PeerDeathScenario(3), new BootstrapPeerDeathScenario())) {
                IllegalStateException e = assertThrows(IllegalStateException.class, () -> s.run(0, rank0, null, env));
                assertTrue(e.getMessage().contains("one process per rank"), e.getMessage());
            }
        } finally {
            group.close();
        }
    }

    @Test
    void twoProcessRanksRunAScenarioThroughTheLauncherWithMulticastOffAndTheTimeout() throws InterruptedException {
        ProcessRanks.LaunchResult result = ProcessRanks.launch(2, Duration.ofSeconds(20), new HandshakeScenario(false),
                GUARD);
        assertEquals(0, result.exitCode(), result.output());
        for (int rank = 0; rank < 2; rank++) {
            String line = "[rank " + rank + "] handshake: rank " + rank + " of 2 gathered [0, 1], skipMulticast=true, "
                    + "timeout=20 s";
            assertTrue(result.output().contains(line), () -> "no '" + line + "' in:\n" + result.output());
        }
    }

    @Test
    void aFailingRankFailsTheJobWithItsErrorInTheOutput() throws InterruptedException {
        ProcessRanks.LaunchResult result = ProcessRanks.launch(2, Duration.ofSeconds(20), new HandshakeScenario(true),
                GUARD);
        assertEquals(ProcessRankMain.EXIT_FAILED, result.exitCode(), result.output());
        assertTrue(result.output().contains("[rank 1] java.lang.AssertionError: rank 1 "
                + HandshakeScenario.FAILURE_TEXT), result.output());
    }

    @Test
    void aBatchReportsEachPartAndStopsAtTheFirstThatFails() throws InterruptedException {
        HandshakeScenario ok = new HandshakeScenario(false);
        HandshakeScenario failing = new HandshakeScenario(true);
        ProcessRanks.BatchJob passing = new ProcessRanks.BatchJob(2, Duration.ofSeconds(20),
                new ScenarioBatch(List.of(ok, ok)), GUARD, Map.of());
        java.io.PrintStream console = System.out;
        java.io.ByteArrayOutputStream echoed = new java.io.ByteArrayOutputStream();
        System.setOut(new java.io.PrintStream(echoed, true, java.nio.charset.StandardCharsets.UTF_8));
        try {
            passing.assertPassed(ok);
        } finally {
            System.setOut(console);
        }
        assertTrue(echoed.toString(java.nio.charset.StandardCharsets.UTF_8).contains("[rank 1] rank 1 passed " + ok),
                "the ranks' lines reach the console as they come: " + echoed);
        assertEquals(0, passing.result().exitCode(), passing.result().output());
        assertEquals(2, passing.result().output().lines().filter(l -> l.equals("[rank 1] rank 1 passed " + ok))
                .count(), passing.result().output());

        ScenarioBatch batch = new ScenarioBatch(List.of(ok, failing, ok));
        ProcessRanks.BatchJob job = new ProcessRanks.BatchJob(2, Duration.ofSeconds(20), batch, GUARD, Map.of());
        job.assertPassed(ok); // the first part passed on both ranks
        AssertionError e = assertThrows(AssertionError.class, () -> job.assertPassed(failing));
        assertTrue(e.getMessage().contains("rank 1 did not pass " + failing) && e.getMessage().contains("exit code "
                + ProcessRankMain.EXIT_FAILED), e.getMessage());
        String out = job.result().output();
        assertTrue(out.contains("[rank 0] rank 0 passed " + failing), out); // it fails on the last rank only
        assertTrue(out.contains("part 2 of 3 (" + failing + ") failed"), out);
        assertEquals(1, out.lines().filter(l -> l.equals("[rank 1] rank 1 passed " + ok)).count(),
                "rank 1 ran nothing after the part that failed: " + out);
        assertThrows(IllegalArgumentException.class, () -> job.assertPassed(new P2pScenario()), "not a part");
    }

    @Test
    void whenARankDiesTheSurvivorsBootstrapNamesItAndTheSurvivorExitsWithTheDetectedCode() throws InterruptedException {
        ProcessRanks.UnsupervisedResult result = ProcessRanks.runUnsupervised(2, Map.of("UB_TIMEOUT", "20"),
                new BootstrapPeerDeathScenario(), GUARD);
        ProcessRanks.assertSurvivorReportedTheDeath(result);
    }
}

package dev.ubuf.tests;

import dev.ubuf.bootstrap.Bootstrap;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaContext;

import java.util.List;

/**
 * One rank's part of a multi-rank test: the same body runs in both rank modes, a thread per rank in one JVM
 * ({@code ThreadDomain}) or one JVM per rank ({@link ProcessRankMain}, started by the launcher). A scenario is data:
 * its parameters travel to a child JVM as command-line words ({@link #toArgs()}, read back by {@link #parse}).
 */
sealed interface RankScenario
        permits P2pScenario, RegisterCyclesScenario, OverlapScenario, PeerDeathScenario, HandshakeScenario,
        BootstrapPeerDeathScenario, LayerScenario, Fp8OverlapGpuTest.Case, StepGraphGpuTest.Case, ScenarioBatch {

    /**
     * Runs this rank's part; every rank of {@code bootstrap} calls it. Throws (an AssertionError, a CUDA or ubuf
     * exception) when the scenario fails on this rank.
     *
     * @param ctx this rank's primary context, or null for scenarios that do not need a GPU ({@link #needsGpu()})
     * @param env the ubuf settings of this rank (UB_SKIPMC, UB_TIMEOUT, UB_DEBUG), read once at the edge
     */
    void run(int rank, Bootstrap bootstrap, CudaContext ctx, UbufEnvironment env) throws Exception;

    /** The name first, then the parameters, as {@link #parse} reads them. */
    List<String> toArgs();

    /** False only for the CPU scenarios that test the process harness itself. */
    default boolean needsGpu() {
        return true;
    }

    /** Reads the words {@link #toArgs()} wrote; a clear IllegalArgumentException for anything else. */
    static RankScenario parse(List<String> args) {
        if (args.isEmpty()) {
            throw new IllegalArgumentException("no scenario named; known: " + names());
        }
        List<String> params = args.subList(1, args.size());
        return switch (args.getFirst()) {
            case P2pScenario.NAME -> P2pScenario.parse(params);
            case RegisterCyclesScenario.NAME -> RegisterCyclesScenario.parse(params);
            case OverlapScenario.NAME -> OverlapScenario.parse(params);
            case PeerDeathScenario.NAME -> PeerDeathScenario.parse(params);
            case HandshakeScenario.NAME -> HandshakeScenario.parse(params);
            case BootstrapPeerDeathScenario.NAME -> BootstrapPeerDeathScenario.parse(params);
            case LayerScenario.NAME -> LayerScenario.parse(params);
            case Fp8OverlapGpuTest.Case.NAME -> Fp8OverlapGpuTest.Case.parse(params);
            case StepGraphGpuTest.Case.NAME -> StepGraphGpuTest.Case.parse(params);
            case ScenarioBatch.NAME -> ScenarioBatch.parse(params);
            default -> throw new IllegalArgumentException("unknown scenario '" + args.getFirst() + "'; known: "
                    + names());
        };
    }

    private static List<String> names() {
        return List.of(P2pScenario.NAME, RegisterCyclesScenario.NAME, OverlapScenario.NAME,
                PeerDeathScenario.NAME, HandshakeScenario.NAME, BootstrapPeerDeathScenario.NAME, LayerScenario.NAME,
                Fp8OverlapGpuTest.Case.NAME, StepGraphGpuTest.Case.NAME, ScenarioBatch.NAME);
    }
}

package dev.ubuf.cli;

import dev.ubuf.tensor.DType;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** The options every overlap benchmark takes (bench ag, bench rs, bench sweep), described and checked once. */
final class OverlapBenchOptions {
    static final int MAX_TP = 8;

    @Spec(Spec.Target.MIXEE)
    CommandSpec spec;

    @Option(names = "--tp", defaultValue = "2", paramLabel = "N",
            description = "Ranks, one GPU each, all driven by this JVM: 2.." + MAX_TP + " (default: ${DEFAULT-VALUE}).")
    int tp;
    @Option(names = "--dtype", defaultValue = "bf16", converter = BenchDTypes.Converter.class,
            completionCandidates = BenchDTypes.class, paramLabel = "TYPE",
            description = "Element type: ${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE}).")
    DType dtype;
    @Option(names = "--fp8", defaultValue = "false",
            description = "FP8 operands (E4M3 input and weight [n, k], scales 1): the AG moves FP8 chunks and every GEMM"
                    + " is FP8; --dtype is then the output's type (and RS partials'). K and N must be multiples of 16.")
    boolean fp8;

    /** The FP8 operands of --fp8, or none. */
    java.util.Optional<dev.ubuf.op.Fp8Operands> fp8Operands() {
        return fp8 ? java.util.Optional.of(dev.ubuf.op.Fp8Operands.E4M3) : java.util.Optional.empty();
    }
    @Option(names = "--warmup", defaultValue = "3", paramLabel = "N",
            description = "Untimed rounds after a first unheld call of each candidate, >= 0 (default: ${DEFAULT-VALUE}).")
    int warmup;
    @Option(names = "--iters", defaultValue = "20", paramLabel = "N",
            description = "Timed rounds, each running every candidate once in a shuffled order; >= 1"
                    + " (default: ${DEFAULT-VALUE}).")
    int iters;
    @Option(names = "--calls-per-sample", defaultValue = "1", paramLabel = "K",
            description = "Calls of a candidate each sample runs back to back, its time over K (1 to "
                    + dev.ubuf.timing.InterleavedTimer.MAX_CALLS_PER_SAMPLE + "): the ranks leave each sample's"
                    + " barrier some microseconds apart, and an op that needs its peers waits for the last one once"
                    + " a sample. Every term of the ideal is timed the same way (default: ${DEFAULT-VALUE}).")
    int callsPerSample;
    @Option(names = "--seed", defaultValue = "20261123", paramLabel = "N",
            description = "Seed of the inputs and of the candidates' order, recorded (default: ${DEFAULT-VALUE}).")
    long seed;
    @Option(names = "--copy-engine", defaultValue = "true", negatable = true, fallbackValue = "true",
            description = "Move chunks with the copy engines; --no-copy-engine uses SM copy kernels"
                    + " (default: ${DEFAULT-VALUE}).")
    boolean copyEngine;
    @Option(names = "--cuda-graph", description = "Time every method and every term of the ideal as replays of a CUDA"
            + " graph of one call, the ops graph-safe (signal and wait kernels) and auto planned the same way: what a"
            + " layer run with --cuda-graph runs. Atomic methods are not graph-safe.")
    boolean cudaGraph;
    @Option(names = "--trace", description = "Print rank 0's per-step timeline of one call of each method.")
    boolean trace;
    @Mixin
    ResultsOutput out;

    void check() {
        OptionChecks.within(spec, "--tp", tp, 2, MAX_TP);
        OptionChecks.atLeast(spec, "--warmup", warmup, 0);
        OptionChecks.atLeast(spec, "--iters", iters, 1);
        OptionChecks.within(spec, "--calls-per-sample", callsPerSample, 1,
                dev.ubuf.timing.InterleavedTimer.MAX_CALLS_PER_SAMPLE);
    }
}

package dev.ubuf.cli;

import picocli.CommandLine.Command;

/** Benchmarks; each writes a results file in the format of DESIGN.md. */
@Command(name = "bench", description = "Benchmarks (GEMM, P2P, AG and RS overlap) written to bench/results.",
        subcommands = {GemmBenchCommand.class, AgBenchCommand.class, RsBenchCommand.class, P2pBenchCommand.class})
final class BenchCommand implements Runnable {
    @Override
    public void run() {
        System.out.println("usage: ubuf bench gemm|p2p|ag|rs ... (see --help)");
    }
}

package dev.ubuf.gemm;

import java.util.HexFormat;
import java.util.Locale;

/**
 * The outcome of tuning one GEMM: the winning algorithm and what it was measured against.
 *
 * @param algo                 the cublasLtMatmulAlgo_t's 64 bytes in hex; cuBLASLt documents the struct as safe to
 *                             store and reuse with the same cuBLASLt version, and ubuf only ever uses it to recognise
 *                             one of the candidates cuBLASLt proposes again
 * @param heuristicRank        its place in cuBLASLt's heuristic list (0 = the heuristic's own first choice)
 * @param millis               its time per run
 * @param heuristicFirstMillis the heuristic's first choice's time per run, for comparison
 */
record TunedAlgorithm(String algo, int heuristicRank, double millis, double heuristicFirstMillis) {
    static final int ALGO_BYTES = (int) CublasLt.MATMUL_ALGO_BYTES;

    TunedAlgorithm {
        if (algo.length() != 2 * ALGO_BYTES || !algo.chars().allMatch(c -> Character.digit(c, 16) >= 0)) {
            throw new IllegalArgumentException("an algorithm is " + ALGO_BYTES + " bytes in hex, got '" + algo + "'");
        }
        algo = algo.toLowerCase(Locale.ROOT);
        if (heuristicRank < 0) {
            throw new IllegalArgumentException("heuristic rank must be >= 0, got " + heuristicRank);
        }
    }

    static String hex(byte[] algo) {
        return HexFormat.of().formatHex(algo);
    }
}

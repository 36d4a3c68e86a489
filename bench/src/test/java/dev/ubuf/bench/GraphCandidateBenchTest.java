package dev.ubuf.bench;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Which of a GEMM's candidates the retune's screen passes on to the steady-state timing. */
class GraphCandidateBenchTest {
    @Test
    void cublasLtsFirstGoesOnWithTheOthersWithinThreePercentOfTheBest() {
        assertEquals(List.of(0, 2, 3), GraphCandidateBench.finalists(new double[]{1.10, 1.05, 1.00, 1.02, 1.2}));
    }

    @Test
    void atMostFourGoOnTheFastestFirst() {
        assertEquals(List.of(0, 1, 2, 4), GraphCandidateBench.finalists(
                new double[]{1.5, 1.000, 1.001, 1.003, 1.002, 1.004}));
    }

    @Test
    void candidatesThatDidNotRunNeverGoOn() {
        assertEquals(List.of(2), GraphCandidateBench.finalists(new double[]{Double.NaN, Double.NaN, 1.0, 1.5}));
        assertEquals(List.of(), GraphCandidateBench.finalists(new double[]{Double.NaN}));
    }

    @Test
    void theFirstAloneGoesOnWhenItIsTheBestByFar() {
        assertEquals(List.of(0), GraphCandidateBench.finalists(new double[]{1.0, 1.2, 1.3}));
    }
}

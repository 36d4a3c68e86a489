package dev.ubuf.timing;

/**
 * How many interleaved rounds a timing runs: {@code warmup} untimed rounds, then timed rounds enough for about
 * {@code msPerCandidate} of measured time per candidate (from the warm-up rounds' times), never fewer than
 * {@code minRounds} nor more than {@code maxRounds}. A short op is noisier per sample than a long one, so it gets more
 * samples; a long op still gets the minimum. With {@code msPerCandidate} 0 the count is fixed: {@code minRounds}.
 */
public record RoundBudget(int warmup, int minRounds, int maxRounds, double msPerCandidate) {
    public RoundBudget {
        if (warmup < 0 || minRounds < 1 || maxRounds < minRounds) {
            throw new IllegalArgumentException("need warmup >= 0 and 1 <= minRounds <= maxRounds, got " + warmup + ", "
                    + minRounds + ", " + maxRounds);
        }
        if (!(msPerCandidate >= 0) || Double.isInfinite(msPerCandidate)) {
            throw new IllegalArgumentException("msPerCandidate must be finite and >= 0, got " + msPerCandidate);
        }
        if (msPerCandidate > 0 && warmup < 1) {
            throw new IllegalArgumentException("a time budget needs at least one warm-up round to size the rounds by");
        }
    }

    /** Exactly {@code rounds} timed rounds after {@code warmup}: what a benchmark with a fixed iteration count asks. */
    public static RoundBudget fixed(int warmup, int rounds) {
        return new RoundBudget(warmup, rounds, rounds, 0);
    }

    /** Whether the count depends on the measured times. */
    public boolean scaled() {
        return msPerCandidate > 0;
    }

    /** The timed rounds for candidates whose warm-up time is {@code meanMs} on average (max over ranks). */
    public int rounds(double meanMs) {
        if (!scaled()) {
            return minRounds;
        }
        if (!(meanMs > 0) || Double.isInfinite(meanMs)) {
            return maxRounds; // an unmeasurably short candidate: as many samples as allowed
        }
        double wanted = Math.ceil(msPerCandidate / meanMs);
        return (int) Math.max(minRounds, Math.min(maxRounds, wanted));
    }
}

package dev.ubuf.tests;

import dev.ubuf.bootstrap.Bootstrap;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaContext;

import java.util.ArrayList;
import java.util.List;

/**
 * Several scenarios run one after another by the same ranks, so a job of child JVMs pays for its start, its
 * bootstrap and its CUDA context once, not once per scenario: the one-GPU test starts two JVMs a case, about 6.5 s
 * each on an H100, which made that class alone outlast a device call. After each part every rank prints the line
 * {@link ProcessRankMain} prints for a whole scenario ({@code rank R passed PART}), so a test can tell part by part
 * which ran. The first part that fails on a rank ends the batch there (its error names the part); the ranks of the
 * later parts print nothing.
 *
 * <p>Command-line words: {@code batch N}, then per part its word count and its own words.
 */
record ScenarioBatch(List<RankScenario> parts) implements RankScenario {
    static final String NAME = "batch";

    ScenarioBatch {
        parts = List.copyOf(parts);
        if (parts.isEmpty()) {
            throw new IllegalArgumentException("a batch needs at least one scenario");
        }
        if (parts.stream().anyMatch(p -> p instanceof ScenarioBatch)) {
            throw new IllegalArgumentException("batches do not nest");
        }
    }

    static ScenarioBatch parse(List<String> params) {
        if (params.isEmpty()) {
            throw new IllegalArgumentException("scenario 'batch' takes a count of parts, then each part's word count"
                    + " and words; got nothing");
        }
        int count = count(params, 0, "count of parts");
        List<RankScenario> parts = new ArrayList<>();
        int at = 1;
        for (int i = 0; i < count; i++) {
            if (at >= params.size()) {
                throw new IllegalArgumentException("scenario 'batch': part " + i + " of " + count + " is missing");
            }
            int words = count(params, at, "word count of part " + i);
            if (at + 1 + words > params.size()) {
                throw new IllegalArgumentException("scenario 'batch': part " + i + " has " + words + " words, only "
                        + (params.size() - at - 1) + " are left");
            }
            parts.add(RankScenario.parse(params.subList(at + 1, at + 1 + words)));
            at += 1 + words;
        }
        if (at != params.size()) {
            throw new IllegalArgumentException("scenario 'batch': " + (params.size() - at) + " words after its "
                    + count + " parts");
        }
        return new ScenarioBatch(parts);
    }

    private static int count(List<String> params, int i, String what) {
        try {
            int n = Integer.parseInt(params.get(i));
            if (n > 0) {
                return n;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException("scenario 'batch': the " + what + " must be a positive integer, got '"
                + params.get(i) + "'");
    }

    @Override
    public List<String> toArgs() {
        List<String> words = new ArrayList<>(List.of(NAME, Integer.toString(parts.size())));
        for (RankScenario p : parts) {
            List<String> own = p.toArgs();
            words.add(Integer.toString(own.size()));
            words.addAll(own);
        }
        return words;
    }

    @Override
    public boolean needsGpu() {
        return parts.stream().anyMatch(RankScenario::needsGpu);
    }

    @Override
    public void run(int rank, Bootstrap bootstrap, CudaContext ctx, UbufEnvironment env) throws Exception {
        for (int i = 0; i < parts.size(); i++) {
            RankScenario part = parts.get(i);
            try {
                part.run(rank, bootstrap, ctx, env);
            } catch (Exception | Error e) {
                throw new AssertionError("part " + (i + 1) + " of " + parts.size() + " (" + part + ") failed: " + e, e);
            }
            System.out.println(ProcessRankMain.passedLine(rank, part));
        }
    }

    @Override
    public String toString() {
        return "batch of " + parts.size() + " (" + parts.getFirst() + (parts.size() > 1 ? ", ..." : "") + ")";
    }
}

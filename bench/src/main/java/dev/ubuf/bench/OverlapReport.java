package dev.ubuf.bench;

import org.apache.commons.math3.stat.descriptive.DescriptiveStatistics;

import java.util.List;
import java.util.Map;

/**
 * Prints and records one shape's results of an overlap benchmark: the baselines ("gemm", "comm", the NCCL
 * collective alone, "nccl_seq") and each method variant, with % of ideal = max(gemm, comm) / time.
 *
 * @param op         "ag" or "rs"
 * @param commLabel  how the communication alone was done, for the printed line ("ce", "pull")
 * @param ncclKey    the candidate timing the NCCL collective alone ("nccl_ag", "nccl_rs")
 * @param extras     fields added to every record (copy mode, rank mode, iterations, ...)
 */
public record OverlapReport(String op, int tp, String dtype, long m, long k, long n, String commLabel, String ncclKey,
                            Map<String, Object> extras) {

    /** {@code labels} and {@code ran} are parallel: the variant asked for and the method that actually ran. */
    public void write(ResultsFile rf, Map<String, DescriptiveStatistics> st, List<String> labels, List<String> ran) {
        double gemmMs = st.get("gemm").getPercentile(50);
        double commMs = st.get("comm").getPercentile(50);
        double ncclMs = st.get(ncclKey).getPercentile(50);
        double seqMs = st.get("nccl_seq").getPercentile(50);
        double ideal = Math.max(gemmMs, commMs);
        System.out.printf("%s %s tp=%d M=%d K=%d N=%d: gemm %.3f comm(%s) %.3f %s %.3f nccl_seq %.3f ideal %.3f%n",
                op, dtype, tp, m, k, n, gemmMs, commLabel, commMs, ncclKey, ncclMs, seqMs, ideal);
        add(rf, "nccl_seq", "nccl_seq", st.get("nccl_seq"), gemmMs, commMs, ncclMs);
        for (int i = 0; i < labels.size(); i++) {
            DescriptiveStatistics d = st.get(labels.get(i));
            double ms = d.getPercentile(50);
            System.out.printf("   %-16s %.3f ms (p10 %.3f p90 %.3f)  %.1f%% of ideal  %.2fx vs nccl_seq%s%n",
                    labels.get(i), ms, d.getPercentile(10), d.getPercentile(90), 100 * ideal / ms, seqMs / ms,
                    labels.get(i).equals(ran.get(i)) ? "" : "  [" + ran.get(i) + "]");
            add(rf, labels.get(i), ran.get(i), d, gemmMs, commMs, ncclMs);
        }
    }

    private void add(ResultsFile rf, String method, String ran, DescriptiveStatistics d, double gemmMs, double commMs,
                     double ncclMs) {
        Map<String, Object> r = ResultsFile.overlapRecord(op, method, tp, dtype, m, n, k, d.getPercentile(50), gemmMs,
                commMs);
        r.put("p10_ms", d.getPercentile(10));
        r.put("p90_ms", d.getPercentile(90));
        r.put("ran", ran);
        r.put(ncclKey + "_ms", ncclMs);
        r.putAll(extras);
        r.put("timing", "interleaved");
        rf.add(r);
    }
}

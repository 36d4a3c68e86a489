package dev.ubuf.gemm;

import dev.ubuf.config.UbufEnvironment;
import java.nio.file.Path;
import java.util.Locale;

/**
 * Whether GEMMs are tuned and where the tuned choices are kept (see {@link GemmTuner}).
 *
 * @param enabled   time cuBLASLt's candidates and keep the fastest; false takes the heuristic's first, untimed
 * @param file      the cache file for every device, or null for one file per device and cuBLASLt version in
 *                  {@code directory}
 * @param directory where the per-device files live; null (with no {@code file}) keeps choices in memory only
 */
public record GemmTuning(boolean enabled, Path file, Path directory) {
    /** No tuning: every GEMM runs the heuristic's first algorithm, as cuBLASLt ranks them. */
    public static final GemmTuning OFF = new GemmTuning(false, null, null);

    /** UB_GEMM_TUNING, UB_GEMM_TUNING_FILE and the cache directory, as the edge read them. */
    public static GemmTuning from(UbufEnvironment env) {
        return new GemmTuning(env.gemmTuning(), env.gemmTuningFile(), env.cacheDirectory());
    }

    /**
     * The file that holds {@code device}'s choices: {@link #file()} when set, else
     * {@code gemm-tuning-<device>-sm<cc>-cublasLt<version>.tsv} in {@link #directory()}; null when neither is set.
     */
    Path fileFor(TuningDevice device) {
        if (file != null) {
            return file;
        }
        if (directory == null) {
            return null;
        }
        String name = device.name().toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9]+", "-").replaceAll("^-|-$", "");
        return directory.resolve("gemm-tuning-" + name + "-sm" + device.computeCapability() + "-cublasLt"
                + device.cublasLtVersion() + ".tsv");
    }
}

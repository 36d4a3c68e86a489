package dev.ubuf.cli;

import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;

/** Range checks of numeric options, failing with the option's name and the allowed values before any GPU work. */
final class OptionChecks {
    private OptionChecks() {
    }

    static ParameterException invalid(CommandSpec spec, String message) {
        return new ParameterException(spec.commandLine(), message);
    }

    static void atLeast(CommandSpec spec, String option, long value, long min) {
        if (value < min) {
            throw invalid(spec, option + " must be at least " + min + ", got " + value);
        }
    }

    static void within(CommandSpec spec, String option, long value, long min, long max) {
        if (value < min || value > max) {
            throw invalid(spec, option + " must be " + min + ".." + max + ", got " + value);
        }
    }

    /** Whether the user gave {@code option} (rather than picocli filling in its default). */
    /** Every size an even number of bytes from 2 to {@code maxGib} GiB (bf16 elements, within a buffer's reach). */
    static void evenByteSizes(CommandSpec spec, String option, java.util.List<Long> sizes, int maxGib) {
        for (long s : sizes) {
            if (s < 2 || s % 2 != 0 || s > ((long) maxGib << 30)) {
                throw invalid(spec, option + ": " + s + " must be an even number of bytes, 2.." + maxGib + " GiB");
            }
        }
    }

    static boolean given(CommandSpec spec, String option) {
        return spec.commandLine().getParseResult().hasMatchedOption(option);
    }
}

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
    static boolean given(CommandSpec spec, String option) {
        return spec.commandLine().getParseResult().hasMatchedOption(option);
    }
}

package dev.ubuf.cli;

import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Optional;

/**
 * The --out option of every benchmark. The file is only written at the end of a run, which can take many GPU
 * minutes, so {@link #checkWritable()} proves at the start that it can be: a bad path fails before any GPU work.
 */
final class ResultsOutput {
    @Spec(Spec.Target.MIXEE)
    CommandSpec spec;

    @Option(names = "--out", paramLabel = "FILE",
            description = "Also write the results to FILE (JSON, format in bench/results/README.md), creating its"
                    + " folders; checked for writing before any GPU work. Default: none, results are only printed.")
    Path file;

    /**
     * The results file, once its folders exist and it opened for writing; empty without --out. Opening does not
     * truncate an existing file, and a file the check created is removed again, so a run that fails later leaves
     * nothing behind.
     */
    Optional<Path> checkWritable() {
        if (file == null) {
            return Optional.empty();
        }
        requireWritable(spec, "--out", file);
        return Optional.of(file);
    }

    /**
     * Fails with one sentence naming {@code option} unless {@code file} can be written: creates its folders and
     * opens it for writing without truncating it; a file the check created is removed again.
     */
    static void requireWritable(CommandSpec spec, String option, Path file) {
        Path target = file.toAbsolutePath();
        if (Files.isDirectory(target)) {
            throw OptionChecks.invalid(spec, option + " " + file + " is a folder; give a file, e.g. " + option + " "
                    + file.resolve("results.json"));
        }
        try {
            Files.createDirectories(target.getParent());
        } catch (IOException e) {
            throw OptionChecks.invalid(spec, option + " " + file + ": cannot create its folder " + target.getParent()
                    + ": " + why(e));
        }
        boolean existed = Files.exists(target);
        try {
            FileChannel.open(target, StandardOpenOption.CREATE, StandardOpenOption.WRITE).close();
            if (!existed) {
                Files.delete(target);
            }
        } catch (IOException e) {
            throw OptionChecks.invalid(spec, option + " " + file + " cannot be written: " + why(e));
        }
    }

    private static String why(IOException e) {
        return switch (e) {
            case AccessDeniedException a -> "permission denied (" + a.getFile() + ")";
            case FileAlreadyExistsException f -> f.getFile() + " is a file, not a folder";
            case NotDirectoryException n -> n.getFile() + " is not a folder";
            case NoSuchFileException n -> n.getFile() + " does not exist";
            case FileSystemException f when f.getReason() != null -> f.getReason() + " (" + f.getFile() + ")";
            default -> e.toString();
        };
    }
}

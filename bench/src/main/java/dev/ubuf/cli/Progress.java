package dev.ubuf.cli;

import me.tongfei.progressbar.ConsoleProgressBarConsumer;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;

import java.io.Console;
import java.io.PrintStream;

/**
 * A long command's progress: a bar on stderr where a person watches a terminal, nothing otherwise. The bar redraws
 * its line with carriage returns, from a thread of its own too, which in a log file, a CI log or a pipe comes out as
 * fragments between the command's lines; there the command's own line per iteration (or shape) shows the progress.
 */
final class Progress implements AutoCloseable {
    private final ProgressBar bar;

    private Progress(ProgressBar bar) {
        this.bar = bar;
    }

    /** {@code steps} steps of {@code task}: a bar on System.err if {@link #interactive()}, else nothing. */
    static Progress of(String task, long steps) {
        return of(task, steps, interactive(), System.err);
    }

    /** {@code steps} steps of {@code task}: a bar on {@code to} on a {@code terminal}, else nothing. */
    static Progress of(String task, long steps, boolean terminal, PrintStream to) {
        if (!terminal) {
            return new Progress(null);
        }
        return new Progress(new ProgressBarBuilder().setTaskName(task).setInitialMax(steps)
                .setStyle(ProgressBarStyle.ASCII).setConsumer(new ConsoleProgressBarConsumer(to)).build());
    }

    /**
     * Whether the output goes to an interactive terminal. Since JDK 22 {@link System#console()} is not null when
     * redirected; {@link Console#isTerminal()} tells (stdin and stdout both terminals).
     */
    static boolean interactive() {
        Console c = System.console();
        return c != null && c.isTerminal();
    }

    void step() {
        if (bar != null) {
            bar.step();
        }
    }

    @Override
    public void close() {
        if (bar != null) {
            bar.close();
        }
    }
}

package dev.ubuf.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

import java.io.OutputStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Callable;

/** The `ubuf` command: `ubuf info`, `ubuf bench ...`, `ubuf help [COMMAND]`. */
@Command(name = "ubuf", mixinStandardHelpOptions = true, version = UbufCli.VERSION,
        description = "Userbuffers-style communication/GEMM overlap for tensor parallelism on the JVM.",
        subcommands = {InfoCommand.class, BenchCommand.class, PlanCommand.class, DemoCommand.class, CommandLine.HelpCommand.class},
        footer = {"", "Exit codes: 0 done, 2 bad input or no usable GPU (said in one sentence), 1 anything else."})
public final class UbufCli implements Callable<Integer> {
    static final String VERSION = "ubuf 0.1.0";

    @Spec
    CommandSpec spec;

    /** Without a command there is nothing to do: the usage, and the exit code of a usage error. */
    @Override
    public Integer call() {
        spec.commandLine().usage(spec.commandLine().getErr());
        return CliErrors.USAGE;
    }

    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err, CommandLine.defaultFactory()));
    }

    /**
     * What {@link #main} runs before it exits: {@code ubuf ARGS} writing to {@code stdout} and {@code stderr}, both
     * flushed before this returns or throws. System.exit flushes nothing, and the writers' autoflush covers println
     * and printf only: a command that ends with print (info's report) would leave a redirected stdout empty.
     */
    static int run(String[] args, OutputStream stdout, OutputStream stderr, CommandLine.IFactory commands) {
        PrintWriter out = new PrintWriter(stdout, true, StandardCharsets.UTF_8);
        PrintWriter err = new PrintWriter(stderr, true, StandardCharsets.UTF_8);
        try {
            return run(args, out, err, commands);
        } finally {
            out.flush();
            err.flush();
        }
    }

    /** Runs {@code ubuf ARGS} with its output on {@code out} and {@code err}; returns the exit code. */
    public static int run(String[] args, PrintWriter out, PrintWriter err) {
        return run(args, out, err, CommandLine.defaultFactory());
    }

    /** As {@link #run(String[], PrintWriter, PrintWriter)}, the command objects made by {@code commands}. */
    static int run(String[] args, PrintWriter out, PrintWriter err, CommandLine.IFactory commands) {
        CommandLine cli = new CommandLine(new UbufCli(), commands);
        CliErrors errors = new CliErrors();
        cli.setOut(out);
        cli.setErr(err);
        cli.setParameterExceptionHandler(errors);
        cli.setExecutionExceptionHandler(errors);
        return cli.execute(args);
    }
}

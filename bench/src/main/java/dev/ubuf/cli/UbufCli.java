package dev.ubuf.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The `ubuf` command: `ubuf info`, `ubuf bench ...`. */
@Command(name = "ubuf", mixinStandardHelpOptions = true, version = "ubuf 0.1.0",
        description = "Userbuffers-style communication/GEMM overlap for tensor parallelism on the JVM.",
        subcommands = {InfoCommand.class, BenchCommand.class})
public final class UbufCli implements Runnable {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }

    public static void main(String[] args) {
        CommandLine cli = new CommandLine(new UbufCli());
        // Bad input is a sentence and exit code 2, not a stack trace; real failures keep theirs.
        cli.setExecutionExceptionHandler((e, cmd, parsed) -> {
            if (e instanceof IllegalArgumentException || e instanceof dev.ubuf.cuda.CudaUnavailableException) {
                cmd.getErr().println("ubuf: " + e.getMessage());
                return 2;
            }
            throw e;
        });
        System.exit(cli.execute(args));
    }
}

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
        System.exit(new CommandLine(new UbufCli()).execute(args));
    }
}

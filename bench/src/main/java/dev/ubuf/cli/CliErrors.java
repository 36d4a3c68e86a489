package dev.ubuf.cli;

import dev.ubuf.cuda.CudaUnavailableException;
import picocli.CommandLine;
import picocli.CommandLine.IExecutionExceptionHandler;
import picocli.CommandLine.IParameterExceptionHandler;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParseResult;
import picocli.CommandLine.UnmatchedArgumentException;

import java.io.PrintWriter;

/**
 * How the CLI ends on bad input: one sentence naming the option and what it accepts, a pointer to the command's
 * help, and exit code 2. No usage dump (it would push the sentence off the screen) and no stack trace.
 */
final class CliErrors implements IParameterExceptionHandler, IExecutionExceptionHandler {
    static final int USAGE = 2;

    @Override
    public int handleParseException(ParameterException e, String[] args) {
        CommandLine cmd = e.getCommandLine();
        PrintWriter err = cmd.getErr();
        err.println(cmd.getCommandSpec().qualifiedName() + ": " + e.getMessage());
        UnmatchedArgumentException.printSuggestions(e, err);
        err.println("Run '" + cmd.getCommandSpec().qualifiedName() + " --help' for its options.");
        return USAGE;
    }

    /**
     * Bad input found while running (an environment variable such as UB_TIMEOUT) and a machine without a usable GPU
     * are sentences with exit code 2; anything else keeps its stack trace.
     */
    @Override
    public int handleExecutionException(Exception e, CommandLine cmd, ParseResult parsed) throws Exception {
        if (e instanceof IllegalArgumentException || e instanceof CudaUnavailableException) {
            cmd.getErr().println(cmd.getCommandSpec().qualifiedName() + ": " + e.getMessage());
            return USAGE;
        }
        throw e;
    }
}

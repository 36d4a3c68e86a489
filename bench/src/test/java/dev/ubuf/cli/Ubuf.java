package dev.ubuf.cli;

import java.io.PrintWriter;
import java.io.StringWriter;

/** Runs the `ubuf` command in this JVM, as bin/ubuf would, and keeps what it printed. */
record Ubuf(int exitCode, String out, String err) {
    static Ubuf run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = UbufCli.run(args, new PrintWriter(out, true), new PrintWriter(err, true));
        return new Ubuf(code, out.toString(), err.toString());
    }

    @Override
    public String toString() {
        return "exit " + exitCode + "\n--- stdout\n" + out + "\n--- stderr\n" + err;
    }
}

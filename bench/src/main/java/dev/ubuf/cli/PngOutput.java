package dev.ubuf.cli;

import java.io.PrintWriter;
import java.nio.file.Path;

/**
 * A PNG drawn beside data a command has written already (a trace, a results file): failing to draw it is a warning
 * naming the cause, never the command's failure, since the data holds everything the picture shows and the run that
 * produced it (minutes of GPU time) is over. Java2D can fail on a GPU node for want of a display library or the like.
 */
final class PngOutput {
    /** Draws and writes the PNG. */
    @FunctionalInterface
    interface Drawing {
        void write() throws Exception;
    }

    private PngOutput() {
    }

    /**
     * Runs {@code drawing}; on failure prints "COMMAND: warning: ..." naming {@code png} and the cause on {@code err}
     * and returns false. A VirtualMachineError (out of memory) is no drawing problem and propagates.
     */
    static boolean write(String command, Path png, PrintWriter err, Drawing drawing) {
        try {
            drawing.write();
            return true;
        } catch (Exception | LinkageError | java.awt.AWTError e) {
            err.println(command + ": warning: could not draw " + png + ": " + cause(e) + " (the data is written; the"
                    + " exit code is unchanged)");
            err.flush();
            return false;
        }
    }

    /** {@code e} and its root cause, where that is another: "X: msg (caused by Y: msg)". */
    static String cause(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        return root == e ? e.toString() : e + " (caused by " + root + ")";
    }
}

package dev.ubuf.launch;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * Copies a child's output stream to one of ours, line by line, each line prefixed (e.g. "[rank 3] ") and written in
 * one call, so lines of different ranks never interleave inside a line. Works on bytes: a line break (0x0A) never
 * occurs inside a multi-byte UTF-8 character, so characters are never split. A final line without a newline gets
 * one; an endless line is cut every {@value #MAX_LINE_BYTES} bytes.
 */
final class LinePrefixer implements Runnable {
    static final int MAX_LINE_BYTES = 1 << 20;

    private final InputStream source;
    private final PrintStream target;
    private final byte[] prefix;

    LinePrefixer(InputStream source, PrintStream target, String prefix) {
        this.source = source;
        this.target = target;
        this.prefix = prefix.getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public void run() {
        ByteArrayOutputStream line = new ByteArrayOutputStream(256);
        byte[] buffer = new byte[8192];
        try (InputStream in = source) {
            int n;
            while ((n = in.read(buffer)) > 0) {
                for (int i = 0; i < n; i++) {
                    byte b = buffer[i];
                    if (b == '\n') {
                        emit(line);
                    } else {
                        line.write(b);
                        if (line.size() >= MAX_LINE_BYTES) {
                            emit(line);
                        }
                    }
                }
            }
        } catch (IOException e) {
            // the child is gone; emit what we have
        }
        if (line.size() > 0) {
            emit(line);
        }
    }

    private void emit(ByteArrayOutputStream line) {
        byte[] whole = new byte[prefix.length + line.size() + 1];
        System.arraycopy(prefix, 0, whole, 0, prefix.length);
        byte[] content = line.toByteArray();
        System.arraycopy(content, 0, whole, prefix.length, content.length);
        whole[whole.length - 1] = '\n';
        line.reset();
        // PrintStream.write(byte[], int, int) holds the stream's lock for the whole call: one line, one piece.
        target.write(whole, 0, whole.length);
        target.flush();
    }
}

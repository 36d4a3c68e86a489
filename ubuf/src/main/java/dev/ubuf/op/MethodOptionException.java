package dev.ubuf.op;

/** A method variant's options are wrong whatever the shape: an unknown key, a bad value, a malformed "key=value". */
public final class MethodOptionException extends IllegalArgumentException {
    public MethodOptionException(String message) {
        super(message);
    }
}

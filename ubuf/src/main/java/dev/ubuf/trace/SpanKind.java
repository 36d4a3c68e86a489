package dev.ubuf.trace;

import java.util.Locale;

/** What a traced span did: the category a timeline colours it by and Chrome's trace files name ({@code cat}). */
public enum SpanKind {
    /** A cuBLASLt GEMM. */
    GEMM,
    /** A copy between buffers (copy engine or SM copy), within a rank or to or from a peer. */
    COPY,
    /** A stream waiting for a peer's flag. */
    WAIT,
    /** A flag written to a peer. */
    SIGNAL,
    /** A sum of partials (the reduction of a reduce-scatter). */
    REDUCE,
    /** Any other kernel: bias, LayerNorm, activation, loss, optimizer. */
    KERNEL,
    /** An NCCL collective. */
    NCCL,
    /** An event recorded or waited for between a plan's streams. */
    EVENT,
    /** A whole overlapped op as its caller's stream sees it: from its fork to its join. */
    OP;

    /** The lower-case name trace files use: "gemm", "copy", ... */
    public String id() {
        return name().toLowerCase(Locale.ROOT);
    }
}

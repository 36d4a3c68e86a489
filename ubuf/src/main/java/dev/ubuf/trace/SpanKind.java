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
    OP,
    /**
     * The host issuing a span's work, from opening the span to closing it, on the host's clock from the step's start
     * (taken when the origin was recorded on the idle caller stream, so it lines up with the GPU's clock to within a
     * launch's latency). Not GPU work: a GPU span that starts as soon as its host span does waited for the host.
     */
    HOST;

    /** The lower-case name trace files use: "gemm", "copy", ... */
    public String id() {
        return name().toLowerCase(Locale.ROOT);
    }
}

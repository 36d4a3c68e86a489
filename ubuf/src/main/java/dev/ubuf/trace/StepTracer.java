package dev.ubuf.trace;

import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaEvent;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.resource.Closer;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Traces one step of one rank with CUDA events: {@link #start} records the step's origin on the caller's stream,
 * {@link #span} brackets work issued on any stream with a pair of timing events, {@link #op} lets an overlapped op
 * time each of its plan steps on its own streams ({@link TracedOp#enableTrace()}), and {@link #collect()} (after
 * the step's work completed) turns it all into a {@link RankTrace}, every time measured from the origin with
 * {@code cuEventElapsedTime}: GPU time, not host time, so spans on different streams are comparable. Beside them, on
 * a stream of its own ({@link #HOST_STREAM}), the host's time issuing each span ({@link SpanKind#HOST}), so a GPU
 * span that waited for its host shows.
 *
 * <p>A step started on a stream that is capturing a CUDA graph is traced inside the graph: every event is recorded
 * as an event record node ({@link CudaEvent#recordTimestamp}), so each replay of the graph re-times the whole step
 * and {@link #collect()} after a replay gives the GPU's own schedule of it, without host spans (the host issued the
 * spans while capturing, not while the GPU ran them). Keep the tracer open while the graph may be replayed.
 *
 * <p>Tracing costs two event records per span (and per plan step of a traced op), so trace a step of its own, not
 * a timed one. A tracer made without op steps ({@link #StepTracer(CudaContext, int, boolean)}) times each op as one
 * span on its caller's stream instead: two events an op, so its schedule is nearer the untraced one. One tracer
 * serves one step at a time on one thread, like the rank's layers; its events are made on first use, reused by the
 * next step and freed by {@link #close()}. Making them (and an op's own, at its first traced call) costs host time
 * inside the step, so keep the trace of a step that follows one traced step.
 */
public final class StepTracer implements Tracer, AutoCloseable {
    /** One span: its GPU events, and the host's clock when it was opened and closed ({@code hostNs}). */
    private record Bracket(String stream, String name, SpanKind kind, Map<String, Object> args, CudaEvent start,
                           CudaEvent end, long[] hostNs) {
    }

    /** The stream name of the host's spans ({@link SpanKind#HOST}) in a trace. */
    public static final String HOST_STREAM = "host";

    /** One of an op's own streams (ops compare by identity). */
    private record StreamKey(TracedOp op, int stream) {
    }

    private record OpCall(String name, TracedOp op, String stream, Bracket bracket) {
    }

    private final CudaContext context;
    private final int rank;
    private final CudaEvent origin;
    /** Timing events made so far, reused step after step; the first {@link #used} belong to this step. */
    private final List<CudaEvent> pool = new ArrayList<>();
    private int used;
    private final Map<CudaStream, String> names = new IdentityHashMap<>();
    private final List<Bracket> brackets = new ArrayList<>();
    private final List<OpCall> ops = new ArrayList<>();
    private boolean started;
    /** Whether this step is being captured as a CUDA graph: its events are the graph's, its host times not the GPU's. */
    private boolean captured;
    /** The host's clock when the origin was recorded. */
    private long originNs;
    private final Closer closer;
    /** Whether ops time each of their plan steps ({@link #op}). */
    private final boolean opSteps;

    /** A tracer whose ops time each of their plan steps. */
    public StepTracer(CudaContext context, int rank) {
        this(context, rank, true);
    }

    /** A tracer whose ops time each of their plan steps ({@code opSteps}), or only their calls, as one span each. */
    public StepTracer(CudaContext context, int rank, boolean opSteps) {
        this.context = Objects.requireNonNull(context, "context");
        this.rank = rank;
        this.opSteps = opSteps;
        this.closer = new Closer("the step tracer of rank " + rank);
        this.origin = closer.register("origin", context.makeCurrent().createEvent(true));
    }

    public int rank() {
        return rank;
    }

    /** Names {@code stream} in the trace ("caller", "side", ...); unnamed streams are called "stream N". */
    @Override
    public void nameStream(CudaStream stream, String name) {
        names.put(Objects.requireNonNull(stream, "stream"), Objects.requireNonNull(name, "name"));
    }

    /**
     * Starts a step: forgets the previous one and records the origin on {@code caller}, the stream the step's work
     * is issued from. Every time of the step is measured from here, so record it where the ranks start together
     * (after a barrier, with the stream idle), which is how the ranks' timelines are aligned.
     */
    public void start(CudaStream caller) {
        requireOpen();
        brackets.clear();
        ops.clear();
        used = 0;
        context.makeCurrent();
        streamName(caller);
        captured = caller.isCapturing();
        origin.recordTimestamp(caller);
        originNs = System.nanoTime();
        started = true;
    }

    /**
     * Opens a span of {@code kind} on {@code stream}: what is issued on the stream until the returned scope is
     * closed. {@code args} (may be null) is the span's detail in trace files.
     */
    @Override
    public Scope span(CudaStream stream, String name, SpanKind kind, Map<String, Object> args) {
        Bracket b = open(stream, name, kind, args);
        return () -> close(b, stream);
    }

    /**
     * Opens a span for a call of {@code op} on {@code stream} (issue the call, then close the scope): the op times
     * each of its steps from this step's origin, on its own streams ("NAME: comm 1", ...), and the caller's stream
     * shows the op from fork to join. An op called twice in one step shows its last call only. Without op steps the
     * op is that one span, whatever streams its steps run on.
     */
    @Override
    public Scope op(CudaStream stream, String name, TracedOp op) {
        String label = name + " (" + op.label() + ")";
        Map<String, Object> args = Map.of("op", op.traceKey());
        if (!opSteps) {
            return span(stream, label, SpanKind.OP, args);
        }
        op.enableTrace();
        Bracket b = open(stream, label, SpanKind.OP, args);
        ops.add(new OpCall(name, op, b.stream(), b));
        return () -> close(b, stream);
    }

    private void close(Bracket b, CudaStream stream) {
        b.end().recordTimestamp(stream);
        b.hostNs()[1] = System.nanoTime();
    }

    private Bracket open(CudaStream stream, String name, SpanKind kind, Map<String, Object> args) {
        requireStarted();
        context.makeCurrent();
        long opened = System.nanoTime();
        Bracket b = new Bracket(streamName(stream), name, kind, args, event(), event(), new long[]{opened, opened});
        brackets.add(b);
        b.start().recordTimestamp(stream);
        return b;
    }

    private CudaEvent event() {
        if (used == pool.size()) {
            pool.add(closer.register("event " + pool.size(), context.createEvent(true)));
        }
        return pool.get(used++);
    }

    private String streamName(CudaStream s) {
        return names.computeIfAbsent(s, k -> "stream " + names.size());
    }

    /**
     * This step's spans, every time in µs from the origin; call after everything the step issued completed (the
     * caller's stream synchronized). The streams are listed named ones first, then each op's in call order.
     */
    public RankTrace collect() {
        requireStarted();
        context.makeCurrent();
        List<String> streams = new ArrayList<>();
        List<Span> spans = new ArrayList<>();
        // An op whose steps run on the caller's stream (the NCCL reference) shows them there instead of its bracket.
        Map<Bracket, List<TraceSpan>> stepsOf = new IdentityHashMap<>();
        for (OpCall c : ops) {
            stepsOf.put(c.bracket(), c.op().trace(origin));
        }
        List<Span> host = new ArrayList<>();
        for (Bracket b : brackets) {
            add(streams, b.stream());
            if (!captured) {
                host.add(new Span(HOST_STREAM, b.name(), SpanKind.HOST, (b.hostNs()[0] - originNs) / 1e3,
                        (b.hostNs()[1] - originNs) / 1e3, Map.of("stream", b.stream())));
            }
            List<TraceSpan> steps = stepsOf.get(b);
            if (steps != null && steps.stream().anyMatch(t -> t.role().equals("caller"))) {
                continue;
            }
            spans.add(new Span(b.stream(), b.name(), b.kind(), us(b.start()), us(b.end()), b.args()));
        }
        Map<String, StreamKey> owners = new LinkedHashMap<>();
        for (OpCall c : ops) {
            for (TraceSpan t : stepsOf.get(c.bracket())) {
                String stream = c.stream();
                if (!t.role().equals("caller")) {
                    // Two ops of one name (two layers' fc1_fprop) run on different streams: keep their rows apart.
                    String base = c.name() + ": " + t.role() + " " + t.stream();
                    StreamKey key = new StreamKey(c.op(), t.stream());
                    stream = base;
                    for (int n = 2; owners.containsKey(stream) && !owners.get(stream).equals(key); n++) {
                        stream = base + " #" + n;
                    }
                    owners.put(stream, key);
                }
                add(streams, stream);
                spans.add(new Span(stream, t.what(), t.kind(), t.startMs() * 1000, t.endMs() * 1000, t.args()));
            }
        }
        if (!host.isEmpty()) {
            add(streams, HOST_STREAM);
            spans.addAll(host);
        }
        return new RankTrace(rank, streams, spans);
    }

    private static void add(List<String> streams, String s) {
        if (!streams.contains(s)) {
            streams.add(s);
        }
    }

    private double us(CudaEvent e) {
        return e.elapsedMillisSince(origin) * 1000.0;
    }

    private void requireStarted() {
        requireOpen();
        if (!started) {
            throw new IllegalStateException("the step tracer of rank " + rank + " has not started a step");
        }
    }

    private void requireOpen() {
        closer.requireOpen();
    }

    /** Frees the events; the traced work must have completed. */
    @Override
    public void close() {
        if (!closer.isClosed()) {
            context.makeCurrent();
            closer.close();
        }
    }
}

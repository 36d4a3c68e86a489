package dev.ubuf.layers.tp;

import dev.ubuf.layers.config.GemmName;
import dev.ubuf.resource.Closer;

import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;

/**
 * A layer's ops, one per (GEMM name, tokens): made on first use and reused, closed together in reverse order of
 * making. Making an op is collective, so every rank must ask for the same keys in the same order, which a layer
 * does by running the same calls on every rank. Tokens are checked before anything is made.
 *
 * @param <T> the op type ({@link dev.ubuf.op.OverlapOp} on a GPU; anything closeable in tests)
 */
public final class OpTable<T extends AutoCloseable> implements AutoCloseable {
    /** Which op: the GEMM whose communication it carries and the token count it was made for. */
    public record Key(GemmName gemm, long tokens) {
    }

    private final int tp;
    private final long maxTokens;
    private final Map<Key, T> ops = new LinkedHashMap<>();
    /** The ops made and not yet closed, by identity: {@link #discard} closes some before the table closes. */
    private final Set<T> open = Collections.newSetFromMap(new IdentityHashMap<>());
    private final Closer closer = new Closer("the layer's ops");

    public OpTable(int tp, long maxTokens) {
        checkTokens(maxTokens, maxTokens, tp);
        this.tp = tp;
        this.maxTokens = maxTokens;
    }

    /**
     * Tokens a call may use: 1..maxTokens and a multiple of tp (each rank holds tokens/tp rows of the
     * sequence-parallel activations).
     */
    public static void checkTokens(long tokens, long maxTokens, int tp) {
        if (tp < 1) {
            throw new IllegalArgumentException("tp must be >= 1, got " + tp);
        }
        if (tokens < 1 || tokens > maxTokens) {
            throw new IllegalArgumentException("tokens = " + tokens + " is outside 1.." + maxTokens
                    + " (the maximum the layer was made for)");
        }
        if (tokens % tp != 0) {
            throw new IllegalArgumentException("tokens = " + tokens + " is not a multiple of tp = " + tp
                    + ": every rank holds tokens/tp rows");
        }
    }

    /** The op of {@code gemm} for {@code tokens}, made by {@code make} on first use (collective then). */
    public T get(GemmName gemm, long tokens, Supplier<T> make) {
        if (closer.isClosed()) {
            throw new IllegalStateException("the layer's ops are closed");
        }
        checkTokens(tokens, maxTokens, tp);
        Key key = new Key(gemm, tokens);
        T op = ops.get(key);
        if (op == null) {
            T made = make.get();
            open.add(made);
            closer.onClose(gemm.teName() + " at " + tokens + " tokens", () -> {
                if (open.remove(made)) {
                    made.close();
                }
            });
            ops.put(key, made);
            op = made;
        }
        return op;
    }

    /**
     * Closes the ops of the GEMMs in {@code gemms} (collective for overlap ops: every rank discards the same ones),
     * last made first ({@link Closer}: the first failure is thrown after all); the next {@link #get} of such a key
     * makes its op again.
     */
    public void discard(Set<GemmName> gemms) {
        Closer discarded = new Closer("the layer's discarded ops");
        for (var it = ops.entrySet().iterator(); it.hasNext(); ) {
            var e = it.next();
            if (!gemms.contains(e.getKey().gemm())) {
                continue;
            }
            it.remove();
            if (open.remove(e.getValue())) {
                discarded.register(e.getKey().gemm().teName() + " at " + e.getKey().tokens() + " tokens",
                        e.getValue());
            }
        }
        discarded.close();
    }

    /** The keys made so far, in order of making. */
    public List<Key> keys() {
        return List.copyOf(ops.keySet());
    }

    public long maxTokens() {
        return maxTokens;
    }

    /** Closes every op (collective for overlap ops), last made first; the first failure is thrown after all. */
    @Override
    public void close() {
        ops.clear();
        closer.close();
    }
}

package dev.ubuf.plan;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Happens-before race detection for the host executor (vector clocks, FastTrack-style shadow per element).
 * Threads are the streams of every rank plus one "caller" thread per rank (the caller's stream: it writes inputs
 * before a call, forks the plan's streams, joins them and reads the outputs). Edges: stream order, events,
 * signals (a waiter acquires exactly the signal that completed its count, not whatever the flag shows later) and
 * the fork/join of each call. Two accesses to one element, at least one a write, that no edge orders are a race:
 * a missing dependency in the plan, reported whatever interleaving happened to run.
 */
final class HostRaceDetector {
    /** What ran at one epoch of one thread, kept to name both sides of a race. */
    record Tag(int rank, String thread, long call, int stepIndex, Object what) {
        @Override
        public String toString() {
            return (stepIndex >= 0 ? "step #" + stepIndex + " " : "") + what + " [rank " + rank + " " + thread
                    + ", call " + call + "]";
        }
    }

    /** Access history of one rank's instance of one matrix. */
    static final class Shadow {
        final String name;
        final long cols;
        final int[] writeThread;
        final int[] writeClock;
        final int[] readClock; // element * threads + thread; 0 = no read since the last write

        Shadow(String name, long rows, long cols, int threads) {
            this.name = name;
            this.cols = cols;
            int n = Math.toIntExact(rows * cols);
            this.writeThread = new int[n];
            this.writeClock = new int[n];
            this.readClock = new int[Math.multiplyExact(n, threads)];
            Arrays.fill(writeThread, -1);
        }
    }

    private final int threads;
    private final int[][] clock;
    private final List<List<Tag>> tags = new ArrayList<>();
    private final Map<String, Shadow> shadows = new HashMap<>();

    HostRaceDetector(int threads) {
        this.threads = threads;
        this.clock = new int[threads][threads];
        for (int t = 0; t < threads; t++) {
            clock[t][t] = 1;
            tags.add(new ArrayList<>());
        }
    }

    Shadow shadow(int rank, BufferRole role, MatrixSpec spec) {
        return shadows.computeIfAbsent(rank + "/" + role,
                k -> new Shadow(role + " of rank " + rank, spec.rows(), spec.cols(), threads));
    }

    /** Names what thread t does at its current epoch (call before its accesses). */
    void begin(int t, Tag tag) {
        List<Tag> list = tags.get(t);
        int c = clock[t][t];
        while (list.size() < c) {
            list.add(null);
        }
        list.set(c - 1, tag);
    }

    /** Ends thread t's current epoch: what it does next is a new epoch. */
    void end(int t) {
        clock[t][t]++;
    }

    int[] release(int t) {
        return clock[t].clone();
    }

    void acquire(int t, int[] released) {
        int[] c = clock[t];
        for (int u = 0; u < threads; u++) {
            if (released[u] > c[u]) {
                c[u] = released[u];
            }
        }
    }

    /** Writes outside any thread (the test setting tensors while nothing runs): ordered before everything. */
    void quiescentWrite(Shadow s, Region r) {
        forEach(s, r, idx -> {
            s.writeThread[idx] = -1;
            s.writeClock[idx] = 0;
            Arrays.fill(s.readClock, idx * threads, (idx + 1) * threads, 0);
        });
    }

    void read(int t, Shadow s, Region r) {
        int[] c = clock[t];
        forEach(s, r, idx -> {
            int w = s.writeThread[idx];
            if (w >= 0 && s.writeClock[idx] > c[w]) {
                throw race(s, idx, "written by", tag(w, s.writeClock[idx]), "read by", tag(t, c[t]));
            }
            s.readClock[idx * threads + t] = c[t];
        });
    }

    void write(int t, Shadow s, Region r) {
        int[] c = clock[t];
        forEach(s, r, idx -> {
            int w = s.writeThread[idx];
            if (w >= 0 && s.writeClock[idx] > c[w]) {
                throw race(s, idx, "written by", tag(w, s.writeClock[idx]), "overwritten by", tag(t, c[t]));
            }
            int base = idx * threads;
            for (int u = 0; u < threads; u++) {
                int rc = s.readClock[base + u];
                if (rc > c[u]) {
                    throw race(s, idx, "read by", tag(u, rc), "overwritten by", tag(t, c[t]));
                }
            }
            Arrays.fill(s.readClock, base, base + threads, 0);
            s.writeThread[idx] = t;
            s.writeClock[idx] = c[t];
        });
    }

    private Tag tag(int t, int c) {
        List<Tag> list = tags.get(t);
        return c - 1 < list.size() ? list.get(c - 1) : null;
    }

    private IllegalStateException race(Shadow s, int idx, String firstVerb, Tag first, String secondVerb, Tag second) {
        return new IllegalStateException("data race on " + s.name + " element [" + idx / s.cols + "][" + idx % s.cols
                + "]: " + firstVerb + " " + first + " and " + secondVerb + " " + second
                + ", with no event, signal or call boundary ordering them (a missing dependency in the plan)");
    }

    private interface ElementAction {
        void at(int idx);
    }

    private static void forEach(Shadow s, Region r, ElementAction action) {
        for (long i = r.row(); i < r.endRow(); i++) {
            int base = Math.toIntExact(i * s.cols);
            for (long j = r.col(); j < r.endCol(); j++) {
                action.at(base + (int) j);
            }
        }
    }
}

package dev.ubuf.ag;

import dev.ubuf.plan.PlanBuilder;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.plan.StreamRole;

/**
 * The all-to-all push of BULK and ONESHOT. A flag has one sender, so a rank has one DATA and one CREDIT flag per
 * distance d = 1..tp-1: DATA flag d-1 receives from rank r-d, CREDIT flag (tp-1)+(d-1) from rank r+d.
 */
final class Pushes {
    private Pushes() {
    }

    static int data(int distance) {
        return distance - 1;
    }

    static int credit(int tp, int distance) {
        return tp - 1 + distance - 1;
    }

    static int[] commStreams(PlanBuilder b, AgLayout l) {
        int[] s = new int[Math.max(1, Math.min(l.options.commStreams(), l.tp - 1))];
        for (int i = 0; i < s.length; i++) {
            s[i] = b.stream(StreamRole.COMM);
        }
        return s;
    }

    /** Declares the flags, hands out this call's credits, and pushes the shard to r+1, r+2, ... after theirs. */
    static void pushToAll(PlanBuilder b, AgLayout l, int[] comm) {
        int tp = l.tp;
        for (int d = 1; d < tp; d++) {
            b.flag(1);
        }
        for (int d = 1; d < tp; d++) {
            b.flag(1);
        }
        for (int d = 1; d < tp; d++) {
            b.add(new PlanStep.Signal(comm[0], l.next(-d), credit(tp, d)));
        }
        for (int d = 1; d < tp; d++) {
            int s = comm[(d - 1) % comm.length];
            int peer = l.next(d);
            b.add(new PlanStep.WaitSignal(s, credit(tp, d), 1));
            b.add(new PlanStep.Copy(s, l.shard(), l.ubuf(peer, l.rank, 1)));
            b.add(new PlanStep.Signal(s, peer, data(d)));
        }
    }

    static void awaitAll(PlanBuilder b, AgLayout l, int stream) {
        for (int d = 1; d < l.tp; d++) {
            b.add(new PlanStep.WaitSignal(stream, data(d), 1));
        }
    }
}

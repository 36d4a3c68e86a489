package dev.ubuf.layers.tp;

import dev.ubuf.layers.config.GemmName;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** One op per (GEMM name, tokens): made on first use, reused, token counts checked first, closed last-made first. */
class OpTableTest {
    /** A stand-in op that records its closing. */
    record FakeOp(String name, List<String> closed) implements AutoCloseable {
        @Override
        public void close() {
            closed.add(name);
        }
    }

    @Test
    void anOpIsMadeOncePerGemmAndTokenCountAndReused() {
        List<String> closed = new ArrayList<>();
        int[] made = {0};
        try (OpTable<FakeOp> t = new OpTable<>(2, 1024)) {
            FakeOp a = t.get(GemmName.FC1_FPROP, 1024, () -> new FakeOp("fc1_fprop@" + made[0]++, closed));
            assertSame(a, t.get(GemmName.FC1_FPROP, 1024, () -> new FakeOp("never", closed)));
            FakeOp b = t.get(GemmName.FC1_FPROP, 512, () -> new FakeOp("fc1_fprop@" + made[0]++, closed));
            t.get(GemmName.FC2_FPROP, 512, () -> new FakeOp("fc2_fprop@" + made[0]++, closed));
            assertEquals(3, made[0]);
            assertTrue(a != b, "another token count is another op");
            assertEquals(List.of(new OpTable.Key(GemmName.FC1_FPROP, 1024), new OpTable.Key(GemmName.FC1_FPROP, 512),
                    new OpTable.Key(GemmName.FC2_FPROP, 512)), t.keys());
        }
        assertEquals(List.of("fc2_fprop@2", "fc1_fprop@1", "fc1_fprop@0"), closed, "last made, first closed");
    }

    @Test
    void tokensAreCheckedBeforeAnythingIsMade() {
        try (OpTable<FakeOp> t = new OpTable<>(4, 1024)) {
            var more = assertThrows(IllegalArgumentException.class, () -> t.get(GemmName.FC1_FPROP, 2048,
                    () -> { throw new AssertionError("made"); }));
            assertTrue(more.getMessage().contains("tokens = 2048 is outside 1..1024"), more.getMessage());
            var odd = assertThrows(IllegalArgumentException.class, () -> t.get(GemmName.FC1_FPROP, 1022,
                    () -> { throw new AssertionError("made"); }));
            assertTrue(odd.getMessage().contains("not a multiple of tp = 4"), odd.getMessage());
            assertThrows(IllegalArgumentException.class, () -> t.get(GemmName.FC1_FPROP, 0, () -> null));
            assertEquals(List.of(), t.keys());
        }
    }

    @Test
    void closingClosesEveryOpEvenWhenOneFails() {
        List<String> closed = new ArrayList<>();
        OpTable<AutoCloseable> t = new OpTable<>(2, 8);
        t.get(GemmName.QKV_FPROP, 8, () -> new FakeOp("first", closed));
        t.get(GemmName.QKV_DGRAD, 8, () -> () -> { throw new IllegalStateException("boom"); });
        var e = assertThrows(IllegalStateException.class, t::close);
        assertEquals("boom", e.getMessage());
        assertEquals(List.of("first"), closed);
        assertThrows(IllegalStateException.class, () -> t.get(GemmName.QKV_FPROP, 8, () -> null));
    }

    @Test
    void discardedOpsAreClosedOnceAndMadeAgainOnNextUse() {
        List<String> closed = new ArrayList<>();
        int[] made = {0};
        try (OpTable<FakeOp> t = new OpTable<>(2, 1024)) {
            t.get(GemmName.FC1_FPROP, 1024, () -> new FakeOp("fc1@" + made[0]++, closed));
            t.get(GemmName.FC2_FPROP, 1024, () -> new FakeOp("fc2@" + made[0]++, closed));
            t.get(GemmName.FC1_FPROP, 512, () -> new FakeOp("fc1@" + made[0]++, closed));
            t.discard(java.util.Set.of(GemmName.FC1_FPROP));
            assertEquals(List.of("fc1@2", "fc1@0"), closed, "only that GEMM's ops, last made first");
            assertEquals(List.of(new OpTable.Key(GemmName.FC2_FPROP, 1024)), t.keys());
            FakeOp again = t.get(GemmName.FC1_FPROP, 1024, () -> new FakeOp("fc1@" + made[0]++, closed));
            assertEquals("fc1@3", again.name(), "made again");
        }
        assertEquals(List.of("fc1@2", "fc1@0", "fc1@3", "fc2@1"), closed, "a discarded op is not closed twice");
    }
}

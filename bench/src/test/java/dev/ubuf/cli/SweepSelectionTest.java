package dev.ubuf.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ubuf.ag.AgShape;
import dev.ubuf.op.Fp8Operands;
import dev.ubuf.op.OverlapShape;
import dev.ubuf.rs.RsShape;
import dev.ubuf.tensor.DType;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class SweepSelectionTest {
    private static SweepSelection selection() {
        SweepSelection s = new SweepSelection();
        s.tokens = List.of(4096, 8192);
        s.models = List.of("llama3-8b", "llama3-70b");
        s.small = true;
        return s;
    }

    @Test
    void fp8SweepIsTheBf16SweepWithFp8Operands() {
        List<OverlapShape> bf16 = selection().shapes(4, DType.BF16);
        List<OverlapShape> fp8 = selection().shapes(4, DType.BF16, Optional.of(Fp8Operands.E4M3));
        assertEquals(bf16.size(), fp8.size());
        assertEquals((2 + 2) * 4 + 2 * 4, bf16.size()); // 8B with M 256 and 512 too, four GEMMs each
        for (int i = 0; i < bf16.size(); i++) {
            OverlapShape a = bf16.get(i);
            OverlapShape b = fp8.get(i);
            assertEquals(List.of(a.collective(), a.m(), a.k(), a.n(), a.dtype()),
                    List.of(b.collective(), b.m(), b.k(), b.n(), b.dtype()), "shape " + i);
            assertTrue(a.fp8().isEmpty(), a.toString());
            assertEquals(Optional.of(Fp8Operands.E4M3), b.fp8(), b.toString());
            assertEquals(a.getClass(), b.getClass());
            if (a instanceof RsShape ra) {
                assertEquals(ra.bias(), ((RsShape) b).bias());
            } else {
                assertTrue(a instanceof AgShape, a.toString());
            }
        }
    }
}

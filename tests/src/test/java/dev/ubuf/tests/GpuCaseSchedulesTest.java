package dev.ubuf.tests;

import dev.ubuf.op.Collective;
import dev.ubuf.op.MethodRegistry;
import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.provider.Arguments;

import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * On the CPU: every named variant of the two- and four-rank op tests makes a schedule for its shape, so a case the
 * method refuses (sub-chunks beyond the rows per rank, an option the method does not read) fails here and not only
 * when the GPU suite runs.
 */
class GpuCaseSchedulesTest {
    @Test
    void everyNamedVariantSchedulesItsShape() {
        MethodRegistry registry = MethodRegistry.load();
        int checked = check(registry, OverlapOpsGpuTest.cases(), 2) + check(registry, FourRankOpsGpuTest.cases(), 4);
        assertTrue(checked > 50, "checked " + checked);
    }

    private static int check(MethodRegistry registry, Stream<Arguments> cases, int tp) {
        int checked = 0;
        for (Arguments a : cases.toList()) {
            Object[] x = a.get();
            String variant = (String) x[1];
            if (variant.equals("auto") || variant.startsWith("nccl")) {
                continue;
            }
            OverlapScenario s = new OverlapScenario((Collective) x[0], variant, (DType) x[2], (int) x[3], (int) x[4],
                    (int) x[5], (boolean) x[6], (boolean) x[7], (boolean) x[8]);
            assertDoesNotThrow(() -> registry.schedule(s.shape(tp), variant), s + " at tp " + tp);
            checked++;
        }
        return checked;
    }

    @Test
    void aRefusedVariantIsCaught() {
        List<Arguments> bad = List.of(Arguments.of(Collective.REDUCE_SCATTER, "scatter:sub=4,tail=1,lowp=1",
                DType.BF16, 6, 136, 128, true, true, true));
        org.junit.jupiter.api.Assertions.assertThrows(org.opentest4j.AssertionFailedError.class,
                () -> check(MethodRegistry.load(), bad.stream(), 2));
    }
}

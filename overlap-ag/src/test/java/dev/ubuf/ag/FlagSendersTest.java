package dev.ubuf.ag;

import dev.ubuf.op.PlanOp;
import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** A stuck wait is reported with the rank that should have signalled: in the ring, data from r-1, credit from r+1. */
class FlagSendersTest {
    @Test
    void eachWaitedFlagIsAttributedToItsOnlySender() {
        int tp = 3;
        List<Plan> domain = AgPlans.domain(new RingAllGatherGemm(), new AgShape(tp, 3 * 64, 32, 16, DType.BF16), AgOptions.defaults());
        for (Plan mine : domain) {
            int[] senders = PlanOp.sendersOf(domain, mine);
            for (PlanStep step : mine.steps()) {
                if (step instanceof PlanStep.WaitSignal w) {
                    int sender = senders[w.flag()];
                    int r = mine.rank();
                    assertTrue(sender == (r + tp - 1) % tp || sender == (r + 1) % tp,
                            "rank " + r + " flag " + w.flag() + " attributed to " + sender + ", not a ring neighbour");
                }
            }
        }
    }
}

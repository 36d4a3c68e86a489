package dev.ubuf.layers.tp;

import dev.ubuf.ag.AgShape;
import dev.ubuf.op.Candidate;
import dev.ubuf.op.CandidateTimes;
import dev.ubuf.op.MethodRegistry;
import dev.ubuf.op.Planner;
import dev.ubuf.op.PlannerSettings;
import dev.ubuf.rs.RsShape;
import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/** Which one-stream candidate whole steps try against the planner's several-stream choice. */
class StepCheckTest {
    private static final Planner PLANNER = new Planner(MethodRegistry.load(), PlannerSettings.inMemory());
    private static final AgShape AG = new AgShape(2, 8192, 4096, 14336, DType.BF16);
    private static final RsShape RS = new RsShape(2, 8192, 7168, 4096, DType.BF16, true);

    private static Candidate candidate(List<Candidate> all, String label) {
        return all.stream().filter(c -> c.label().equals(label)).findFirst().orElseThrow(() ->
                new AssertionError("no candidate " + label + " in " + all.stream().map(Candidate::label).toList()));
    }

    private static CandidateTimes times(Object... labelMs) {
        Map<String, Double> m = new LinkedHashMap<>();
        for (int i = 0; i < labelMs.length; i += 2) {
            m.put((String) labelMs[i], (Double) labelMs[i + 1]);
        }
        return new CandidateTimes(m, 10);
    }

    @Test
    void streamsAreCountedFromThePlans() {
        List<Candidate> ag = PLANNER.candidates(AG);
        assertEquals(2, StepCheck.computeStreams(candidate(ag, "aggregate")));
        assertEquals(1, StepCheck.computeStreams(candidate(ag, "aggregate:cs=1")));
        assertEquals(1, StepCheck.computeStreams(Candidate.nccl()));
    }

    @Test
    void theFastestOneStreamCandidateWithinTheWindowIsTried() {
        List<Candidate> ag = PLANNER.candidates(AG);
        Candidate chosen = candidate(ag, "aggregate");
        CandidateTimes t = times("aggregate", 1.000, "aggregate:cs=1", 1.030, "ring:cs=1", 1.020, "nccl", 1.4);
        assertEquals("ring:cs=1", StepCheck.oneStreamAlternative(chosen, t, ag).label());
        CandidateTimes far = times("aggregate", 1.000, "aggregate:cs=1", 1.060, "nccl", 1.4);
        assertNull(StepCheck.oneStreamAlternative(chosen, far, ag), "more than 5% slower alone: not tried");
        assertNull(StepCheck.oneStreamAlternative(candidate(ag, "aggregate:cs=1"), t, ag),
                "the choice already runs one stream");
    }

    @Test
    void aReduceScatterRingOnSeveralStreamsIsCheckedAgainstItsOneStreamVariant() {
        List<Candidate> rs = PLANNER.candidates(RS);
        Candidate chosen = candidate(rs, "ring:sub=2,lowp=1");
        assertEquals(true, StepCheck.computeStreams(chosen) > 1);
        CandidateTimes t = times("ring:sub=2,lowp=1", 0.669, "ring:cs=1,sub=1,lowp=1", 0.675, "nccl", 0.9);
        assertEquals("ring:cs=1,sub=1,lowp=1", StepCheck.oneStreamAlternative(chosen, t, rs).label());
    }
}

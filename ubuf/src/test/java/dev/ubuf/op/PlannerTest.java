package dev.ubuf.op;

import dev.ubuf.plan.BufferRole;
import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanBuilder;
import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The planner's host side: which candidates it measures (every registered GEMM method's tuning space, and always
 * the NCCL reference), how methods are looked up and their options read, and how choices are remembered.
 */
class PlannerTest {
    record Shape(Collective collective, int tp, long m, long k, long n, DType dtype, boolean bias)
            implements OverlapShape {
    }

    /** A method of some other module: a one-step plan, tuned over "x" in {1, 2}, runs only even m. */
    record FakeMethod(String name, Collective collective, boolean hasGemm) implements OverlapMethod {
        @Override
        public SequencedMap<String, String> optionKeys() {
            SequencedMap<String, String> k = new LinkedHashMap<>();
            k.put("x", "a knob, 1..2 (default 1)");
            return k;
        }

        @Override
        public Schedule schedule(OverlapShape shape, Map<String, String> options) {
            int x = new MethodOptions(name, optionKeys(), options).intValue("x", 1, 1, 2);
            if (shape.m() % 2 != 0) {
                throw new IllegalArgumentException(name + " needs an even m");
            }
            OverlapMethod self = this;
            return new Schedule() {
                public OverlapMethod method() {
                    return self;
                }

                public OverlapShape shape() {
                    return shape;
                }

                public Map<String, String> options() {
                    return options;
                }

                public Plan plan(int rank) {
                    PlanBuilder b = new PlanBuilder(collective.resultName(), name + x, rank, shape.tp());
                    b.matrix(BufferRole.INPUT, shape.dtype(), shape.m(), shape.k());
                    return b.build();
                }
            };
        }

        @Override
        public List<Map<String, String>> tuningSpace(OverlapShape shape) {
            return shape.m() % 2 == 0 ? List.of(Map.of(), Map.of("x", "2")) : List.of();
        }
    }

    private final MethodRegistry registry = MethodRegistry.of(List.of(
            new FakeMethod("zeta", Collective.ALL_GATHER, true), new FakeMethod("alpha", Collective.ALL_GATHER, true),
            new FakeMethod("bulk", Collective.ALL_GATHER, false), new FakeMethod("rsonly", Collective.REDUCE_SCATTER, true)));

    @Test
    void candidatesAreTheNcclReferenceAndEveryGemmMethodsTuningSpace() {
        Planner p = new Planner(registry, PlannerSettings.inMemory());
        List<String> labels = p.candidates(new Shape(Collective.ALL_GATHER, 2, 64, 8, 8, DType.BF16, false))
                .stream().map(Candidate::label).toList();
        assertEquals(List.of("nccl", "alpha", "alpha:x=2", "zeta", "zeta:x=2"), labels,
                "bulk moves data only and another collective's methods do not apply");
    }

    @Test
    void ncclsPipelinedReduceScatterIsNoCandidate() {
        Planner p = new Planner(registry, PlannerSettings.inMemory());
        List<String> labels = p.candidates(new Shape(Collective.REDUCE_SCATTER, 4, 64, 8, 256, DType.BF16, true))
                .stream().map(Candidate::label).toList();
        assertEquals(List.of("nccl", "rsonly", "rsonly:x=2"), labels, "slower than the reference wherever measured");
    }

    @Test
    void ncclLabelsAreReadAndCheckedAgainstTheShape() {
        Shape rs = new Shape(Collective.REDUCE_SCATTER, 2, 64, 8, 256, DType.BF16, false);
        assertEquals(Optional.of(Candidate.nccl()), Candidate.ncclNamed("nccl", rs));
        assertEquals(Optional.of(Candidate.ncclPipelined(4, 0)), Candidate.ncclNamed("nccl:splits=4", rs));
        assertEquals("nccl:splits=4", Candidate.ncclPipelined(4, 0).label(), "no margin: left out of the label");
        assertEquals(Optional.of(Candidate.ncclPipelined(2, 24)), Candidate.ncclNamed("nccl:margin=24,splits=2", rs),
                "one label however the options are ordered");
        assertTrue(Candidate.ncclNamed("ring:sub=4", rs).isEmpty(), "another method's label");
        assertTrue(Candidate.ncclNamed("ncclx", rs).isEmpty());
        for (String[] bad : new String[][]{{"nccl:splits=3", "does not split into 3 blocks"},
                {"nccl:splits=1", "outside 2..16"}, {"nccl:splits=x", "not an integer"},
                {"nccl:sub=2", "has no option 'sub'"}, {"nccl:margin=16", "need splits"},
                {"nccl:splits=2,margin=65", "outside 0..64"}, {"nccl:splits", "bad option 'splits'"},
                {"nccl:", "expected nccl:splits=S"}}) {
            var e = assertThrows(IllegalArgumentException.class, () -> Candidate.ncclNamed(bad[0], rs));
            assertTrue(e.getMessage().contains(bad[1]), bad[0] + ": " + e.getMessage());
        }
        var e = assertThrows(IllegalArgumentException.class, () -> Candidate.ncclNamed("nccl:splits=2",
                new Shape(Collective.ALL_GATHER, 2, 64, 8, 256, DType.BF16, false)));
        assertTrue(e.getMessage().contains("only the reduce-scatter"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Candidate.ncclPipelined(1, 0));
        assertTrue(Candidate.ncclPipelined(2, 16).isNccl());
        // One lookup for every label: NCCL's, or a registered method's schedule
        assertEquals(Candidate.ncclPipelined(4, 0), Candidate.named(registry, rs, "nccl:splits=4"));
        assertEquals("rsonly:x=2", Candidate.named(registry, rs, "rsonly:x=2").label());
        assertTrue(Candidate.named(registry, rs, "rsonly").schedule().isPresent());
        assertThrows(IllegalArgumentException.class, () -> Candidate.named(registry, rs, "alpha"));
    }

    @Test
    void aShapeNoMethodCanRunStillHasTheNcclReference() {
        Planner p = new Planner(registry, PlannerSettings.inMemory());
        assertEquals(List.of(Candidate.nccl()),
                p.candidates(new Shape(Collective.ALL_GATHER, 2, 63, 8, 8, DType.BF16, false)));
    }

    @Test
    void methodsAreFoundByCollectiveAndNameAndTheirOptionsAreChecked() {
        Shape s = new Shape(Collective.ALL_GATHER, 2, 64, 8, 8, DType.BF16, false);
        assertEquals("alpha:x=2", registry.schedule(s, "alpha:x=2").label());
        var e = assertThrows(IllegalArgumentException.class, () -> registry.schedule(s, "rsonly"));
        assertTrue(e.getMessage().contains("unknown ag method 'rsonly'; registered: alpha, bulk, zeta"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> registry.schedule(s, "alpha:x=3"));
        assertTrue(e.getMessage().contains("x=3 is outside 1..2 (a knob"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> registry.schedule(s, "alpha:x"));
        assertTrue(e.getMessage().contains("expected key=value"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> registry.schedule(s, "alpha:y=1"));
        assertTrue(e.getMessage().contains("no option 'y'; its options: x = a knob"), e.getMessage());
    }

    @Test
    void twoMethodsOfOneCollectiveMayNotShareAName() {
        var e = assertThrows(IllegalStateException.class, () -> MethodRegistry.of(List.of(
                new FakeMethod("ring", Collective.ALL_GATHER, true), new FakeMethod("ring", Collective.ALL_GATHER, true))));
        assertTrue(e.getMessage().contains("two ag methods are named 'ring'"), e.getMessage());
        MethodRegistry.of(List.of(new FakeMethod("ring", Collective.ALL_GATHER, true),
                new FakeMethod("ring", Collective.REDUCE_SCATTER, true)));
    }

    @Test
    void choicesSurviveInTheCacheFileAndOnlyThePersistingRankWritesIt(@TempDir Path dir) {
        Path f = dir.resolve("sub/plans.properties");
        PlanCache a = new PlanCache(Optional.of(f));
        a.put("H200 | ag tp2 bf16 m8192", "ring:cs=2", false);
        assertTrue(new PlanCache(Optional.of(f)).get("H200 | ag tp2 bf16 m8192").isEmpty(), "not persisted");
        a.put("H200 | ag tp2 bf16 m8192", "ring:cs=2", true);
        assertEquals(Optional.of("ring:cs=2"), new PlanCache(Optional.of(f)).get("H200 | ag tp2 bf16 m8192"));
        assertEquals(Optional.empty(), new PlanCache(Optional.empty()).get("anything"));
    }

    @Test
    void plannerSettingsComeFromTheEnvironmentWithClearErrors() {
        PlannerSettings d = PlannerSettings.from(Map.of());
        assertTrue(d.tune());
        assertTrue(d.cacheFile().orElseThrow().endsWith(Path.of(".cache", "ubuf", "plans.properties")));
        PlannerSettings off = PlannerSettings.from(Map.of("UB_TUNE", "0", "UB_PLAN_CACHE", "off", "UB_TUNE_ITERS", "4"));
        assertEquals(new PlannerSettings(false, Optional.empty(), 4, false), off);
        assertThrows(IllegalArgumentException.class, () -> PlannerSettings.from(Map.of("UB_TUNE", "yes")));
        var e = assertThrows(IllegalArgumentException.class, () -> PlannerSettings.from(Map.of("UB_TUNE_ITERS", "x")));
        assertTrue(e.getMessage().contains("UB_TUNE_ITERS"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> PlannerSettings.from(Map.of("UB_TUNE_ITERS", "0")));
        assertFalse(d.stepCheck(), "the layers' step check is opt-in");
        assertTrue(PlannerSettings.from(Map.of("UB_STEP_CHECK", "1")).stepCheck());
        assertThrows(IllegalArgumentException.class, () -> PlannerSettings.from(Map.of("UB_STEP_CHECK", "maybe")));
    }
}

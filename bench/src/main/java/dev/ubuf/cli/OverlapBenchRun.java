package dev.ubuf.cli;

import dev.ubuf.bench.OverlapBench;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.op.Collective;
import dev.ubuf.op.MethodRegistry;
import dev.ubuf.op.OverlapShape;
import dev.ubuf.op.PlannerSettings;

import java.util.List;
import java.util.Map;
import java.util.function.Function;

/** The body of bench ag and bench rs, written once: check everything on the host, then run the overlap benchmark. */
final class OverlapBenchRun {
    private OverlapBenchRun() {
    }

    static int call(OverlapBenchOptions o, Collective c, List<String> shapeWords, List<String> methodWords,
                    Function<long[], OverlapShape> shape) throws Exception {
        o.check();
        List<OverlapShape> shapes = BenchShapes.parse(o.spec, shapeWords, "with --tp " + o.tp, shape);
        MethodRegistry registry = MethodRegistry.load();
        List<String> variants = OverlapMethods.check(o.spec, registry, c, methodWords, shapes, o.cudaGraph);
        var out = o.out.checkWritable();
        // Bad environment values are IllegalArgumentExceptions: one sentence and exit 2 (CliErrors), still before
        // any GPU work.
        UbufEnvironment env = UbufEnvironment.fromSystem();
        PlannerSettings planner = PlannerSettings.from(System.getenv());
        new OverlapBench(new OverlapBench.Settings(o.tp, shapes, Map.of(c, variants), o.warmup, o.iters, o.seed,
                o.copyEngine, o.cudaGraph, o.trace, out, Map.of(), o.callsPerSample), env, planner).run();
        return 0;
    }
}

package dev.ubuf.cli;

import dev.ubuf.bench.OverlapBench;
import dev.ubuf.bench.SweepChart;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.op.Collective;
import dev.ubuf.op.MethodRegistry;
import dev.ubuf.op.OverlapShape;
import dev.ubuf.op.PlannerSettings;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * The model-shape sweep: the four TP GEMMs of real layers (Llama-3-8B, Llama-3-70B, Qwen2.5-32B, the Mixtral-8x7B
 * expert MLP, GPT-3-175B) at several token counts, every method and the planner's choice, in one results file and
 * a PNG chart of % of ideal.
 */
@Command(name = "sweep", mixinStandardHelpOptions = true, version = UbufCli.VERSION,
        description = {"The model-shape sweep (records ops ag and rs): QKV and FC1 as AllGather->GEMM, the attention"
                + " projection and FC2 as GEMM->ReduceScatter, for " + "llama3-8b, llama3-70b, qwen2.5-32b,"
                + " mixtral-8x7b-expert and gpt3-175b.",
                "Writes one results file (--out) and, with --chart, a PNG of %% of ideal per shape and method."})
final class SweepBenchCommand implements Callable<Integer> {
    @Mixin
    OverlapBenchOptions common;
    @Mixin
    SweepSelection selection;
    @Option(names = "--ag-methods", split = ";", paramLabel = "METHOD", defaultValue = "auto;ring;bidir;aggregate;oneshot",
            description = "AllGather methods (default: ${DEFAULT-VALUE}).")
    List<String> agMethods;
    @Option(names = "--rs-methods", split = ";", paramLabel = "METHOD",
            defaultValue = "auto;ring;ring:lowp=1,sub=4;ring:bidir=1,lowp=1,sub=2;pipeline;oneshot;scatter;"
                    + "scatter:sub=2,lowp=1",
            description = "ReduceScatter methods (default: ${DEFAULT-VALUE}).")
    List<String> rsMethods;
    @Option(names = "--list-shapes", description = "Print the sweep's shapes as ag:M,K,N / rs:M,K,N words (what the"
            + " PyTorch baseline's --shapes takes) and exit, without a GPU.")
    boolean listShapes;
    @Option(names = "--chart", paramLabel = "PNG", description = "Also draw the chart into this PNG file (needs"
            + " --out), after the results file is written: one that cannot be drawn is a warning. Default: none.")
    Path chart;

    @Override
    public Integer call() throws Exception {
        common.check();
        List<OverlapShape> shapes = selection.shapes(common.tp, common.dtype, common.fp8Operands());
        if (listShapes) {
            common.spec.commandLine().getOut().println(String.join(" ", shapes.stream()
                    .map(x -> x.collective().resultName() + ":" + x.m() + "," + x.k() + "," + x.n()).toList()));
            return 0;
        }
        MethodRegistry registry = MethodRegistry.load();
        Map<Collective, List<String>> variants = new LinkedHashMap<>();
        variants.put(Collective.ALL_GATHER, OverlapMethods.check(common.spec, registry, Collective.ALL_GATHER,
                agMethods, shapes.stream().filter(s -> s.collective() == Collective.ALL_GATHER).toList(),
                common.cudaGraph));
        variants.put(Collective.REDUCE_SCATTER, OverlapMethods.check(common.spec, registry,
                Collective.REDUCE_SCATTER, rsMethods,
                shapes.stream().filter(s -> s.collective() == Collective.REDUCE_SCATTER).toList(),
                common.cudaGraph));
        var out = common.out.checkWritable();
        UbufEnvironment env = UbufEnvironment.fromSystem();
        PlannerSettings planner = PlannerSettings.from(System.getenv());
        try (Progress bar = Progress.of("sweep", shapes.size())) {
            new OverlapBench(new OverlapBench.Settings(common.tp, shapes, variants, common.warmup, common.iters,
                    common.seed, common.copyEngine, common.cudaGraph, common.trace, out, Map.of("sweep", true),
                    common.callsPerSample), env,
                    planner).run(s -> bar.step());
        }
        if (chart != null && out.isPresent()) {
            // The results file is written: a chart that cannot be drawn is a warning (ubuf bench chart redraws it).
            if (PngOutput.write("ubuf bench sweep", chart, common.spec.commandLine().getErr(),
                    () -> SweepChart.write(List.of(out.get()), chart, "ubuf sweep, tp " + common.tp + ", "
                            + common.dtype.shortName() + ": % of the honest ideal"))) {
                common.spec.commandLine().getOut().println("wrote " + chart);
            }
        }
        return 0;
    }
}

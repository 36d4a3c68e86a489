package dev.ubuf.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ubuf.bootstrap.InMemoryBootstrap;
import dev.ubuf.layers.config.UbConfig;
import dev.ubuf.layers.tp.Activation;
import dev.ubuf.tensor.DType;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** How the demo sums every rank's clock samples per mode on rank 0 ({@code --clocks}). */
class LayerDemoClocksTest {
    @Test
    void rankZeroGetsEachModesMeanOverRanksTheLowestRankAndTheSharesOfAllSamples() throws Exception {
        LayerDemo.Settings st = settings(3);
        // Per rank, per mode (overlap, no_overlap, no_comm): samples as (MHz, reasons).
        long cap = ClockSampler.SW_POWER_CAP;
        long[][][][] samples = {
                {{{1980, 0}, {1980, 0}}, {{1700, cap}, {1500, cap}}, {{1900, 0}}},
                {{{1800, cap}, {1600, cap}, {1700, 0}, {1500, cap | 0x8L}}, {{1600, cap}}, {{1800, 0}}},
                {{}, {}, {}}, // a rank without samples (NVML unusable there)
        };
        LayerDemo.Outputs o = LayerDemo.outputs(st);
        run(st, samples, o);
        List<LayerDemo.ModeClocks> c = o.clocks();
        assertEquals(List.of("overlap", "no_overlap", "no_comm"), c.stream().map(LayerDemo.ModeClocks::mode).toList());
        // overlap: rank 0 mean 1980, rank 1 mean 1650; 6 samples, 3 at the power cap, 1 with another slowdown.
        assertEquals((1980 + 1650) / 2.0, c.get(0).meanMhz(), 1e-9);
        assertEquals(1650, c.get(0).lowestRankMhz(), 1e-9);
        assertEquals(3 / 6.0, c.get(0).powerCapShare(), 1e-12);
        assertEquals(1 / 6.0, c.get(0).otherSlowdownShare(), 1e-12);
        assertEquals(6, c.get(0).samples());
        assertEquals((1600 + 1600) / 2.0, c.get(1).meanMhz(), 1e-9);
        assertEquals(1.0, c.get(1).powerCapShare(), 1e-12);
        assertEquals(1800, c.get(2).lowestRankMhz(), 1e-9);
        assertEquals(0.0, c.get(2).powerCapShare(), 1e-12);
        assertEquals("no clock samples from world ranks [2]", o.clocksUnavailable()[0]);
    }

    @Test
    void withEveryRankSamplingNothingIsReportedMissing() throws Exception {
        LayerDemo.Settings st = settings(2);
        long[][][][] samples = {{{{1980, 0}}, {{1980, 0}}, {{1980, 0}}}, {{{1970, 0}}, {{1960, 0}}, {{1950, 0}}}};
        LayerDemo.Outputs o = LayerDemo.outputs(st);
        run(st, samples, o);
        assertNull(o.clocksUnavailable()[0]);
        assertEquals(1965, o.clocks().get(2).meanMhz(), 1e-9);
        assertTrue(o.clocks().stream().allMatch(m -> m.samples() == 2));
    }

    /** Every rank a thread: its samples recorded into a sampler, tallied per mode, then gathered. */
    private static void run(LayerDemo.Settings st, long[][][][] samples, LayerDemo.Outputs o) throws Exception {
        int ranks = samples.length;
        InMemoryBootstrap.Group group = InMemoryBootstrap.group(ranks, Duration.ofSeconds(20));
        ExecutorService pool = Executors.newFixedThreadPool(ranks);
        try {
            List<Future<?>> fs = new ArrayList<>();
            for (int r = 0; r < ranks; r++) {
                int rank = r;
                fs.add(pool.submit(() -> {
                    try (InMemoryBootstrap b = group.rank(rank); ClockSampler s = ClockSampler.unstarted()) {
                        ClockSampler.Tally[] t = new ClockSampler.Tally[3];
                        long now = 0;
                        for (int m = 0; m < 3; m++) {
                            t[m] = new ClockSampler.Tally();
                            long start = ++now;
                            for (long[] sample : samples[rank][m]) {
                                s.record(++now, (int) sample[0], sample[1]);
                            }
                            s.addTo(t[m], start, ++now);
                        }
                        LayerDemo.gatherClocks(st, b, t, null, o);
                    }
                    return null;
                }));
            }
            for (Future<?> f : fs) {
                f.get();
            }
        } finally {
            pool.shutdownNow();
        }
    }

    private static LayerDemo.Settings settings(int tp) {
        UbConfig cfg = UbConfig.builder().tensorModelParallelSize(tp).sequenceParallel(true).build();
        return new LayerDemo.Settings(tp, 1, cfg, cfg, 64, 128, Activation.GELU, 48, 1, 0, 1, DType.BF16, 0.01f, 1,
                false, null, false, true, 1);
    }
}

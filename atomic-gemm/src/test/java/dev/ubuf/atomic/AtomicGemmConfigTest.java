package dev.ubuf.atomic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The host's choice of tile and split-K, and the split arithmetic the kernel mirrors. */
class AtomicGemmConfigTest {

    /**
     * The sweep's GEMM shapes and 8192³ on 132 SMs: no split-K anywhere (their tiles fill the SMs, or their waves
     * are full enough that splitting K only adds partial-tile traffic), and the tile is TileConfig.select's.
     */
    @ParameterizedTest(name = "{0}x{1}x{2} {3} -> {4}")
    @CsvSource({
        "8192,8192,8192,NK,N256", "8192,8192,8192,KN,N256",
        "1024,3072,4096,NK,N192", "4096,3072,4096,NK,N256", "16384,3072,4096,NK,N256",
        "1024,14336,4096,NK,N224", "4096,14336,4096,NK,N256", "16384,14336,4096,NK,N256",
        "1024,4096,2048,NK,N256", "4096,4096,2048,NK,N256", "16384,4096,2048,NK,N256",
        "1024,4096,7168,NK,N256", "4096,4096,7168,NK,N256", "16384,4096,7168,NK,N256",
        "1024,5120,8192,NK,N160", "1024,5120,8192,KN,N192", "4096,5120,8192,NK,N256", "16384,5120,8192,NK,N256",
        "1024,28672,8192,NK,N256", "4096,28672,8192,NK,N256", "16384,28672,8192,NK,N256",
        "1024,8192,4096,NK,N256", "4096,8192,4096,NK,N256", "16384,8192,4096,NK,N256",
        "1024,8192,14336,NK,N256", "4096,8192,14336,NK,N256", "16384,8192,14336,NK,N256"})
    void sweepShapesKeepTheUnsplitTile(int m, int n, int k, BLayout layout, TileConfig tile) {
        AtomicGemmConfig c = AtomicGemmConfig.selectCooperative(m, n, k, 1, layout, 132);
        assertEquals(new AtomicGemmConfig(tile, 1), c);
        assertEquals(TileConfig.select(m, n, 1, layout, 132), c.tile());
        assertEquals(0, c.workspaceBytes(m, n, 1));
        // Where the cooperative rule does not split, the automatic choice is that tile in clusters where K is longer
        // than 4096 (the sweep's M are multiples of 256: no placeholders), else the ping-pong rule's tile.
        AtomicGemmConfig auto = AtomicGemmConfig.select(m, n, k, 1, layout, 132);
        assertEquals(k > 4096 ? AtomicGemmConfig.cooperativeCluster(tile)
                : AtomicGemmConfig.selectPingPong(m, n, k, 1, layout, 132), auto);
        assertEquals(0, AtomicGemmConfig.cooperativeCluster(tile).placeholderPercent(m, n, 1));
    }

    /**
     * Clusters leave a chunk's odd last 128-row tile without a partner: where K is long enough for clusters, the rule
     * keeps them while at most 12% of the halves are such placeholders and takes ping-pong beyond. 1152 rows: 9 row tiles, 5 pairs, 1 of 10 halves
     * idle (10%); 640: 5 row tiles, 1 of 6 (16%); 128 rows a chunk (tp chunks of one tile each): half of them.
     */
    @ParameterizedTest(name = "{0}x{1}x{2} chunks={3} -> {4}")
    @CsvSource({"1152,4096,8192,1,COOPERATIVE_CLUSTER,10", "640,4096,8192,1,PINGPONG,16",
            "1024,4096,8192,8,PINGPONG,50", "2048,4096,8192,8,COOPERATIVE_CLUSTER,0",
            "1280,8192,5120,2,PINGPONG,16", "4096,8192,5120,2,COOPERATIVE_CLUSTER,0"})
    void clustersUnlessManyHalvesWouldIdle(int m, int n, int k, int chunks, AtomicGemmConfig.Schedule expected,
                                           int placeholderPercent) {
        AtomicGemmConfig c = AtomicGemmConfig.select(m, n, k, chunks, BLayout.NK, 132);
        assertEquals(expected, c.schedule(), c.toString());
        assertEquals(placeholderPercent, AtomicGemmConfig.cooperativeCluster(c.tile()).placeholderPercent(m, n, chunks));
    }

    /**
     * Tile-starved shapes with long K split: M = 128 × N = 4096 is 32 tiles of 128x128 (16 of 128x256) on 132 SMs,
     * a quarter of the SMs for all 64 K steps; 4 splits make 128 units of 16 steps. M = 64, K = 16384: 8 tiles,
     * 256 steps each, 8 splits.
     */
    @ParameterizedTest(name = "{0}x{1}x{2} -> {3} split {4}")
    @CsvSource({"128,4096,4096,N128,4", "256,4096,4096,N128,2", "256,3072,4096,N192,4", "128,8192,8192,N192,3",
            "64,1024,16384,N128,8", "512,2048,8192,N192,3"})
    void tileStarvedShapesWithLongKSplit(int m, int n, int k, TileConfig tile, int splits) {
        for (BLayout layout : BLayout.values()) {
            AtomicGemmConfig c = AtomicGemmConfig.select(m, n, k, 1, layout, 132);
            assertEquals(new AtomicGemmConfig(tile, splits), c, layout.toString());
            assertTrue(c.units(m, n, 1) <= 132, "one wave of units: " + c.units(m, n, 1));
        }
    }

    @ParameterizedTest(name = "{0}x{1}x{2} chunks={3} sms={4}")
    @CsvSource({"1,1,1,1,132", "1,1,64,1,132", "1,1,65,1,132", "128,256,128,1,132", "64,1024,16384,1,132",
            "128,4096,4096,1,132", "1024,1024,8192,8,132", "300,520,1000,1,132", "128,128,100000,1,78",
            "640,40000,64,2,132", "16384,28672,8192,1,132", "8,8,1000000,1,132"})
    void choicesRespectTheInvariants(int m, int n, int k, int chunks, int sms) {
        for (BLayout layout : BLayout.values()) {
            AtomicGemmConfig c = AtomicGemmConfig.select(m, n, k, chunks, layout, sms);
            assertTrue(c.tile().supports(layout), c + " for " + layout);
            assertTrue(c.splits() >= 1 && c.splits() <= TileSchedule.kSteps(k),
                    "never more splits than K steps: " + c + ", K=" + k);
            assertTrue(c.fits(k));
            assertTrue(c.workspaceBytes(m, n, chunks) <= AtomicGemmConfig.MAX_RULE_WORKSPACE_BYTES);
            AtomicGemmConfig unsplit = AtomicGemmConfig.of(TileConfig.select(m, n, chunks, layout, sms));
            if (c.splits() > 1) {
                // Chosen only with the margin: at most 90% of the best unsplit estimate.
                assertTrue(c.cost(m, n, k, chunks, sms) * 100 <= unsplit.cost(m, n, k, chunks, sms) * 90,
                        c + " vs " + unsplit);
                assertEquals(AtomicGemmConfig.Schedule.COOPERATIVE, c.schedule(), "split-K is cooperative");
            } else {
                assertEquals(unsplit, AtomicGemmConfig.selectCooperative(m, n, k, chunks, layout, sms));
                AtomicGemmConfig clustered = AtomicGemmConfig.cooperativeCluster(unsplit.tile());
                boolean clusters = TileSchedule.kSteps(k) > AtomicGemmConfig.PINGPONG_MAX_K_STEPS
                        && clustered.placeholderPercent(m, n, chunks) <= AtomicGemmConfig.MAX_PLACEHOLDER_PERCENT;
                assertEquals(clusters ? clustered : AtomicGemmConfig.selectPingPong(m, n, k, chunks, layout, sms), c);
            }
        }
    }

    /** K of 64 steps (4096) or fewer takes ping-pong, one step more the clustered tiles. */
    @Test
    void shortKTakesPingPongLongerKClusters() {
        assertEquals(AtomicGemmConfig.Schedule.PINGPONG,
                AtomicGemmConfig.select(4096, 8192, 4096, 1, BLayout.NK, 132).schedule());
        assertEquals(AtomicGemmConfig.Schedule.COOPERATIVE_CLUSTER,
                AtomicGemmConfig.select(4096, 8192, 4097, 1, BLayout.NK, 132).schedule());
        assertEquals(AtomicGemmConfig.Schedule.PINGPONG,
                AtomicGemmConfig.select(1024, 4096, 2048, 2, BLayout.KN, 132).schedule());
    }

    @Test
    void aNamedTilingTakesThatScheduleByItsOwnRuleAndAutoTheAutomaticChoice() {
        int sms = 132;
        for (int[] s : new int[][] {{8192, 8192, 8192}, {1024, 4096, 2048}, {2000, 512, 384}, {128, 4096, 4096}}) {
            int m = s[0], n = s[1], k = s[2];
            for (BLayout layout : BLayout.values()) {
                assertEquals(AtomicGemmConfig.select(m, n, k, 2, layout, sms),
                        AtomicGemmConfig.forTiling("auto", m, n, k, 2, layout, sms));
                assertEquals(AtomicGemmConfig.selectPingPong(m, n, k, 2, layout, sms),
                        AtomicGemmConfig.forTiling("pingpong", m, n, k, 2, layout, sms));
                assertEquals(AtomicGemmConfig.Schedule.PINGPONG,
                        AtomicGemmConfig.forTiling("pingpong", m, n, k, 2, layout, sms).schedule());
                assertEquals(AtomicGemmConfig.selectCooperative(m, n, k, 2, layout, sms),
                        AtomicGemmConfig.forTiling("cooperative", m, n, k, 2, layout, sms));
                AtomicGemmConfig cc = AtomicGemmConfig.forTiling("cooperative-cluster", m, n, k, 2, layout, sms);
                assertEquals(AtomicGemmConfig.Schedule.COOPERATIVE_CLUSTER, cc.schedule());
                assertEquals(TileConfig.select(m, n, 2, layout, sms), cc.tile());
                assertEquals(1, cc.splits());
            }
        }
        // On an H100 and an H200 alike the rule clusters 8192^3 and ping-pongs 1024x4096x2048 (K <= 4096).
        assertEquals(AtomicGemmConfig.Schedule.COOPERATIVE_CLUSTER,
                AtomicGemmConfig.forTiling("auto", 8192, 8192, 8192, 2, BLayout.NK, sms).schedule());
        assertEquals(AtomicGemmConfig.Schedule.PINGPONG,
                AtomicGemmConfig.forTiling("auto", 1024, 4096, 2048, 2, BLayout.NK, sms).schedule());
        assertThrows(IllegalArgumentException.class,
                () -> AtomicGemmConfig.forTiling("clustered", 8192, 8192, 8192, 2, BLayout.NK, sms));
    }

    @Test
    void oneKStepNeverSplits() {
        // K = 64 is one step, K = 65 two: a split needs a step of its own.
        assertEquals(1, AtomicGemmConfig.select(128, 128, 64, 1, BLayout.NK, 132).splits());
        assertTrue(AtomicGemmConfig.select(128, 128, 65, 1, BLayout.NK, 132).splits() <= 2);
        assertTrue(new AtomicGemmConfig(TileConfig.N256, 2).fits(65));
        assertTrue(!new AtomicGemmConfig(TileConfig.N256, 2).fits(64));
    }

    @Test
    void workspaceAndCostArithmetic() {
        AtomicGemmConfig c = new AtomicGemmConfig(TileConfig.N128, 4);
        // 128x4096: 32 tiles of 128x128, 4 units each, 64 KB of fp32 a unit.
        assertEquals(128, c.units(128, 4096, 1));
        assertEquals(128L * 128 * 128 * 4, c.workspaceBytes(128, 4096, 1));
        assertEquals(32, c.semaphores(128, 4096, 1));
        assertEquals(0, AtomicGemmConfig.of(TileConfig.N128).semaphores(128, 4096, 1));
        // One wave; 16 steps + 2 overhead + (1 + 4) partials = 23 steps of a 128-wide tile at 90%.
        assertEquals(23L * 128 * 100 * 100 / 90, c.cost(128, 4096, 4096, 1, 132));
        // Unsplit: one wave of 64 + 2 steps.
        assertEquals(66L * 128 * 100 * 100 / 90, AtomicGemmConfig.of(TileConfig.N128).cost(128, 4096, 4096, 1, 132));
        assertEquals("128x128 split-K 4", c.toString());
        assertEquals("128x256", AtomicGemmConfig.of(TileConfig.N256).toString());
        assertThrows(IllegalArgumentException.class, () -> new AtomicGemmConfig(TileConfig.N256, 0));
        assertThrows(IllegalArgumentException.class,
                () -> new AtomicGemmConfig(TileConfig.N256, AtomicGemmConfig.MAX_SPLITS + 1));
        assertThrows(IllegalArgumentException.class, () -> AtomicGemmConfig.select(8, 8, 0, 1, BLayout.NK, 132));
    }

    /** The kernel's K ranges (TileSchedule.kRange): a partition of the K steps, none empty, near-equal. */
    @ParameterizedTest(name = "steps={0}")
    @CsvSource({"1", "2", "3", "7", "16", "63", "64", "65", "129", "1000"})
    void splitRangesPartitionTheKSteps(int steps) {
        for (int splits = 1; splits <= Math.min(steps, AtomicGemmConfig.MAX_SPLITS); splits++) {
            int next = 0;
            for (int s = 0; s < splits; s++) {
                int[] r = TileSchedule.kRange(s, splits, steps);
                assertEquals(next, r[0], "split " + s + " of " + splits + " starts where the last ended");
                assertTrue(r[1] > r[0], "split " + s + " of " + splits + " has a step");
                int len = r[1] - r[0];
                assertTrue(len == steps / splits || len == steps / splits + 1, "near-equal: " + len);
                next = r[1];
            }
            assertEquals(steps, next, splits + " splits cover all steps");
        }
    }

    /** Ping-pong: 64-row tiles, their own kernels and shared memory, never split-K; the automatic choice unsplit. */
    @Test
    void pingPongHasHalfHeightTilesItsOwnKernelsAndNoSplitK() {
        AtomicGemmConfig c = AtomicGemmConfig.pingPong(TileConfig.N256);
        assertEquals(64, c.tileM());
        assertEquals(2 * TileConfig.N256.tiles(1024, 4096, 1), c.tiles(1024, 4096, 1));
        assertEquals(3 * 2, c.tiles(129, 512, 1)); // rows 0-63, 64-127, 128
        assertEquals("64x256 ping-pong", c.toString());
        assertEquals("_pp", c.kernelSuffix());
        assertEquals("_pp_n192", AtomicGemmConfig.pingPong(TileConfig.N192).kernelSuffix());
        assertEquals("ubuf_atomic_gemm_bf16_bkn_f32_pp_n128",
                AtomicGemmKernel.kernelName(dev.ubuf.tensor.DType.BF16, BLayout.KN, dev.ubuf.tensor.DType.FP32,
                        AtomicGemmConfig.pingPong(TileConfig.N128)));
        // Config<256, 64>: 5 stages of 8 KB of A and 32 KB of B, 10 mbarriers, 1024 alignment slack.
        assertEquals(5, TileConfig.N256.stages(64));
        assertEquals(1024 + 5 * 40960 + 10 * 8, c.smemBytes());
        for (TileConfig t : TileConfig.values()) {
            assertTrue(AtomicGemmConfig.pingPong(t).smemBytes() <= 227 * 1024, t.toString());
        }
        assertEquals(0, c.workspaceBytes(1024, 4096, 1));
        assertEquals(0, c.semaphores(1024, 4096, 1));
        assertThrows(IllegalArgumentException.class,
                () -> new AtomicGemmConfig(TileConfig.N256, 2, AtomicGemmConfig.Schedule.PINGPONG));
        assertEquals(AtomicGemmConfig.Schedule.PINGPONG, AtomicGemmConfig.Schedule.parse("PingPong"));
        assertEquals(AtomicGemmConfig.Schedule.COOPERATIVE, AtomicGemmConfig.Schedule.parse("cooperative"));
        assertThrows(IllegalArgumentException.class, () -> AtomicGemmConfig.Schedule.parse("interleaved"));
        // The ping-pong rule picks among ping-pong tiles only.
        AtomicGemmConfig pp = AtomicGemmConfig.selectPingPong(1024, 4096, 2048, 1, BLayout.KN, 132);
        assertEquals(AtomicGemmConfig.Schedule.PINGPONG, pp.schedule());
        assertTrue(pp.tile().supports(BLayout.KN));
        AtomicGemmConfig cc = AtomicGemmConfig.cooperativeCluster(TileConfig.N192);
        assertEquals(128, cc.tileM());
        assertEquals("_cc_n192", cc.kernelSuffix());
        assertEquals(AtomicGemmConfig.of(TileConfig.N192).smemBytes(), cc.smemBytes());
        assertEquals(AtomicGemmConfig.Schedule.COOPERATIVE_CLUSTER,
                AtomicGemmConfig.Schedule.parse("cooperative-cluster"));
        assertThrows(IllegalArgumentException.class,
                () -> new AtomicGemmConfig(TileConfig.N256, 2, AtomicGemmConfig.Schedule.COOPERATIVE_CLUSTER));
        // The cooperative cost is what it was: the ping-pong scaling leaves 128-row tiles alone.
        assertEquals(66L * 128 * 100 * 100 / 90, AtomicGemmConfig.of(TileConfig.N128).cost(128, 4096, 4096, 1, 132));
    }
}

package dev.ubuf.atomic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;

/** The tile configurations (mirroring Config<BN> in ubuf_atomic_gemm.cu) and the host's rule that picks one. */
class TileConfigTest {

    @ParameterizedTest(name = "{0}: {1} stages, {2} bytes")
    @CsvSource({"N256,4,197696", "N224,5,226384", "N192,5,205904", "N160,6,222304", "N128,7,230512"})
    void stagesAndSharedMemoryAreTheKernelsConfig(TileConfig c, int stages, int smem) {
        // The same numbers as Config<BN>::STAGES / SMEM_BYTES (the .cu static_asserts the 256 one).
        assertEquals(stages, c.stages());
        assertEquals(smem, c.smemBytes());
        assertTrue(c.smemBytes() <= 227 * 1024, "fits a Hopper block");
        assertEquals(0, c.stageBytes() % 1024, "stages keep the 1024-byte swizzle alignment");
    }

    @Test
    void theDefaultIsTheOriginal128x256Kernel() {
        assertEquals(AtomicGemmKernel.SMEM_BYTES, TileConfig.N256.smemBytes());
        assertEquals(TileSchedule.TILE_N, TileConfig.N256.tileN());
        assertEquals("", TileConfig.N256.kernelSuffix());
        assertEquals("128x256", TileConfig.N256.toString());
    }

    @Test
    void kernelNamesCarryTheTileWidthAndKnExistsOnlyForMultiplesOf64() {
        assertEquals("ubuf_atomic_gemm_bf16_bnk_bf16_n192",
                AtomicGemmKernel.kernelName(DType.BF16, BLayout.NK, DType.BF16, TileConfig.N192));
        assertEquals("ubuf_atomic_gemm_f16_bkn_f32_n128",
                AtomicGemmKernel.kernelName(DType.FP16, BLayout.KN, DType.FP32, TileConfig.N128));
        assertEquals("ubuf_atomic_gemm_bf16_bnk_f32_n160",
                AtomicGemmKernel.kernelName(DType.BF16, BLayout.NK, DType.FP32, TileConfig.N160));
        assertEquals(AtomicGemmKernel.kernelName(DType.BF16, BLayout.KN, DType.BF16),
                AtomicGemmKernel.kernelName(DType.BF16, BLayout.KN, DType.BF16, TileConfig.N256));
        for (TileConfig c : TileConfig.values()) {
            assertTrue(c.supports(BLayout.NK));
            assertEquals(c.tileN() % 64 == 0, c.supports(BLayout.KN), c.toString());
        }
        assertThrows(IllegalArgumentException.class,
                () -> AtomicGemmKernel.kernelName(DType.BF16, BLayout.KN, DType.BF16, TileConfig.N224));
        assertThrows(IllegalArgumentException.class,
                () -> TensorMapSpec.forB(DType.BF16, BLayout.KN, 0x1000, 64, 64, 64, TileConfig.N160));
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(TileConfig.class)
    void bTensorMapBoxFollowsTheTileWidth(TileConfig c) {
        TensorMapSpec nk = TensorMapSpec.forB(DType.BF16, BLayout.NK, 0x2000, 200, 300, 200, c);
        assertEquals(TileSchedule.TILE_K, nk.box()[0]);
        assertEquals(c.tileN(), nk.box()[1]);
        // Clusters of two: each CTA loads half of the tile's rows of N (whole 8-row swizzle atoms for every width).
        TensorMapSpec half = TensorMapSpec.forB(DType.BF16, BLayout.NK, 0x2000, 200, 300, 200, c, 2);
        assertEquals(c.tileN() / 2, half.box()[1]);
        assertEquals(0, (c.tileN() / 2) % 8, "a half tile is whole 1024-byte swizzle atoms");
        if (c.supports(BLayout.KN)) {
            TensorMapSpec kn = TensorMapSpec.forB(DType.BF16, BLayout.KN, 0x2000, 200, 304, 304, c);
            assertEquals(64, kn.box()[0], "KN loads 64-column boxes whatever the tile width");
            assertEquals(TileSchedule.TILE_K, kn.box()[1]);
            assertEquals(kn.key(), TensorMapSpec.forB(DType.BF16, BLayout.KN, 0x2000, 200, 304, 304, c, 2).key(),
                    "KN clusters share out whole boxes");
        }
        assertThrows(IllegalArgumentException.class,
                () -> TensorMapSpec.forB(DType.BF16, BLayout.NK, 0x2000, 200, 300, 200, c, 0));
    }

    /**
     * The rule on 132 SMs (H100 SXM, H200) for the sweep's GEMM shapes (M x N, K plays no part): only the three
     * tile-starved ones leave the default. 1024x3072: 96 tiles of 128x256 in one wave (36 SMs idle) become 128 of
     * 128x192; 1024x14336: 448 tiles, 4 waves, become 512 of 128x224 (3.9 waves) or, KN, 600 of 128x192 (5 waves of
     * 3/4 the work); 1024x5120: 160 tiles in 2 waves become 256 of 128x160 (2 nearly full waves) or, KN, 216 of
     * 128x192.
     */
    @ParameterizedTest(name = "{0}x{1} {2} -> {3}")
    @CsvSource({
        "8192,8192,NK,N256", "8192,8192,KN,N256",
        "1024,3072,NK,N192", "4096,3072,NK,N256", "16384,3072,NK,N256", "1024,3072,KN,N192",
        "1024,14336,NK,N224", "4096,14336,NK,N256", "16384,14336,NK,N256", "1024,14336,KN,N192",
        "1024,4096,NK,N256", "4096,4096,NK,N256", "16384,4096,NK,N256", "1024,4096,KN,N256",
        "1024,5120,NK,N160", "4096,5120,NK,N256", "16384,5120,NK,N256", "1024,5120,KN,N192",
        "1024,28672,NK,N256", "4096,28672,NK,N256", "16384,28672,NK,N256",
        "1024,8192,NK,N256", "4096,8192,NK,N256", "16384,8192,NK,N256", "16384,8192,KN,N256"})
    void selectionOn132MultiprocessorsForTheSweepShapes(int m, int n, BLayout layout, TileConfig expected) {
        assertEquals(expected, TileConfig.select(m, n, 1, layout, 132));
    }

    @Test
    void costIsWavesTimesWidthOverEfficiency() {
        // 1024x3072: 96 tiles of 128x256 -> 1 wave; 128 of 128x192 -> 1 wave; 192 of 128x128 -> 2 waves.
        assertEquals(96, TileConfig.N256.tiles(1024, 3072, 1));
        assertEquals(128, TileConfig.N192.tiles(1024, 3072, 1));
        assertEquals(192, TileConfig.N128.tiles(1024, 3072, 1));
        assertEquals(256L * 100, TileConfig.N256.cost(1024, 3072, 1, 132));
        assertEquals(192L * 100 * 100 / 97, TileConfig.N192.cost(1024, 3072, 1, 132));
        assertEquals(2L * 128 * 100 * 100 / 90, TileConfig.N128.cost(1024, 3072, 1, 132));
        // Tiles never straddle a chunk: 160 rows in 4 chunks of 40 are 4 row tiles, not ceil(160 / 128) = 2.
        assertEquals(4 * 2, TileConfig.N256.tiles(160, 512, 4));
    }

    @ParameterizedTest(name = "{0}x{1} chunks={2} sms={3}")
    @CsvSource({"1,1,1,132", "100,200,1,132", "1024,3072,1,132", "1024,3072,8,132", "3000,2560,3,114",
            "16384,28672,1,132", "8192,8192,8,78", "128,129,1,1", "1024,14336,4,132", "640,40000,2,132"})
    void theChoiceIsNeverCostlierThanTheDefaultAndTiesKeepTheWiderTile(int m, int n, int chunks, int sms) {
        for (BLayout layout : BLayout.values()) {
            TileConfig chosen = TileConfig.select(m, n, chunks, layout, sms);
            assertTrue(chosen.supports(layout), chosen + " for " + layout);
            for (TileConfig c : TileConfig.values()) {
                if (c.supports(layout)) {
                    long cost = c.cost(m, n, chunks, sms);
                    long best = chosen.cost(m, n, chunks, sms);
                    assertTrue(best <= cost, chosen + " costs " + best + ", " + c + " " + cost);
                    if (cost == best) {
                        assertTrue(chosen.tileN() >= c.tileN(), "a tie goes to the wider tile: " + chosen + " vs " + c);
                    }
                }
            }
        }
    }

    @Test
    void shapesInOneWaveWhateverTheTileTakeTheNarrowestAndFullWavesKeepTheDefault() {
        // One wave in every configuration: the narrowest tile gives each busy SM the least work (128x256 on 1 SM
        // becomes 2 tiles of 128x128 on 2 SMs).
        assertEquals(TileConfig.N128, TileConfig.select(1, 1, 1, BLayout.NK, 132));
        assertEquals(TileConfig.N128, TileConfig.select(128, 256, 1, BLayout.KN, 132));
        // Exactly full waves of 128x256 tiles: nothing narrower can win.
        assertEquals(TileConfig.N256, TileConfig.select(128 * 12, 256 * 11, 1, BLayout.NK, 132));
        assertEquals(TileConfig.N256, TileConfig.select(128 * 12, 256 * 22, 1, BLayout.KN, 132));
        assertFalse(TileConfig.select(1024, 3072, 1, BLayout.NK, 132) == TileConfig.N256);
        assertThrows(IllegalArgumentException.class, () -> TileConfig.select(8, 8, 1, BLayout.NK, 0));
    }
}

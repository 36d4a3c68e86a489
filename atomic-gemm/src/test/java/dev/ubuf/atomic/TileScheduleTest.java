package dev.ubuf.atomic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The kernel's tile arithmetic (mirrored by TileSchedule): every output element once, chunks in arrival order. */
class TileScheduleTest {

    @ParameterizedTest(name = "m={0} n={1} chunks={2} first={3}")
    @CsvSource({"1,1,1,0", "100,200,1,0", "1000,1000,1,0", "4096,4096,1,0", "8192,8192,8,3", "1000,1000,8,7",
            "960,300,4,1", "256,513,2,1", "3000,2560,3,2", "2,7,2,1"})
    void everyOutputElementBelongsToExactlyOneTileOfItsChunk(int m, int n, int chunks, int first) {
        TileSchedule s = new TileSchedule(m, n, chunks, first);
        int[] owner = new int[m * n];
        for (int t = 0; t < s.totalTiles(); t++) {
            TileSchedule.Tile tile = s.tile(t);
            assertTrue(tile.row0() < tile.rowEnd() && tile.rowEnd() - tile.row0() <= TileSchedule.TILE_M, tile.toString());
            assertTrue(tile.col0() < tile.colEnd() && tile.colEnd() - tile.col0() <= TileSchedule.TILE_N, tile.toString());
            assertEquals(tile.chunk(), tile.row0() / s.chunkRows(), "a tile starts in its own chunk: " + tile);
            assertEquals(tile.chunk(), (tile.rowEnd() - 1) / s.chunkRows(), "a tile ends in its own chunk: " + tile);
            for (int r = tile.row0(); r < tile.rowEnd(); r++) {
                for (int c = tile.col0(); c < tile.colEnd(); c++) {
                    owner[r * n + c]++;
                }
            }
        }
        for (int i = 0; i < owner.length; i++) {
            assertEquals(1, owner[i], "element (" + i / n + ", " + i % n + ") is stored by " + owner[i] + " tiles");
        }
    }

    @ParameterizedTest(name = "m={0} n={1} chunks={2} first={3}")
    @CsvSource({"1024,1024,4,0", "1024,1024,4,2", "8192,4096,8,5", "1000,1000,8,7"})
    void tilesVisitChunksFromFirstChunkOnInRotation(int m, int n, int chunks, int first) {
        TileSchedule s = new TileSchedule(m, n, chunks, first);
        for (int t = 0; t < s.totalTiles(); t++) {
            int slot = t / s.tilesPerChunk();
            assertEquals((first + slot) % chunks, s.tile(t).chunk(), "tile " + t);
        }
    }

    @ParameterizedTest(name = "tiles={0}x{1} grid={2}")
    @CsvSource({"8192,8192,132", "1000,1000,132", "100,200,132", "4096,4096,7"})
    void persistentBlocksTogetherComputeEveryTileOnce(int m, int n, int multiprocessors) {
        TileSchedule s = new TileSchedule(m, n, 1, 0);
        int grid = s.grid(multiprocessors);
        assertEquals(Math.min(multiprocessors, s.totalTiles()), grid);
        List<TileSchedule.Tile> all = new ArrayList<>();
        for (int b = 0; b < grid; b++) {
            List<TileSchedule.Tile> mine = s.tilesOfBlock(b, grid);
            assertTrue(!mine.isEmpty(), "block " + b + " has work");
            all.addAll(mine);
        }
        assertEquals(s.totalTiles(), all.size());
        assertEquals(s.totalTiles(), all.stream().distinct().count(), "no tile twice");
    }

    @ParameterizedTest(name = "m={0} n={1} chunks={2}")
    @CsvSource({"8192,8192,1,64,32", "1000,1000,1,8,4", "1000,1000,8,1,4", "100,200,1,1,1", "1,1,1,1,1",
            "2048,257,2,8,2"})
    void countsOfTilesFollowFromTheChunkRowsAndTheTileShape(int m, int n, int chunks, int rowTiles, int colTiles) {
        TileSchedule s = new TileSchedule(m, n, chunks, 0);
        assertEquals(rowTiles, s.rowTilesPerChunk());
        assertEquals(colTiles, s.colTiles());
        assertEquals(rowTiles * colTiles * chunks, s.totalTiles());
    }

    @ParameterizedTest(name = "m={0}")
    @CsvSource({"8192", "1024", "640"})
    void rowTilesOfAGroupRunTogetherOverTheSameColumns(int m) {
        // Inside a group of 8 row tiles, consecutive tiles advance the row first: tile t and t + 1 share B columns.
        TileSchedule s = new TileSchedule(m, 4096, 1, 0);
        TileSchedule.Tile t0 = s.tile(0);
        TileSchedule.Tile t1 = s.tile(1);
        assertEquals(t0.col0(), t1.col0());
        assertEquals(t0.row0() + TileSchedule.TILE_M, t1.row0());
    }

    @ParameterizedTest(name = "{4} m={0} n={1} chunks={2} first={3}")
    @CsvSource({"1,1,1,0,N128", "100,200,1,0,N192", "1000,1000,1,0,N160", "1000,1000,8,7,N224", "960,300,4,1,N128",
            "256,513,2,1,N192", "3000,2560,3,2,N160", "2,7,2,1,N224", "1024,3072,1,0,N192", "1024,5120,4,3,N160",
            "129,449,1,0,N224", "640,1000,5,4,N128"})
    void everyTileConfigurationCoversEveryOutputElementOnceWithinItsChunk(int m, int n, int chunks, int first,
                                                                          TileConfig config) {
        TileSchedule s = new TileSchedule(m, n, chunks, first, config);
        assertEquals(config.tileN(), s.tileN());
        assertEquals(TileSchedule.ceilDiv(n, config.tileN()), s.colTiles());
        assertEquals(config.tiles(m, n, chunks), s.totalTiles());
        assertEveryElementOnceWithinItsChunk(s, first);
        int grid = s.grid(132);
        List<TileSchedule.Tile> all = new ArrayList<>();
        for (int b = 0; b < grid; b++) {
            all.addAll(s.tilesOfBlock(b, grid));
        }
        assertEquals(s.totalTiles(), all.stream().distinct().count(), "the persistent grid computes every tile once");
    }

    /**
     * Ping-pong 64-row tiles: every element once within its chunk, each chunk's tile count what the done hook
     * expects, groups of 16 row tiles (1024 rows, as the cooperative groups), and a CTA's tiles alternate between its
     * two warpgroups (tile j of block b is b + j · grid).
     */
    @ParameterizedTest(name = "{4} m={0} n={1} chunks={2} first={3}")
    @CsvSource({"1,1,1,0,N256", "100,200,1,0,N192", "129,449,1,0,N224", "300,808,3,2,N256", "1000,1000,8,7,N160",
            "4000,1032,5,4,N256", "4000,1032,5,0,N128", "3200,760,1,0,N256", "2048,257,2,1,N192"})
    void pingPongTilesCoverEveryOutputElementOnceWithinTheirChunk(int m, int n, int chunks, int first,
                                                                   TileConfig config) {
        int tileM = TileSchedule.PINGPONG_TILE_M;
        TileSchedule s = new TileSchedule(m, n, chunks, first, config.tileN(), tileM);
        assertEquals(TileSchedule.ceilDiv(m / chunks, tileM), s.rowTilesPerChunk());
        assertEquals(AtomicGemmConfig.pingPong(config).tiles(m, n, chunks), s.totalTiles());
        assertEveryElementOnceWithinItsChunk(s, first);
        if (s.rowTilesPerChunk() >= 16) {
            // 16 row tiles of a group share the first column tile: tile 15 is rows 960..1023 of the chunk, column 0.
            assertEquals(0, s.tile(15).col0());
            assertEquals(s.tile(0).row0() + 15 * tileM, s.tile(15).row0());
        }
    }

    /**
     * Clustered cooperative tiles: over every CTA of an even grid, the real (non-placeholder) halves store every element once
     * within its chunk and each chunk has the tiles the done hook counts; the two CTAs of a cluster visit the same
     * number of pairs (their rings must stay in step) and each pair's two halves share columns and chunk, rank 0 the
     * upper 128 rows; a placeholder is only ever rank 1's half of a chunk's last pair, and only when the chunk has an
     * odd number of 128-row tiles.
     */
    @ParameterizedTest(name = "{4} m={0} n={1} chunks={2} first={3} grid={5} tileM={6}")
    @CsvSource({"1,1,1,0,N256,2,128", "100,200,1,0,N192,132,128", "129,449,1,0,N224,132,128",
            "300,808,3,2,N256,132,128", "1000,1000,8,7,N160,64,128", "4000,1032,5,4,N256,132,128",
            "4000,1032,5,0,N128,10,128", "3200,760,1,0,N256,132,128", "2048,257,2,1,N192,132,128",
            "1024,4096,1,0,N256,132,128", "192,512,3,1,N128,4,128", "768,640,2,1,N128,16,128",
            "129,449,1,0,N224,6,128"})
    void clusteredPairsCoverEveryOutputElementOnceAndKeepBothCtasInStep(int m, int n, int chunks, int first,
                                                                       TileConfig config, int grid, int tileM) {
        TileSchedule s = new TileSchedule(m, n, chunks, first, config.tileN(), tileM);
        assertEquals(TileSchedule.ceilDiv(m / chunks, 2 * tileM) * s.colTiles() * chunks, s.totalPairs());
        Coverage coverage = new Coverage(s);
        for (int b = 0; b < grid; b += 2) {
            List<TileSchedule.Tile> upper = s.clusterTilesOfBlock(b, grid);
            List<TileSchedule.Tile> lower = s.clusterTilesOfBlock(b + 1, grid);
            assertEquals(upper.size(), lower.size(), "both CTAs of cluster " + b / 2 + " run as many pairs");
            for (int j = 0; j < upper.size(); j++) {
                TileSchedule.Tile u = upper.get(j);
                TileSchedule.Tile l = lower.get(j);
                assertEquals(u.col0(), l.col0(), "a pair shares its B columns: " + u + " " + l);
                assertEquals(u.chunk(), l.chunk(), "a pair lies in one chunk: " + u + " " + l);
                assertEquals(u.row0() + tileM, l.row0(), "rank 1 takes the pair's lower rows: " + u + " " + l);
                assertFalse(u.placeholder(), "rank 0's half always has rows: " + u);
                if (l.placeholder()) {
                    assertEquals(1, s.rowTilesPerChunk() % 2, "a placeholder only where a chunk has odd row tiles");
                    assertEquals((u.chunk() + 1) * s.chunkRows(), u.rowEnd(), "a placeholder follows its chunk's end");
                }
                coverage.add(u);
                if (!l.placeholder()) {
                    coverage.add(l);
                }
            }
        }
        coverage.assertEveryElementOnce();
        // The first pairs come in chunk order from first, as the unclustered schedule's tiles do.
        assertEquals(first, s.clusterTilesOfBlock(0, grid).getFirst().chunk());
    }

    @Test
    void clusteredGridsAreEvenAndNoLargerThanThePairsNeed() {
        TileSchedule s = new TileSchedule(2048, 4096, 1, 0);
        assertEquals(8 * 16, s.totalPairs());
        assertEquals(132, s.clusterGrid(66));
        assertEquals(2 * 128, s.clusterGrid(200));
        TileSchedule tiny = new TileSchedule(128, 256, 1, 0);
        assertEquals(2, tiny.clusterGrid(66));
        assertThrows(IllegalArgumentException.class, () -> s.clusterGrid(0));
        assertThrows(IllegalArgumentException.class, () -> s.clusterTilesOfBlock(0, 131));
        assertThrows(IllegalStateException.class,
                () -> new TileSchedule(1024, 4096, 1, 0, 256, TileSchedule.PINGPONG_TILE_M).totalPairs(),
                "only the cooperative tiles pair up");
        assertThrows(IllegalStateException.class, () -> new TileSchedule(1024, 4096, 1, 0, 256, 256).totalPairs(),
                "pairs do not pair again");
    }

    /**
     * Every tile is at most tileM x tileN, starts on a tileN column boundary and lies within one chunk, chunks come in
     * order from {@code first}, every output element is stored by exactly one tile, and each chunk has the
     * tilesPerChunk tiles the done hook counts to.
     */
    private static void assertEveryElementOnceWithinItsChunk(TileSchedule s, int first) {
        Coverage coverage = new Coverage(s);
        for (int t = 0; t < s.totalTiles(); t++) {
            TileSchedule.Tile tile = s.tile(t);
            assertTrue(tile.row0() < tile.rowEnd(), tile.toString());
            assertEquals(0, tile.col0() % s.tileN(), tile.toString());
            assertEquals((first + t / s.tilesPerChunk()) % s.chunks(), tile.chunk(), "chunk order, tile " + t);
            coverage.add(tile);
        }
        coverage.assertEveryElementOnce();
    }

    /** How many tiles store each output element of a schedule, and how many tiles each chunk has. */
    private static final class Coverage {
        private final TileSchedule s;
        private final int[] owner;
        private final int[] tilesOfChunk;

        Coverage(TileSchedule s) {
            this.s = s;
            this.owner = new int[s.m() * s.n()];
            this.tilesOfChunk = new int[s.chunks()];
        }

        /** Counts a tile after checking that it fits a tile and lies within its own chunk. */
        void add(TileSchedule.Tile t) {
            assertTrue(t.rowEnd() - t.row0() <= s.tileM() && t.colEnd() - t.col0() <= s.tileN(), t.toString());
            assertEquals(t.chunk(), t.row0() / s.chunkRows(), "a tile starts in its own chunk: " + t);
            assertEquals(t.chunk(), (t.rowEnd() - 1) / s.chunkRows(), "a tile ends in its own chunk: " + t);
            tilesOfChunk[t.chunk()]++;
            for (int r = t.row0(); r < t.rowEnd(); r++) {
                for (int c = t.col0(); c < t.colEnd(); c++) {
                    owner[r * s.n() + c]++;
                }
            }
        }

        /** Every element stored by exactly one tile; each chunk has the tilesPerChunk tiles the done hook counts to. */
        void assertEveryElementOnce() {
            for (int i = 0; i < owner.length; i++) {
                assertEquals(1, owner[i], "element (" + i / s.n() + ", " + i % s.n() + ") is stored by " + owner[i]
                        + " tiles");
            }
            for (int c = 0; c < tilesOfChunk.length; c++) {
                assertEquals(s.tilesPerChunk(), tilesOfChunk[c], "tiles of chunk " + c);
            }
        }
    }

    @ParameterizedTest(name = "tileM={0}")
    @CsvSource({"0", "32", "96", "512"})
    void rejectsTileHeightsNoKernelHas(int tileM) {
        assertThrows(IllegalArgumentException.class, () -> new TileSchedule(128, 128, 1, 0, 128, tileM));
    }

    @ParameterizedTest(name = "tileN={0}")
    @CsvSource({"0", "7", "264", "-8", "100"})
    void rejectsTileWidthsNoWgmmaHas(int tileN) {
        assertThrows(IllegalArgumentException.class, () -> new TileSchedule(128, 128, 1, 0, tileN));
    }

    @ParameterizedTest(name = "k={0} -> {1}")
    @CsvSource({"1,1", "16,1", "64,1", "65,2", "1000,16", "8192,128"})
    void kStepsCoverKWithTheLastOnePartial(int k, int steps) {
        assertEquals(steps, TileSchedule.kSteps(k));
    }

    @ParameterizedTest(name = "m={0} chunks={1} first={2}")
    @CsvSource({"100,3,0", "0,1,0", "128,0,0", "128,2,2", "128,2,-1"})
    void rejectsChunkingThatDoesNotFit(int m, int chunks, int first) {
        assertThrows(IllegalArgumentException.class, () -> new TileSchedule(m, 64, chunks, first));
    }
}

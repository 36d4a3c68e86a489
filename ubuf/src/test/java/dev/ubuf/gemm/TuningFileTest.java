package dev.ubuf.gemm;

import static dev.ubuf.tensor.DType.BF16;
import static dev.ubuf.tensor.DType.FP16;
import static dev.ubuf.tensor.DType.FP32;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The GEMM tuning cache on disk: what a line says, that it reads back equal, and that writers do not lose entries. */
class TuningFileTest {
    static final TuningDevice H200 = new TuningDevice("NVIDIA H200", 90, 130101);
    static final String ALGO = "0123456789abcdef".repeat(8);

    @TempDir
    Path dir;

    static MatmulPlan.Key key(int m) {
        GemmSpec spec = GemmSpec.of(BF16, FP32, m, 1024, 512, true, false).withLeadingDimensions(m + 8, 1024, 1032)
                .withSmCountTarget(120);
        return new MatmulPlan.Key(spec, 256, 16, 8, true);
    }

    @Test
    void aGemmIsWrittenAsReadableWords() {
        assertEquals("ab=BF16 c=FP32 m=2048 n=1024 k=512 transA=1 transB=0 lda=2056 ldb=1024 ldc=1032 sms=120 tf32=0 "
                + "accumulate=1 align=256/16/8", TuningFile.formatKey(key(2048)));
    }

    @Test
    void everyPartOfTheKeySurvivesTheRoundTrip() {
        for (MatmulPlan.Key k : List.of(key(2048), new MatmulPlan.Key(GemmSpec.of(FP32, FP32, 8, 16, 24, false, true)
                .withAllowTf32(true), 4, 4, 4, false), new MatmulPlan.Key(GemmSpec.of(FP16, FP16, 1, 2, 3, true, true),
                2, 256, 128, true))) {
            assertEquals(k, TuningFile.parseKey(TuningFile.formatKey(k)));
        }
    }

    @Test
    void keysAreEqualExactlyWhenTheGemmIsTheSame() {
        assertEquals(key(2048), key(2048));
        assertEquals(key(2048).hashCode(), key(2048).hashCode());
        assertNotEquals(key(2048), key(4096));
        MatmulPlan.Key k = key(2048);
        assertNotEquals(k, new MatmulPlan.Key(k.spec(), k.alignA(), k.alignB(), k.alignC(), false));
        assertNotEquals(k, new MatmulPlan.Key(k.spec().withSmCountTarget(0), k.alignA(), k.alignB(), k.alignC(), true));
        assertNotEquals(k, new MatmulPlan.Key(k.spec(), k.alignA(), k.alignB(), 256, true));
    }

    @Test
    void aKeyMissingAWordOrWithAnExtraOneIsRejected() {
        String text = TuningFile.formatKey(key(64));
        assertThrows(IllegalArgumentException.class, () -> TuningFile.parseKey(text.replace(" sms=120", "")));
        assertThrows(IllegalArgumentException.class, () -> TuningFile.parseKey(text + " beta=2"));
        assertThrows(IllegalArgumentException.class, () -> TuningFile.parseKey(text.replace("transA=1", "transA=yes")));
    }

    @Test
    void entriesReadBackEqualAndAMissingFileIsEmpty() throws IOException {
        Path file = dir.resolve("sub/dir/tuning.tsv");
        assertEquals(Map.of(), TuningFile.read(file));
        var entry = new TuningFile.Entry(H200, key(2048));
        var tuned = new TunedAlgorithm(ALGO, 3, 1.25, 1.5);
        TuningFile.merge(file, Map.of(entry, tuned));
        assertEquals(Map.of(entry, tuned), TuningFile.read(file));
        List<String> lines = Files.readAllLines(file);
        assertEquals(TuningFile.VERSION_LINE, lines.getFirst());
        assertEquals("NVIDIA H200\t90\t130101\t" + TuningFile.formatKey(key(2048)) + "\t" + ALGO + "\t3\t1.25\t1.5",
                lines.getLast());
    }

    @Test
    void aMergeKeepsOtherEntriesAndReplacesTheSameGemm() throws IOException {
        Path file = dir.resolve("tuning.tsv");
        var a = new TuningFile.Entry(H200, key(64));
        var b = new TuningFile.Entry(H200, key(128));
        TuningFile.merge(file, Map.of(a, new TunedAlgorithm(ALGO, 1, 2.0, 3.0)));
        TuningFile.merge(file, Map.of(b, new TunedAlgorithm(ALGO, 2, 2.0, 3.0)));
        TuningFile.merge(file, Map.of(a, new TunedAlgorithm(ALGO, 4, 1.0, 3.0)));
        var read = TuningFile.read(file);
        assertEquals(2, read.size());
        assertEquals(4, read.get(a).heuristicRank());
        assertEquals(2, read.get(b).heuristicRank());
    }

    @Test
    void concurrentWritersLoseNoEntry() throws Exception {
        Path file = dir.resolve("tuning.tsv");
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<?>> writes = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                var entry = new TuningFile.Entry(H200, key(64 * (i + 1)));
                writes.add(pool.submit(() -> {
                    TuningFile.merge(file, Map.of(entry, new TunedAlgorithm(ALGO, 0, 1.0, 1.0)));
                    return null;
                }));
            }
            for (Future<?> w : writes) {
                w.get();
            }
        } finally {
            pool.shutdownNow();
        }
        assertEquals(16, TuningFile.read(file).size());
    }

    @Test
    void aFileOfAnotherFormatIsNamedAsSuch() throws IOException {
        Path file = Files.writeString(dir.resolve("tuning.tsv"), "{\"json\": true}\n");
        GemmException e = assertThrows(GemmException.class, () -> TuningFile.read(file));
        assertTrue(e.getMessage().contains("damaged at line 1: the first line must be '" + TuningFile.VERSION_LINE),
                e.getMessage());
    }

    @Test
    void aBadAlgorithmIsRejected() throws IOException {
        String line = "NVIDIA H200\t90\t130101\t" + TuningFile.formatKey(key(64)) + "\tnothex\t0\t1.0\t1.0";
        Path file = Files.writeString(dir.resolve("tuning.tsv"), TuningFile.VERSION_LINE + "\n" + line + "\n");
        GemmException e = assertThrows(GemmException.class, () -> TuningFile.read(file));
        assertTrue(e.getMessage().contains("damaged at line 2"), e.getMessage());
    }
}

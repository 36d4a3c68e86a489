package dev.ubuf.cli;

import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * bench gemm's shape lists, without a GPU: --from-sweep gives the per-rank GEMM of every op of the sweep (the one
 * call that is the sweep's gemm_ms), once each, in the words the PyTorch baseline takes.
 */
class GemmShapesTest {
    @Test
    void fromSweepListsTheOpsOneCallGemmsPerRank() {
        Ubuf r = Ubuf.run("bench", "gemm", "--from-sweep", "--models", "llama3-8b", "--tokens", "1024", "--no-small",
                "--list-shapes");
        assertEquals(0, r.exitCode(), r::toString);
        // QKV (AG): [1024, 4096] x [4096, 6144/2]; proj (RS): [1024, 4096/2] x [2048, 4096]; FC1, FC2 likewise
        assertEquals("gemm:1024,4096,3072 gemm:1024,2048,4096 gemm:1024,4096,14336 gemm:1024,7168,4096",
                r.out().trim());
    }

    @Test
    void fromSweepIsTheSweepsShapesWithoutRepeats() {
        Ubuf sweep = Ubuf.run("bench", "sweep", "--list-shapes");
        Ubuf gemm = Ubuf.run("bench", "gemm", "--from-sweep", "--list-shapes");
        assertEquals(0, sweep.exitCode(), sweep::toString);
        assertEquals(0, gemm.exitCode(), gemm::toString);
        List<String> expected = List.copyOf(new LinkedHashSet<>(Arrays.stream(sweep.out().trim().split(" "))
                .map(w -> "gemm:" + w.substring(w.indexOf(':') + 1)).toList()));
        assertEquals(expected, List.of(gemm.out().trim().split(" ")));
        assertTrue(expected.size() < sweep.out().trim().split(" ").length, "the expert MLP repeats llama3-8b's");
    }

    @Test
    void shapesTakesSeveralWordsAndTheBaselinesPrefix() {
        Ubuf r = Ubuf.run("bench", "gemm", "--shapes", "1,2,3;gemm:4,5,6", "7,8,9", "1,2,3", "--list-shapes");
        assertEquals(0, r.exitCode(), r::toString);
        assertEquals("gemm:1,2,3 gemm:4,5,6 gemm:7,8,9", r.out().trim());
    }

    @Test
    void shapesAreGivenOneWay() {
        for (String[] args : List.of(new String[]{"bench", "gemm", "--m", "8", "--shapes", "1,2,3"},
                new String[]{"bench", "gemm", "--from-sweep", "--shapes", "1,2,3"})) {
            Ubuf r = Ubuf.run(args);
            assertEquals(2, r.exitCode(), r::toString);
            assertTrue(r.err().contains("give shapes one way"), r::toString);
        }
        Ubuf r = Ubuf.run("bench", "gemm", "--tokens", "1024");
        assertEquals(2, r.exitCode(), r::toString);
        assertTrue(r.err().contains("--tokens selects sweep shapes: it needs --from-sweep"), r::toString);
        r = Ubuf.run("bench", "gemm", "--shapes", "1,2");
        assertEquals(2, r.exitCode(), r::toString);
        assertTrue(r.err().contains("--shapes: a shape is M,K,N (three positive integers), got '1,2'"), r::toString);
    }

    @Test
    void negatedFlagsTurnOffWhatIsOnByDefault() {
        // picocli sets a negatable flag that defaults to true to false when its positive form is given, unless
        // fallbackValue says otherwise: --no-small and --no-copy-engine must turn those off, --small keep it on
        SweepBenchCommand off = new SweepBenchCommand();
        new picocli.CommandLine(off).parseArgs("--no-small", "--no-copy-engine");
        assertEquals(List.of(false, false), List.of(off.selection.small, off.common.copyEngine));
        SweepBenchCommand on = new SweepBenchCommand();
        new picocli.CommandLine(on).parseArgs("--small", "--copy-engine");
        assertEquals(List.of(true, true), List.of(on.selection.small, on.common.copyEngine));
    }

    @Test
    void variantsAreWorkspaceMibAndSmCountTargetCheckedBeforeGpuWork() {
        for (String[] bad : List.of(new String[]{"32", "a variant is MIB:SMS (e.g. 0:132), got '32'"},
                new String[]{"x:1", "a variant is MIB:SMS with two integers, got 'x:1'"},
                new String[]{"2048:0", "workspace MiB must be 0..1024, got '2048:0'"},
                new String[]{"4:-1", "SM_COUNT_TARGET must be >= 0 (0 = not set), got '4:-1'"})) {
            Ubuf r = Ubuf.run("bench", "gemm", "--variant", bad[0], "--list-shapes");
            assertEquals(2, r.exitCode(), r::toString);
            assertTrue(r.err().contains("--variant: " + bad[1]), r::toString);
        }
        assertEquals("cublaslt:ws0m:sm132", GemmBenchCommand.Variant.parse(" 0 : 132 ").method());
    }

    @Test
    void serveTakesItsShapesFromStandardInputOnly() {
        Ubuf r = Ubuf.run("bench", "gemm", "--serve", "--shapes", "1,2,3");
        assertEquals(2, r.exitCode(), r::toString);
        assertTrue(r.err().contains("--serve reads its shapes from standard input"), r::toString);
    }
}

package dev.ubuf.layers.kernels;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.ubuf.layers.reference.HostLayerMath;
import dev.ubuf.tensor.DType;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * The layer kernels' CUDA source, run on the CPU by kernels/src/test/cpu/layer_kernels_emulator.cpp (blocks in
 * turn, a block's threads as host threads, the block reductions' barriers and shuffles emulated), compared with
 * the float64 reference {@link HostLayerMath}: every kernel, fp32/fp16/bf16, vector and scalar paths, strided and
 * misaligned views, several geometries. Checks the indexing and the math of the source without a GPU; the device's
 * own math functions and timing are for the GPU test. Skipped, saying why, without g++ and the CUDA headers.
 */
class LayerKernelsEmulatedTest {
    private static final Path SOURCE = Path.of("../kernels/src/test/cpu/layer_kernels_emulator.cpp");
    private static final Path KERNELS = Path.of("../kernels/src/main/cuda");

    record Case(String name, String family, String dtype, int rows, int cols, Map<String, String> params,
                Map<String, double[]> arrays) {
        double[] a(String key) {
            double[] v = arrays.get(key);
            if (v == null) {
                throw new IllegalStateException(name + " has no array " + key);
            }
            return v;
        }

        double param(String key) {
            return Double.parseDouble(params.get(key));
        }
    }

    private static final Map<String, Case> CASES = new LinkedHashMap<>();
    private static String unavailable;
    private static String emulatorFailures = "";
    private static int stagedRuns;
    private static int lnWordRuns;
    private static int lnPairedRuns;
    private static int denseRuns;
    private static int wordRuns;
    private static int colsRuns;

    @BeforeAll
    static void runEmulator() throws IOException, InterruptedException {
        Path gxx = onPath("g++");
        Path include = cudaInclude();
        if (gxx == null || include == null) {
            unavailable = gxx == null ? "g++ is not on PATH" : "no CUDA headers (cuda_fp16.h) next to nvcc or in /usr/local/cuda";
            System.out.println("SKIPPED (kernel emulation): " + unavailable);
            return;
        }
        Path dir = Files.createDirectories(Path.of("target", "kernel-emulator"));
        Path binary = dir.resolve("layer_kernels_emulator");
        // -fno-strict-aliasing: the kernels read 16-byte words through uint4 casts, which nvcc compiles as meant
        // but g++ -O2 may not.
        run(List.of(gxx.toString(), "-std=c++20", "-O2", "-fno-strict-aliasing", "-pthread", "-Wno-unknown-pragmas",
                "-I" + include,
                "-I" + KERNELS, SOURCE.toString(), "-o", binary.toString()), dir.resolve("compile.log"));
        Path out = dir.resolve("cases.txt");
        int rc = run(List.of(binary.toString()), out);
        parse(Files.readAllLines(out, StandardCharsets.US_ASCII));
        if (rc != 0 && emulatorFailures.isEmpty()) {
            emulatorFailures = "the emulator exited with " + rc;
        }
    }

    private static int run(List<String> command, Path output) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(output.toFile()).start();
        if (!p.waitFor(5, TimeUnit.MINUTES)) {
            p.destroyForcibly();
            throw new IllegalStateException(command.getFirst() + " did not finish in 5 minutes");
        }
        if (p.exitValue() != 0 && command.size() > 1) {
            throw new IllegalStateException("compiling the kernel emulator failed:\n" + Files.readString(output));
        }
        return p.exitValue();
    }

    private static void parse(List<String> lines) {
        Case current = null;
        for (String line : lines) {
            String[] t = line.split(" ");
            switch (t[0]) {
                case "case" -> {
                    Map<String, String> params = new HashMap<>();
                    for (int i = 6; i < t.length; i++) {
                        String[] kv = t[i].split("=", 2);
                        params.put(kv[0], kv[1]);
                    }
                    current = new Case(t[1], t[2], t[3], Integer.parseInt(t[4]), Integer.parseInt(t[5]), params,
                            new HashMap<>());
                }
                case "array" -> {
                    int n = Integer.parseInt(t[2]);
                    double[] v = new double[n];
                    for (int i = 0; i < n; i++) {
                        v[i] = Double.parseDouble(t[3 + i]);
                    }
                    current.arrays().put(t[1], v);
                }
                case "end" -> CASES.put(current.name(), current);
                case "guard-violation" -> emulatorFailures += t[1] + " wrote outside its output view; ";
                case "staged-mismatch" -> emulatorFailures += t[1] + ": the staged LayerNorm backward's bits differ"
                        + " from the register-only kernel's; ";
                case "staged-too-large" -> emulatorFailures += t[1] + ": the staged rows exceed the emulated shared"
                        + " memory; ";
                case "staged" -> stagedRuns = Integer.parseInt(t[1]);
                case "ln-words" -> lnWordRuns = Integer.parseInt(t[1]);
                case "ln-paired" -> lnPairedRuns = Integer.parseInt(t[1]);
                case "ln-paired-mismatch" -> emulatorFailures += t[1] + ": the paired LayerNorm forward's bits"
                        + " differ from the other forward's; ";
                case "ln-words-mismatch" -> emulatorFailures += t[1] + ": the LayerNorm forward's word kernel's bits"
                        + " differ from the other forward's; ";
                case "dense" -> denseRuns = Integer.parseInt(t[1]);
                case "words" -> wordRuns = Integer.parseInt(t[1]);
                case "cols" -> colsRuns = Integer.parseInt(t[1]);
                case "dense-mismatch" -> emulatorFailures += t[1] + ": GELU's dense kernels' bits differ from the"
                        + " row/column kernels'; ";
                case "cols-mismatch" -> emulatorFailures += t[1] + ": the biased GELU's column kernel's bits differ"
                        + " from the map's; ";
                default -> {
                }
            }
        }
    }

    private static Path onPath(String tool) {
        String path = System.getenv("PATH");
        for (String d : path == null ? new String[0] : path.split(File.pathSeparator)) {
            if (!d.isEmpty() && Files.isExecutable(Path.of(d, tool))) {
                return Path.of(d, tool);
            }
        }
        return null;
    }

    private static Path cudaInclude() {
        List<Path> candidates = new ArrayList<>();
        Path nvcc = onPath("nvcc");
        if (nvcc != null) {
            candidates.add(nvcc.toAbsolutePath().getParent().resolveSibling("include"));
        }
        candidates.add(Path.of("/usr/local/cuda/include"));
        return candidates.stream().filter(d -> Files.isRegularFile(d.resolve("cuda_fp16.h"))).findFirst().orElse(null);
    }

    /** Round-off allowed per output element, as a fraction of (|reference| + the output's RMS). */
    static double tolerance(String dtype) {
        return switch (dtype) {
            case "f32" -> 0x1p-17; // fp32 math: sums over a row, the host's tanhf/expf
            case "f16" -> 0x1p-10; // one ulp at 1
            case "bf16" -> 0x1p-7;
            default -> throw new IllegalArgumentException(dtype);
        };
    }

    static void assertClose(double[] expected, double[] actual, double tol, String what) {
        assertEquals(expected.length, actual.length, what + ": length");
        double sq = 0;
        for (double e : expected) {
            sq += e * e;
        }
        double rms = Math.sqrt(sq / expected.length);
        for (int i = 0; i < expected.length; i++) {
            double allowed = tol * (Math.abs(expected[i]) + rms);
            int at = i;
            assertTrue(Math.abs(actual[i] - expected[i]) <= allowed, () -> what + "[" + at + "]: expected "
                    + expected[at] + ", got " + actual[at] + " (allowed " + allowed + ")");
        }
    }

    @Test
    void theEmulatorRanEveryCaseWithoutWritingOutsideItsViews() {
        assumeTrue(unavailable == null, () -> "kernel emulation skipped: " + unavailable);
        assertEquals("", emulatorFailures);
        assertEquals(78, CASES.size(), "25 cases for each of fp32, fp16, bf16, and 3 of the FP8 byte transpose");
        assertTrue(stagedRuns >= 6, "the staged LayerNorm backward ran beside the register-only one in at least two"
                + " cases of each type, got " + stagedRuns);
        assertTrue(lnWordRuns >= 6, "the LayerNorm forward's word kernel ran beside the other one in at least two"
                + " cases of each type, got " + lnWordRuns);
        assertEquals(14, lnPairedRuns, "the LayerNorm forward's paired word kernel beside the other forwards: 2, 3 and"
                + " 4 warps in each type, and on rows of exactly its words in two cases (bf16, fp16) or one (fp32)");
        assertEquals(9, denseRuns, "GELU's dense kernels beside the row/column ones in three cases of each type");
        assertEquals(9, wordRuns, "the SwiGLU forward's word kernel beside the other forwards in three cases of each"
                + " type (one without a bias, two with)");
        assertEquals(6, colsRuns, "the biased GELU forward's column kernel, on a wide grid and a narrow one, beside"
                + " the map's bits in two cases of each type");
    }

    @TestFactory
    Stream<DynamicTest> everyCaseMatchesTheFloat64Reference() {
        assumeTrue(unavailable == null, () -> "kernel emulation skipped: " + unavailable);
        return CASES.values().stream().map(c -> DynamicTest.dynamicTest(c.name(), () -> check(c)));
    }

    @TestFactory
    Stream<DynamicTest> vectorAndScalarPathsGiveBitIdenticalLayerNorms() {
        assumeTrue(unavailable == null, () -> "kernel emulation skipped: " + unavailable);
        return Stream.of("f32", "f16", "bf16").map(t -> DynamicTest.dynamicTest(t, () -> {
            Case vec = CASES.get("ln_vec_" + t);
            Case scalar = CASES.get("ln_scalar_" + t);
            assertArrayEquals(vec.a("x"), scalar.a("x"), "same input");
            for (String out : List.of("y", "mean", "rstd", "dx", "dgamma", "dbeta")) {
                assertArrayEquals(vec.a(out), scalar.a(out), out + ": the same columns in the same order");
            }
        }));
    }

    @TestFactory
    Stream<DynamicTest> theFusedLayerNormBackwardGivesTheTwoKernelsBits() {
        assumeTrue(unavailable == null, () -> "kernel emulation skipped: " + unavailable);
        return Stream.of("f32", "f16", "bf16").map(t -> DynamicTest.dynamicTest(t, () -> {
            List<Case> fused = CASES.values().stream()
                    .filter(c -> c.family().equals("layernorm") && c.dtype().equals(t) && c.param("fused") == 1).toList();
            // Both paths of each kernel must have run for this dtype.
            assertTrue(fused.size() >= 2, "fused cases: " + fused.size());
            assertTrue(CASES.values().stream().anyMatch(c -> c.family().equals("layernorm") && c.dtype().equals(t)
                    && c.param("fused") == 0), "a two-kernel case");
            assertTrue(CASES.values().stream().anyMatch(c -> c.family().equals("layernorm") && c.dtype().equals(t)
                    && c.param("registers") == 0), "a looped forward case");
            for (Case c : fused) {
                for (String out : List.of("dx", "dgamma", "dbeta")) {
                    assertArrayEquals(c.a(out + "_two"), c.a(out), c.name() + " " + out
                            + ": the same sums in the same order");
                }
            }
        }));
    }

    private static void check(Case c) {
        if (c.family().equals("transpose")) {
            // FP8 codes moved as bytes: y [cols, rows] holds x [rows, cols] transposed, every byte exactly.
            double[] x = c.a("x");
            double[] y = c.a("y");
            assertEquals((long) c.rows() * c.cols(), x.length, "x");
            assertEquals(x.length, y.length, "y");
            for (int r = 0; r < c.rows(); r++) {
                for (int col = 0; col < c.cols(); col++) {
                    int at = r * c.cols() + col;
                    int row = r;
                    int column = col;
                    assertEquals(x[at], y[col * c.rows() + r], () -> "y[" + column + "][" + row + "]");
                }
            }
            return;
        }
        double tol = tolerance(c.dtype());
        int rows = c.rows();
        int cols = c.cols();
        switch (c.family()) {
            case "layernorm" -> {
                boolean zc = c.param("zero_centered") != 0;
                HostLayerMath.LayerNormForward f = HostLayerMath.layerNormForward(c.a("x"), rows, cols, c.a("gamma"),
                        c.a("beta"), c.param("eps"), zc);
                assertClose(f.mean(), c.a("mean"), 0x1p-20, "mean");
                assertClose(f.rstd(), c.a("rstd"), 0x1p-18, "rstd");
                assertClose(f.y(), c.a("y"), tol, "y");
                // The backward from the kernel's own statistics, as the GPU run would use them.
                HostLayerMath.LayerNormBackward b = HostLayerMath.layerNormBackward(c.a("dy"), c.a("x"), c.a("mean"),
                        c.a("rstd"), c.a("gamma"), zc, rows, cols);
                assertClose(b.dx(), c.a("dx"), tol, "dx");
                assertClose(b.dgamma(), c.a("dgamma"), tol, "dgamma");
                assertClose(b.dbeta(), c.a("dbeta"), tol, "dbeta");
                assertClose(b.dx(), c.a("dx_two"), tol, "dx (two kernels)");
                assertClose(b.dgamma(), c.a("dgamma_two"), tol, "dgamma (two kernels)");
                assertClose(b.dbeta(), c.a("dbeta_two"), tol, "dbeta (two kernels)");
            }
            case "bias_grad" -> {
                double[] expected = HostLayerMath.columnSums(c.a("dy"), rows, cols);
                double[] before = c.a("db_before");
                for (int i = 0; i < cols; i++) {
                    expected[i] += before[i];
                }
                assertClose(expected, c.a("db"), tol, "db (accumulated onto its old value)");
            }
            case "gelu" -> {
                assertClose(HostLayerMath.gelu(c.a("x")), c.a("y"), tol, "y");
                assertClose(HostLayerMath.geluBackward(c.a("dy"), c.a("x")), c.a("dx"), tol, "dx");
                HostLayerMath.BiasGelu bg = HostLayerMath.biasGelu(c.a("x"), c.a("bias"), rows, cols);
                assertClose(bg.y(), c.a("bias_y"), tol, "bias_y");
                assertClose(bg.pre(), c.a("bias_pre"), tol, "bias_pre");
                assertArrayEquals(c.a("bias_y"), c.a("bias_y_no_pre"), "with or without storing pre");
            }
            case "swiglu" -> {
                if (c.arrays().containsKey("y_words")) {
                    assertArrayEquals(c.a("y"), c.a("y_words"), c.name() + ": the word kernel's bits");
                }
                assertClose(HostLayerMath.swiglu(c.a("x"), rows, cols), c.a("y"), tol, "y");
                assertClose(HostLayerMath.swigluBackward(c.a("dy"), c.a("x"), rows, cols), c.a("dx"), tol, "dx");
                assertArrayEquals(c.a("dx"), c.a("dx_in_place"), "in place over x");
            }
            case "bias_activation" -> {
                // The fused kernels give the bits of the bias add, the activation and its backward; their column
                // sums add the rows in another fixed order (checked against float64 below).
                for (String out : List.of("y", "dx")) {
                    assertArrayEquals(c.a(out + "_two"), c.a(out), c.name() + " " + out + ": fused against unfused");
                }
                if (c.arrays().containsKey("y_words")) {
                    assertArrayEquals(c.a("y_two"), c.a("y_words"), c.name() + ": the word kernel's bits");
                }
                assertClose(c.a("db_two"), c.a("db"), tol, "db against the unfused column sums");
                assertArrayEquals(c.a("dx"), c.a("dx_in_place"), "in place over x");
                assertArrayEquals(c.a("parts"), c.a("parts_in_place"), "the partial sums in place over x");
                boolean swiglu = c.param("halves") == 2;
                int w = swiglu ? 2 * cols : cols;
                // z = x + bias rounded to the dtype, as the kernels document it (a separate bias add's result).
                DType t = switch (c.dtype()) {
                    case "f32" -> DType.FP32;
                    case "f16" -> DType.FP16;
                    default -> DType.BF16;
                };
                double[] z = c.a("x").clone();
                double[] bias = c.a("bias");
                for (int r = 0; r < rows; r++) {
                    for (int col = 0; col < w; col++) {
                        z[r * w + col] = t.decode(t.encode((float) (z[r * w + col] + bias[col])));
                    }
                }
                assertClose(swiglu ? HostLayerMath.swiglu(z, rows, cols) : HostLayerMath.gelu(z), c.a("y"), tol, "y");
                assertClose(swiglu ? HostLayerMath.swigluBackward(c.a("dy"), z, rows, cols)
                        : HostLayerMath.geluBackward(c.a("dy"), z), c.a("dx"), tol, "dx");
                double[] expected = HostLayerMath.columnSums(c.a("dx"), rows, w);
                double[] before = c.a("db_before");
                for (int i = 0; i < w; i++) {
                    expected[i] += before[i];
                }
                assertClose(expected, c.a("db"), tol, "db (the column sums of dx, accumulated onto the old value)");
            }
            case "sgd" -> {
                double lr = c.param("lr");
                double[] w0 = c.a("w_before");
                double[] g0 = c.a("g_before");
                double[] expected = new double[w0.length];
                for (int i = 0; i < w0.length; i++) {
                    expected[i] = w0[i] - lr * g0[i];
                }
                assertClose(expected, c.a("w"), tol, "w");
                assertArrayEquals(new double[w0.length], c.a("g"), "the gradient cleared");
            }
            default -> throw new IllegalStateException("unknown case family " + c.family());
        }
    }
}

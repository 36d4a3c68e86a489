package dev.ubuf.atomic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.ubuf.tensor.DType;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The sm_90a image holds every kernel AtomicGemmKernel can name, each taking the parameters the launcher passes,
 * and (where a disassembler is installed) its machine code uses the Hopper tensor-core instruction HGMMA.
 *
 * <p>By hand: {@code cuobjdump -sass kernels/target/classes/dev/ubuf/kernels/ubuf_sm90a.fatbin | grep -c HGMMA}
 * (or {@code nvdisasm} on the cubin of {@code nvcc -cubin -gencode arch=compute_90a,code=sm_90a}).
 */
class Sm90aImageTest {
    /** What HopperDriver.launch marshals: two 128-byte tensor maps, then the scalars in the kernel's order (the last
     * four: splits, split-K workspace, semaphores, launch id). */
    static final String PARAMS = "b128,b128,u64,u64,u32,u32,u32,f32,f32,u32,u32,u64,u32,u64,u64,u32,u64,u64,u32,u64,u64,u32";

    static List<String> allKernelNames() {
        List<String> names = new ArrayList<>();
        for (DType in : new DType[]{DType.BF16, DType.FP16}) {
            for (BLayout layout : BLayout.values()) {
                for (DType out : new DType[]{DType.BF16, DType.FP32}) {
                    for (TileConfig config : TileConfig.values()) {
                        if (config.supports(layout)) {
                            names.add(AtomicGemmKernel.kernelName(in, layout, out, config));
                            names.add(AtomicGemmKernel.kernelName(in, layout, out, AtomicGemmConfig.pingPong(config)));
                            names.add(AtomicGemmKernel.kernelName(in, layout, out,
                                    AtomicGemmConfig.cooperativeCluster(config)));
                        }
                    }
                }
            }
        }
        return names;
    }

    @Test
    void theLauncherCanNameNinetySixKernels() {
        // 8 type and layout combinations of the default tile; NK 224/192/160/128 and KN 192/128: 4 x 4 + 4 x 2;
        // each cooperative, ping-pong and clustered cooperative.
        assertEquals(3 * (8 + 16 + 8), allKernelNames().size());
        assertEquals(allKernelNames().size(), allKernelNames().stream().distinct().count());
    }

    @Test
    void everyKernelTheLauncherNamesIsInTheImageWithTheParametersItPasses() {
        assumeTrue(Sm90aImage.isAvailable(), "ubuf-kernels was built without nvcc: no sm_90a image to check");
        Properties info = Sm90aImage.buildInfo();
        assertEquals("sm_90a", info.getProperty("cubin.archs"));
        for (String name : allKernelNames()) {
            assertTrue(Sm90aImage.kernels().contains(name), name + " is in " + Sm90aImage.kernels());
            assertEquals(PARAMS, info.getProperty("params." + name), "parameters of " + name);
        }
    }

    @Test
    void machineCodeUsesHopperTensorCoreInstructions(@TempDir Path dir) throws IOException, InterruptedException {
        assumeTrue(Sm90aImage.isAvailable(), "ubuf-kernels was built without nvcc: no sm_90a image to check");
        Optional<Path> cuobjdump = tool("cuobjdump");
        assumeTrue(cuobjdump.isPresent(), "no cuobjdump on PATH or in /usr/local/cuda/bin: SASS not checked here");
        Path fatbin = dir.resolve("ubuf_sm90a.fatbin");
        Files.write(fatbin, Sm90aImage.fatbin());
        Process p = new ProcessBuilder(cuobjdump.get().toString(), "-sass", fatbin.toString())
                .redirectErrorStream(true).start();
        String sass = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS) && p.exitValue() == 0, "cuobjdump failed:\n" + sass);
        for (String name : allKernelNames()) {
            int at = sass.indexOf("Function : " + name);
            assertTrue(at >= 0, name + " is in the SASS");
            int end = sass.indexOf("Function : ", at + 1);
            String body = sass.substring(at, end < 0 ? sass.length() : end);
            assertTrue(body.contains("HGMMA"), name + " uses HGMMA (wgmma), not a slower path");
            int width = name.matches(".*_n[0-9]+") ? Integer.parseInt(name.replaceAll(".*_n", "")) : 256;
            assertTrue(body.contains("HGMMA.64x" + width + "x16"), name + " uses HGMMA.64x" + width + "x16");
            assertTrue(!body.contains("LDL") && !body.contains("STL"), name + " keeps its accumulators in registers");
        }
    }

    static Optional<Path> tool(String name) {
        List<Path> candidates = new ArrayList<>();
        for (String dir : System.getenv().getOrDefault("PATH", "").split(java.io.File.pathSeparator)) {
            if (!dir.isEmpty()) {
                candidates.add(Path.of(dir, name));
            }
        }
        candidates.add(Path.of("/usr/local/cuda/bin", name));
        return candidates.stream().filter(Files::isExecutable).findFirst();
    }
}

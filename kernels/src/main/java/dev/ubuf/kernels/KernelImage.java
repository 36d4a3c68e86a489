package dev.ubuf.kernels;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;

/**
 * The kernel fatbin packaged in this jar ({@value #FATBIN_RESOURCE}) and what its build recorded about it
 * ({@value #PROPERTIES_RESOURCE}): the kernel names and the GPU architectures it carries. Load the image with
 * cuModuleLoadData (JCuda: {@code cuModuleLoadData(module, image.fatbin())}).
 */
public final class KernelImage {
    public static final String FATBIN_RESOURCE = "dev/ubuf/kernels/ubuf_kernels.fatbin";
    public static final String PROPERTIES_RESOURCE = "dev/ubuf/kernels/kernels.properties";

    private final byte[] fatbin;
    private final Set<String> kernels;
    private final List<String> cubinArchs;
    private final List<String> ptxArchs;

    private KernelImage(byte[] fatbin, Set<String> kernels, List<String> cubinArchs, List<String> ptxArchs) {
        this.fatbin = fatbin;
        this.kernels = kernels;
        this.cubinArchs = cubinArchs;
        this.ptxArchs = ptxArchs;
    }

    /** What the build recorded ({@value #PROPERTIES_RESOURCE}); empty when the jar has none. */
    public static Properties buildInfo() {
        Properties p = new Properties();
        try (InputStream in = resource(PROPERTIES_RESOURCE)) {
            if (in != null) {
                p.load(in);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + PROPERTIES_RESOURCE, e);
        }
        return p;
    }

    /** True when this jar was built with nvcc and carries the fatbin. */
    public static boolean isAvailable() {
        return "true".equals(buildInfo().getProperty("built")) && KernelImage.class.getClassLoader()
                .getResource(FATBIN_RESOURCE) != null;
    }

    /**
     * Reads the fatbin and its kernel list from the classpath.
     *
     * @throws IllegalStateException when the jar was built without nvcc, or its resources are missing
     */
    public static KernelImage load() {
        Properties info = buildInfo();
        if (info.isEmpty()) {
            throw new IllegalStateException("ubuf-kernels: " + PROPERTIES_RESOURCE
                    + " is not on the classpath; is the ubuf-kernels jar missing?");
        }
        if (!"true".equals(info.getProperty("built"))) {
            throw new IllegalStateException("ubuf-kernels was built without nvcc, so it has no CUDA kernels: "
                    + "install the CUDA toolkit (nvcc on PATH or in /usr/local/cuda/bin) and rebuild");
        }
        byte[] bytes;
        try (InputStream in = resource(FATBIN_RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException("ubuf-kernels: " + FATBIN_RESOURCE
                        + " is missing although the build recorded built=true");
            }
            bytes = in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + FATBIN_RESOURCE, e);
        }
        return new KernelImage(bytes, Set.copyOf(new TreeSet<>(list(info, "kernels"))), list(info, "cubin.archs"),
                list(info, "ptx.archs"));
    }

    /** A copy of the fatbin's bytes. */
    public byte[] fatbin() {
        return fatbin.clone();
    }

    /** The kernel entry points in the fatbin. */
    public Set<String> kernels() {
        return kernels;
    }

    /** Architectures with machine code in the fatbin, e.g. [sm_80, sm_90]. */
    public List<String> cubinArchs() {
        return cubinArchs;
    }

    /** Virtual architectures with PTX in the fatbin (JIT-compiled by the driver for newer GPUs), e.g. [compute_90]. */
    public List<String> ptxArchs() {
        return ptxArchs;
    }

    /** Returns {@code name} if the fatbin has that kernel, else throws naming the kernels it has. */
    public String requireKernel(String name) {
        if (!kernels.contains(name)) {
            throw new IllegalArgumentException("kernel '" + name + "' is not in " + FATBIN_RESOURCE + " (it has "
                    + new TreeSet<>(kernels) + ")");
        }
        return name;
    }

    private static InputStream resource(String name) {
        return KernelImage.class.getClassLoader().getResourceAsStream(name);
    }

    private static List<String> list(Properties p, String key) {
        String v = p.getProperty(key, "").trim();
        return v.isEmpty() ? List.of() : Arrays.stream(v.split(",")).map(String::trim).toList();
    }
}

package dev.ubuf.atomic;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Arrays;
import java.util.Properties;
import java.util.Set;

/**
 * The sm_90a fatbin of the ubuf-kernels jar ({@value #FATBIN_RESOURCE}, built by build-fatbin-sm90a.sh) and what
 * its build recorded ({@value #PROPERTIES_RESOURCE}: kernel names, parameter lists).
 */
public final class Sm90aImage {
    public static final String FATBIN_RESOURCE = "dev/ubuf/kernels/ubuf_sm90a.fatbin";
    public static final String PROPERTIES_RESOURCE = "dev/ubuf/kernels/sm90a.properties";

    private Sm90aImage() {
    }

    /** What the build recorded; empty when the jar has none. */
    public static Properties buildInfo() {
        Properties p = new Properties();
        try (InputStream in = Sm90aImage.class.getClassLoader().getResourceAsStream(PROPERTIES_RESOURCE)) {
            if (in != null) {
                p.load(in);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + PROPERTIES_RESOURCE, e);
        }
        return p;
    }

    /** True when the jar was built with nvcc and carries the sm_90a fatbin. */
    public static boolean isAvailable() {
        return "true".equals(buildInfo().getProperty("built"))
                && Sm90aImage.class.getClassLoader().getResource(FATBIN_RESOURCE) != null;
    }

    /** The kernel names the build recorded. */
    public static Set<String> kernels() {
        String v = buildInfo().getProperty("kernels", "").trim();
        return v.isEmpty() ? Set.of() : Set.copyOf(Arrays.asList(v.split(",")));
    }

    /** The fatbin's bytes; throws saying why when the build had no nvcc. */
    static byte[] fatbin() {
        if (!isAvailable()) {
            throw new IllegalStateException("ubuf-kernels has no sm_90a fatbin (" + FATBIN_RESOURCE + "): it was built"
                    + " without nvcc; install the CUDA toolkit and rebuild");
        }
        try (InputStream in = Sm90aImage.class.getClassLoader().getResourceAsStream(FATBIN_RESOURCE)) {
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + FATBIN_RESOURCE, e);
        }
    }
}

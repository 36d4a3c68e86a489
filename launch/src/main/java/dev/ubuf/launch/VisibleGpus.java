package dev.ubuf.launch;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.OptionalInt;
import java.util.stream.Stream;

/**
 * Counts the GPUs the ranks of this node could use, without starting CUDA: the NVIDIA driver lists one folder per GPU
 * under {@code /proc/driver/nvidia/gpus}, and {@code CUDA_VISIBLE_DEVICES} narrows that set. Without the driver's
 * folder nothing can be counted (a machine without GPUs, or another vendor's), and the count is empty.
 */
final class VisibleGpus {
    static final Path DRIVER_GPUS = Path.of("/proc/driver/nvidia/gpus");
    static final String CUDA_VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES";

    private VisibleGpus() {
    }

    static OptionalInt count(Path driverGpus, Map<String, String> env) {
        if (!Files.isDirectory(driverGpus)) {
            return OptionalInt.empty();
        }
        int installed;
        try (Stream<Path> gpus = Files.list(driverGpus)) {
            installed = (int) gpus.count();
        } catch (IOException e) {
            return OptionalInt.empty();
        }
        String visible = env.get(CUDA_VISIBLE_DEVICES);
        return OptionalInt.of(visible == null ? installed : Math.min(installed, listed(visible, installed)));
    }

    /**
     * Devices named by a CUDA_VISIBLE_DEVICES value. CUDA reads it up to the first entry that names no device (such
     * as -1, the usual way to hide every GPU), so counting stops there too. UUIDs (GPU-..., MIG-...) count as one.
     */
    static int listed(String value, int installed) {
        if (value.isBlank()) {
            return 0;
        }
        int count = 0;
        for (String entry : value.split(",")) {
            String e = entry.trim();
            if (e.matches("\\d+")) {
                if (Long.parseLong(e) >= installed) {
                    break;
                }
            } else if (!e.startsWith("GPU-") && !e.startsWith("MIG-")) {
                break;
            }
            count++;
        }
        return count;
    }
}

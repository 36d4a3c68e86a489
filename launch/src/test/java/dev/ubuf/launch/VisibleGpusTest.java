package dev.ubuf.launch;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.OptionalInt;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** How the launcher counts the GPUs a node's ranks could use, from the driver's folder and CUDA_VISIBLE_DEVICES. */
class VisibleGpusTest {
    @TempDir
    Path driver;

    private Path withGpus(int n) throws IOException {
        for (int i = 0; i < n; i++) {
            Files.createDirectory(driver.resolve("0000:0" + i + ":00.0"));
        }
        return driver;
    }

    @Test
    void withoutTheDriversFolderNothingCanBeCounted() {
        assertEquals(OptionalInt.empty(), VisibleGpus.count(driver.resolve("absent"), Map.of()));
    }

    @Test
    void everyGpuOfTheDriverCountsWhenCudaVisibleDevicesIsUnset() throws IOException {
        assertEquals(OptionalInt.of(4), VisibleGpus.count(withGpus(4), Map.of()));
    }

    @Test
    void cudaVisibleDevicesNarrowsTheCount() throws IOException {
        Path gpus = withGpus(8);
        assertEquals(OptionalInt.of(2), VisibleGpus.count(gpus, Map.of("CUDA_VISIBLE_DEVICES", "3,5")));
        assertEquals(OptionalInt.of(1), VisibleGpus.count(gpus, Map.of("CUDA_VISIBLE_DEVICES", "GPU-8e2c1f")));
        assertEquals(OptionalInt.of(0), VisibleGpus.count(gpus, Map.of("CUDA_VISIBLE_DEVICES", "")));
    }

    @Test
    void countingStopsAtTheFirstEntryThatNamesNoDevice() {
        assertEquals(0, VisibleGpus.listed("-1", 2));
        assertEquals(1, VisibleGpus.listed("0,-1,1", 2));
        assertEquals(1, VisibleGpus.listed("1,7", 2));
    }
}

package dev.ubuf.cli;

import dev.ubuf.bench.ChildJvm;
import dev.ubuf.info.SystemReport;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * `ubuf info > file`: the report reaches a redirected stdout before the process exits. On GPU nodes the file was
 * empty: the report is printed without a newline-triggered flush and main's System.exit dropped the writer's buffer.
 */
class InfoOutputTest {
    /** A two-GPU report, as SystemReport.gather returns on a GPU node. */
    private static final SystemReport REPORT = new SystemReport(12040, "EAGER", "32", "13.0.0 (libcublasLt.so.13)",
            "2.27.3", "present", List.of(device(0), device(1)), List.of(List.of("X", "NV18"), List.of("NV18", "X")),
            true, false, "UB_SKIPMC=1; unicast peer copies are used");

    private static SystemReport.Device device(int i) {
        return new SystemReport.Device(i, "NVIDIA H100 80GB HBM3", "0000:1" + i + ":00.0", 90, 132, 5, 80L << 30, true,
                true, true, true);
    }

    /** Picocli's factory, but `info` reports {@link #REPORT} instead of this machine. */
    private static final CommandLine.IFactory GPU_NODE = new CommandLine.IFactory() {
        @Override
        public <K> K create(Class<K> cls) throws Exception {
            return cls == InfoCommand.class ? cls.cast(new InfoCommand(env -> REPORT))
                    : CommandLine.defaultFactory().create(cls);
        }
    };

    @Test
    void mainsOutputIsAllThereWhenItReturnsToExit() {
        for (String[] args : new String[][]{{"info"}, {"info", "--json"}}) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            // What main runs before System.exit, with byte streams that keep only what was flushed into them.
            int code = UbufCli.run(args, out, err, GPU_NODE);
            String text = out.toString(StandardCharsets.UTF_8);
            String all = "exit " + code + "\n--- stdout\n" + text + "\n--- stderr\n" + err;
            assertEquals(0, code, all);
            if (args.length == 1) {
                assertEquals(REPORT.toText(), text, all);
            } else {
                assertTrue(text.contains("\"driverVersion\" : 12040") && text.contains("NV18"), all);
            }
        }
    }

    @Test
    void throughAPipeInfoSaysWhatItFound() {
        ChildJvm r = ChildJvm.run(Map.of(), List.of(), UbufCli.class, "info");
        switch (r.exitCode()) {
            case 2 -> {
                assertTrue(r.err().startsWith("ubuf info: no usable GPU on this machine: "), r::toString);
                assertEquals(1, r.err().lines().count(), r::toString);
                assertEquals("", r.out(), r::toString);
            }
            case 0 -> assertTrue(r.out().startsWith("CUDA driver ") && r.out().contains("multicast "), r::toString);
            default -> fail("info exits 0 with a GPU, 2 without: " + r);
        }
    }
}

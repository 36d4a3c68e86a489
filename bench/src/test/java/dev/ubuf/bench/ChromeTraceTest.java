package dev.ubuf.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ubuf.trace.StepTrace;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The Chrome trace file, read back with Jackson: the format's structure, names, ids, order and times. */
class ChromeTraceTest {
    @Test
    void writesOneCompleteEventPerSpanWithRanksAsProcessesAndStreamsAsNamedThreads(@TempDir Path dir)
            throws Exception {
        StepTrace trace = TraceSamples.twoRanks();
        Path file = dir.resolve("sub/trace.json");
        ChromeTrace.write(trace, file);
        JsonNode root = new ObjectMapper().readTree(file.toFile());
        assertEquals("ms", root.path("displayTimeUnit").asText());
        assertEquals("test step", root.path("metadata").path("title").asText());
        assertEquals("step-start event after a barrier", root.path("metadata").path("clock_alignment").asText());
        JsonNode events = root.path("traceEvents");
        assertTrue(events.isArray() && !events.isEmpty(), root::toPrettyString);

        Map<Integer, String> processes = new HashMap<>();
        Map<String, String> threads = new HashMap<>();
        List<JsonNode> complete = new ArrayList<>();
        for (JsonNode e : events) {
            String ph = e.path("ph").asText();
            assertTrue(e.has("pid") && e.path("pid").isInt(), e::toString);
            switch (ph) {
                case "M" -> {
                    if (e.path("name").asText().equals("process_name")) {
                        processes.put(e.path("pid").asInt(), e.path("args").path("name").asText());
                    } else if (e.path("name").asText().equals("thread_name")) {
                        threads.put(e.path("pid").asInt() + "/" + e.path("tid").asInt(),
                                e.path("args").path("name").asText());
                    }
                }
                case "X" -> complete.add(e);
                default -> throw new AssertionError("unexpected phase " + ph + ": " + e);
            }
        }
        assertEquals(Map.of(0, "rank 0", 1, "rank 1"), processes);
        for (int pid = 0; pid < 2; pid++) {
            for (int tid = 0; tid < TraceSamples.STREAMS.size(); tid++) {
                assertEquals(TraceSamples.STREAMS.get(tid), threads.get(pid + "/" + tid), "pid " + pid + " tid " + tid);
            }
        }
        int spans = trace.ranks().stream().mapToInt(r -> r.spans().size()).sum();
        assertEquals(spans, complete.size());

        Map<Integer, Double> lastTs = new HashMap<>();
        Set<String> kinds = new HashSet<>();
        for (JsonNode e : complete) {
            int pid = e.path("pid").asInt();
            double ts = e.path("ts").asDouble();
            double dur = e.path("dur").asDouble();
            assertTrue(e.path("ts").isNumber() && e.path("dur").isNumber(), e::toString);
            assertTrue(dur >= 0, e::toString);
            assertTrue(ts >= lastTs.getOrDefault(pid, Double.NEGATIVE_INFINITY), "events of a rank in time order: " + e);
            lastTs.put(pid, ts);
            assertTrue(threads.containsKey(pid + "/" + e.path("tid").asInt()), "tid without a thread name: " + e);
            assertEquals(e.path("cat").asText(), e.path("args").path("kind").asText(), e::toString);
            kinds.add(e.path("cat").asText());
        }
        assertEquals(Set.of("gemm", "copy", "signal", "wait", "op", "kernel", "nccl"), kinds);

        // A span's own detail, time and stream survive: rank 1's copy, 3 µs after rank 0's.
        JsonNode copy = complete.stream().filter(e -> e.path("pid").asInt() == 1 && e.path("cat").asText().equals(
                "copy")).findFirst().orElseThrow();
        assertEquals(15.0, copy.path("ts").asDouble(), 1e-9);
        assertEquals(28.0, copy.path("dur").asDouble(), 1e-9);
        assertEquals(32768, copy.path("args").path("bytes").asLong());
        assertEquals("fc1_fprop: comm 1", threads.get("1/" + copy.path("tid").asInt()));
    }
}

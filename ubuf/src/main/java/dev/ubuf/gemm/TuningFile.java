package dev.ubuf.gemm;

import dev.ubuf.tensor.DType;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;

/**
 * The on-disk cache of tuned GEMMs: UTF-8 text, a version line, then one tab-separated line per GEMM: device name,
 * compute capability, cuBLASLt version, the GEMM ({@link #formatKey}), the chosen algorithm in hex, its rank in the
 * heuristic's list, its time and the heuristic first's time in ms. Lines starting with '#' are comments.
 *
 * <p>Several processes may tune at once (one per GPU): a writer takes an exclusive lock on a sibling ".lock" file,
 * rereads the file, adds its entries and replaces the file atomically, so readers, who take no lock, see the old
 * file or the new one, never half of one.
 */
final class TuningFile {
    static final String VERSION_LINE = "ubuf-gemm-tuning 1";
    private static final String COMMENT =
            "# device\tcc\tcublasLt\tgemm\talgorithm\theuristic rank\tms\theuristic first ms";
    private static final Duration LOCK_PATIENCE = Duration.ofSeconds(30);

    /** One GEMM on one kind of device and cuBLASLt build. */
    record Entry(TuningDevice device, MatmulPlan.Key key) {}

    private TuningFile() {
    }

    /**
     * Every entry of {@code file}, in file order; empty when the file does not exist.
     *
     * @throws GemmException naming the file and line when it is not a tuning file of this format
     */
    static Map<Entry, TunedAlgorithm> read(Path file) throws IOException {
        List<String> lines;
        try {
            lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            return Map.of();
        }
        Map<Entry, TunedAlgorithm> entries = new LinkedHashMap<>();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            if (i == 0) {
                if (!line.equals(VERSION_LINE)) {
                    throw corrupt(file, 1, "the first line must be '" + VERSION_LINE + "', got '" + line + "'", null);
                }
                continue;
            }
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            try {
                parseLine(line).forEach(entries::put);
            } catch (IllegalArgumentException e) { // NumberFormatException included
                throw corrupt(file, i + 1, e.getMessage(), e);
            }
        }
        return entries;
    }

    /** Adds {@code entries} to {@code file} (replacing older ones of the same GEMMs), creating it if needed. */
    @SuppressWarnings("try") // the lock is held for the body's sake, never read
    static void merge(Path file, Map<Entry, TunedAlgorithm> entries) throws IOException {
        Path absolute = file.toAbsolutePath();
        Path directory = absolute.getParent();
        Files.createDirectories(directory);
        Path lockFile = absolute.resolveSibling(absolute.getFileName() + ".lock");
        try (FileChannel channel = FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
             FileLock ignored = lock(channel, lockFile)) {
            Map<Entry, TunedAlgorithm> all = new LinkedHashMap<>(read(absolute));
            all.putAll(entries);
            List<String> lines = new ArrayList<>(all.size() + 2);
            lines.add(VERSION_LINE);
            lines.add(COMMENT);
            all.forEach((entry, algorithm) -> lines.add(formatLine(entry, algorithm)));
            Path temporary = Files.createTempFile(directory, absolute.getFileName() + ".", ".tmp");
            try {
                Files.write(temporary, lines, StandardCharsets.UTF_8);
                Files.move(temporary, absolute, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } finally {
                Files.deleteIfExists(temporary);
            }
        }
    }

    /**
     * The exclusive lock, waiting for other processes (lock) and other threads of this JVM (which make the JVM
     * throw OverlappingFileLockException instead of waiting).
     */
    private static FileLock lock(FileChannel channel, Path lockFile) throws IOException {
        long deadline = System.nanoTime() + LOCK_PATIENCE.toNanos();
        while (true) {
            try {
                FileLock lock = channel.tryLock();
                if (lock != null) {
                    return lock;
                }
            } catch (OverlappingFileLockException e) {
                // another thread of this JVM holds it: wait like for another process
            }
            if (System.nanoTime() - deadline > 0) {
                throw new IOException("could not lock " + lockFile + " within " + LOCK_PATIENCE.toSeconds() + " s");
            }
            LockSupport.parkNanos(Duration.ofMillis(10).toNanos());
        }
    }

    /** One line of the file (see {@link #formatLine}) as its entry and algorithm, in a map of one. */
    static Map<Entry, TunedAlgorithm> parseLine(String line) {
        String[] f = fields(line);
        Entry entry = new Entry(new TuningDevice(f[0], Integer.parseInt(f[1]), Long.parseLong(f[2])), parseKey(f[3]));
        return Map.of(entry, new TunedAlgorithm(f[4], Integer.parseInt(f[5]), Double.parseDouble(f[6]),
                Double.parseDouble(f[7])));
    }

    /** What a line is about (device, cuBLASLt version and GEMM), without its choice: lines of one kind share it. */
    static String kindOf(String line) {
        String[] f = fields(line);
        return String.join("\t", f[0], f[1], f[2], f[3]);
    }

    private static String[] fields(String line) {
        String[] f = line.split("\t", -1);
        if (f.length != 8) {
            throw new IllegalArgumentException("expected 8 tab-separated fields, got " + f.length);
        }
        return f;
    }

    static String formatLine(Entry entry, TunedAlgorithm a) {
        TuningDevice d = entry.device();
        return String.join("\t", d.name(), Integer.toString(d.computeCapability()), Long.toString(d.cublasLtVersion()),
                formatKey(entry.key()), a.algo(), Integer.toString(a.heuristicRank()), Double.toString(a.millis()),
                Double.toString(a.heuristicFirstMillis()));
    }

    /**
     * A GEMM as {@code name=value} words, e.g. {@code ab=BF16 c=FP32 m=4096 n=1024 k=8192 transA=0 transB=1
     * lda=8192 ldb=8192 ldc=1024 sms=0 tf32=0 accumulate=1 align=256/256/16}. An FP8 GEMM adds
     * {@code fp8acc=0 scaleD=1 amaxD=1}, and operands of different types are {@code ab=FP8_E5M2/FP8_E4M3} (A's, then
     * B's); a GEMM whose epilogue adds a bias adds {@code bias=ALIGN} (the bias pointer's alignment); so keys of other
     * GEMMs read as before.
     */
    static String formatKey(MatmulPlan.Key key) {
        GemmSpec s = key.spec();
        String ab = s.aType() == s.bType() ? s.aType().name() : s.aType() + "/" + s.bType();
        return "ab=" + ab + " c=" + s.cType() + " m=" + s.m() + " n=" + s.n() + " k=" + s.k()
                + " transA=" + bit(s.transA()) + " transB=" + bit(s.transB())
                + " lda=" + s.lda() + " ldb=" + s.ldb() + " ldc=" + s.ldc() + " sms=" + s.smCountTarget()
                + " tf32=" + bit(s.allowTf32()) + " accumulate=" + bit(key.accumulate())
                + " align=" + key.alignA() + "/" + key.alignB() + "/" + key.alignC()
                + (s.isFp8() ? " fp8acc=" + bit(s.fp8FastAccumulation()) + " scaleD=" + bit(key.fp8ScaleD())
                        + " amaxD=" + bit(key.fp8AmaxD()) : "")
                + (key.bias() ? " bias=" + key.alignBias() : "");
    }

    /**
     * The inverse of {@link #formatKey}; every word must be there, once, except the FP8 words (fp8acc, scaleD, amaxD),
     * which only FP8 GEMMs have, and bias, which only GEMMs with a bias epilogue have (0 when absent).
     */
    static MatmulPlan.Key parseKey(String text) {
        Map<String, String> words = new HashMap<>();
        for (String word : text.strip().split(" +")) {
            int eq = word.indexOf('=');
            if (eq <= 0 || words.put(word.substring(0, eq), word.substring(eq + 1)) != null) {
                throw new IllegalArgumentException("bad GEMM word '" + word + "' in '" + text + "'");
            }
        }
        String[] align = word(words, "align", text).split("/", -1);
        if (align.length != 3) {
            throw new IllegalArgumentException("align must be A/B/C in '" + text + "'");
        }
        boolean accumulate = bool(word(words, "accumulate", text));
        String[] ab = word(words, "ab", text).split("/", -1);
        if (ab.length > 2) {
            throw new IllegalArgumentException("ab must be a type or A/B types in '" + text + "'");
        }
        boolean fastAccumulation = bool(optionalWord(words, "fp8acc"));
        boolean scaleD = bool(optionalWord(words, "scaleD"));
        boolean amaxD = bool(optionalWord(words, "amaxD"));
        int alignBias = Integer.parseInt(optionalWord(words, "bias"));
        GemmSpec spec = new GemmSpec(dtype(ab[0]), dtype(ab[ab.length - 1]), dtype(word(words, "c", text)),
                Integer.parseInt(word(words, "m", text)), Integer.parseInt(word(words, "n", text)),
                Integer.parseInt(word(words, "k", text)), bool(word(words, "transA", text)),
                bool(word(words, "transB", text)), Long.parseLong(word(words, "lda", text)),
                Long.parseLong(word(words, "ldb", text)), Long.parseLong(word(words, "ldc", text)),
                Integer.parseInt(word(words, "sms", text)), bool(word(words, "tf32", text)), fastAccumulation);
        if (!words.isEmpty()) {
            throw new IllegalArgumentException("unknown GEMM words " + words.keySet() + " in '" + text + "'");
        }
        return new MatmulPlan.Key(spec, Integer.parseInt(align[0]), Integer.parseInt(align[1]),
                Integer.parseInt(align[2]), accumulate, scaleD, amaxD, alignBias);
    }

    private static String optionalWord(Map<String, String> words, String name) {
        String v = words.remove(name);
        return v == null ? "0" : v;
    }

    private static String word(Map<String, String> words, String name, String text) {
        String v = words.remove(name);
        if (v == null) {
            throw new IllegalArgumentException("missing " + name + "= in '" + text + "'");
        }
        return v;
    }

    private static DType dtype(String name) {
        return DType.valueOf(name.toUpperCase(Locale.ROOT));
    }

    private static String bit(boolean b) {
        return b ? "1" : "0";
    }

    private static boolean bool(String v) {
        return switch (v) {
            case "1" -> true;
            case "0" -> false;
            default -> throw new IllegalArgumentException("expected 0 or 1, got '" + v + "'");
        };
    }

    private static GemmException corrupt(Path file, int line, String why, Throwable cause) {
        return new GemmException("the GEMM tuning cache " + file + " is damaged at line " + line + ": " + why
                + ". Delete it to tune again, point UB_GEMM_TUNING_FILE elsewhere, or set UB_GEMM_TUNING=0.", cause);
    }
}

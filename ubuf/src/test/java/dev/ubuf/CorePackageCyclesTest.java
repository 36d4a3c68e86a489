package dev.ubuf;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The core's packages form no cycle: every package of ubuf/src/main/java and the dev.ubuf packages its code names
 * (imports, static imports and fully qualified names; comments and strings left out), searched for a cycle.
 */
class CorePackageCyclesTest {
    private static final Path MAIN = Path.of("src/main/java");
    private static final Pattern PACKAGE = Pattern.compile("(?m)^\\s*package\\s+([\\w.]+)\\s*;");
    /** A dev.ubuf package followed by a type name (upper case): dev.ubuf.trace.TraceSpan, dev.ubuf.UbufException. */
    private static final Pattern REFERENCE = Pattern.compile("\\bdev\\.ubuf(?:\\.[a-z_]\\w*)*(?=\\.[A-Z])");

    @Test
    void theCoreHasNoPackageCycle() throws IOException {
        Map<String, Set<String>> deps = dependencies(sources(MAIN));
        assertTrue(deps.size() > 10, "expected the core's packages, found " + deps.keySet());
        assertEquals(Optional.empty(), cycle(deps), "a package cycle in the core; dependencies: " + deps);
    }

    @Test
    void traceIsALeafAboveCuda() throws IOException {
        Set<String> trace = dependencies(sources(MAIN)).get("dev.ubuf.trace");
        assertTrue(trace.stream().noneMatch(p -> p.equals("dev.ubuf.exec") || p.equals("dev.ubuf.op")),
                "dev.ubuf.trace depends on " + trace);
    }

    @Test
    void findsACycleThroughFullyQualifiedNamesAndImports() {
        Map<String, String> src = Map.of(
                "A.java", "package dev.ubuf.a;\nimport dev.ubuf.b.B;\nclass A { B b; }",
                "B.java", "package dev.ubuf.b;\nclass B { Object c = new dev.ubuf.c.C(); }",
                "C.java", "package dev.ubuf.c;\nimport static dev.ubuf.a.A.f;\nclass C {}",
                "D.java", "package dev.ubuf.d;\n// dev.ubuf.a.A in a comment\n"
                        + "class D { String s = \"dev.ubuf.a.A\"; char c = 'x'; }");
        Map<String, Set<String>> deps = dependencies(src);
        assertEquals(Set.of(), deps.get("dev.ubuf.d"), "comments and strings are no dependency");
        List<String> c = cycle(deps).orElseThrow();
        assertEquals(c.getFirst(), c.getLast());
        assertEquals(Set.of("dev.ubuf.a", "dev.ubuf.b", "dev.ubuf.c"), new TreeSet<>(c));
    }

    @Test
    void noCycleInALayeredGraph() {
        Map<String, Set<String>> deps = new TreeMap<>(Map.of("x", Set.of("y", "z"), "y", Set.of("z"), "z", Set.of()));
        assertEquals(Optional.empty(), cycle(deps));
    }

    private static Map<String, String> sources(Path root) throws IOException {
        Map<String, String> out = new TreeMap<>();
        try (Stream<Path> files = Files.walk(root)) {
            files.filter(p -> p.toString().endsWith(".java"))
                    .filter(p -> !p.getFileName().toString().equals("module-info.java"))
                    .forEach(p -> {
                        try {
                            out.put(root.relativize(p).toString(), Files.readString(p));
                        } catch (IOException e) {
                            throw new UncheckedIOException(e);
                        }
                    });
        }
        return out;
    }

    /** Package to the other dev.ubuf packages its files name, in code only. */
    static Map<String, Set<String>> dependencies(Map<String, String> sources) {
        Map<String, Set<String>> deps = new TreeMap<>();
        for (Map.Entry<String, String> f : sources.entrySet()) {
            String code = codeOnly(f.getValue());
            Matcher pm = PACKAGE.matcher(code);
            if (!pm.find()) {
                throw new AssertionError(f.getKey() + " has no package declaration");
            }
            String pkg = pm.group(1);
            Set<String> to = deps.computeIfAbsent(pkg, k -> new TreeSet<>());
            Matcher rm = REFERENCE.matcher(code);
            while (rm.find()) {
                if (!rm.group().equals(pkg)) {
                    to.add(rm.group());
                }
            }
        }
        return deps;
    }

    /** {@code src} without comments, and with string, text block and character literals emptied. */
    static String codeOnly(String src) {
        StringBuilder out = new StringBuilder(src.length());
        int i = 0;
        int n = src.length();
        while (i < n) {
            if (src.startsWith("/*", i)) {
                int j = src.indexOf("*/", i + 2);
                i = j < 0 ? n : j + 2;
            } else if (src.startsWith("//", i)) {
                int j = src.indexOf('\n', i);
                i = j < 0 ? n : j;
            } else if (src.startsWith("\"\"\"", i)) {
                int j = src.indexOf("\"\"\"", i + 3);
                i = j < 0 ? n : j + 3;
                out.append("\"\"");
            } else if (src.charAt(i) == '"' || src.charAt(i) == '\'') {
                char q = src.charAt(i);
                int j = i + 1;
                while (j < n && src.charAt(j) != q) {
                    j += src.charAt(j) == '\\' ? 2 : 1;
                }
                i = j + 1;
                out.append("\"\"");
            } else {
                out.append(src.charAt(i++));
            }
        }
        return out.toString();
    }

    /** A cycle among the packages of {@code deps} (first and last the same), or empty; outside packages ignored. */
    static Optional<List<String>> cycle(Map<String, Set<String>> deps) {
        Map<String, Integer> state = new TreeMap<>(); // absent: unvisited, 1: on the path, 2: done
        for (String start : deps.keySet()) {
            if (state.containsKey(start)) {
                continue;
            }
            Deque<String> path = new ArrayDeque<>();
            Optional<List<String>> c = visit(start, deps, state, path);
            if (c.isPresent()) {
                return c;
            }
        }
        return Optional.empty();
    }

    private static Optional<List<String>> visit(String p, Map<String, Set<String>> deps, Map<String, Integer> state,
                                                Deque<String> path) {
        state.put(p, 1);
        path.addLast(p);
        for (String q : deps.get(p)) {
            if (!deps.containsKey(q)) {
                continue;
            }
            Integer s = state.get(q);
            if (s == null) {
                Optional<List<String>> c = visit(q, deps, state, path);
                if (c.isPresent()) {
                    return c;
                }
            } else if (s == 1) {
                List<String> onPath = new ArrayList<>(path);
                List<String> c = new ArrayList<>(onPath.subList(onPath.indexOf(q), onPath.size()));
                c.add(q);
                return Optional.of(c);
            }
        }
        path.removeLast();
        state.put(p, 2);
        return Optional.empty();
    }
}

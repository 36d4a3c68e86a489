package dev.ubuf.tests;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.TestReporter;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.lang.reflect.Method;
import java.lang.reflect.Parameter;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every {@code @CsvSource} row of this module's tests has as many columns as its method has parameters. JUnit 5.11
 * drops extra columns without a word, so a variant with an unquoted comma ({@code "REDUCE_SCATTER,
 * scatter:sub=2,lowp=1"}) silently ran another variant on the GPU; and the GPU tests only run on GPU machines, so CI
 * must catch it here.
 */
class CsvSourceArityTest {
    @Test
    void everyCsvRowFillsItsMethodsParametersExactly() throws IOException, URISyntaxException, ClassNotFoundException {
        // target/test-classes under Maven, the tests jar in the GPU bundle
        Path location = Path.of(CsvSourceArityTest.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<String> classes;
        try (java.nio.file.FileSystem jar = Files.isRegularFile(location)
                ? java.nio.file.FileSystems.newFileSystem(location) : null) {
            Path root = jar != null ? jar.getPath("/") : location;
            try (Stream<Path> files = Files.walk(root)) {
                classes = files.filter(p -> p.toString().endsWith(".class")
                                && !p.getFileName().toString().contains("$"))
                        .map(p -> root.relativize(p).toString().replace('/', '.').replaceAll("\\.class$", ""))
                        .filter(n -> n.startsWith("dev.ubuf.")).toList();
            }
        }
        Path root = location;
        List<String> wrong = new ArrayList<>();
        int rows = 0;
        for (String name : classes) {
            for (Method m : Class.forName(name, false, getClass().getClassLoader()).getDeclaredMethods()) {
                CsvSource csv = m.getAnnotation(CsvSource.class);
                if (csv == null) {
                    continue;
                }
                int params = argumentParameters(m);
                for (String row : csv.value()) {
                    rows++;
                    int columns = columns(row, csv.delimiter() == '\0' ? ',' : csv.delimiter(), csv.quoteCharacter());
                    if (columns != params) {
                        wrong.add(name + "#" + m.getName() + ": \"" + row + "\" has " + columns + " columns for "
                                + params + " parameters (quote a value holding the delimiter)");
                    }
                }
            }
        }
        assertTrue(rows > 0, "no @CsvSource rows found under " + root);
        assertEquals(List.of(), wrong);
    }

    @Test
    void theColumnCountHonoursQuotes() {
        assertEquals(2, columns("REDUCE_SCATTER, 'scatter:sub=2,lowp=1'", ',', '\''));
        assertEquals(3, columns("REDUCE_SCATTER, scatter:sub=2,lowp=1", ',', '\''));
        assertEquals(1, columns("''", ',', '\''));
        assertEquals(2, columns("BF16,bulk:stage=1", ',', '\''));
    }

    /** Columns of one CSV row: delimiters outside quotes, plus one. */
    static int columns(String row, char delimiter, char quote) {
        int columns = 1;
        boolean quoted = false;
        for (int i = 0; i < row.length(); i++) {
            char c = row.charAt(i);
            if (c == quote) {
                quoted = !quoted;
            } else if (c == delimiter && !quoted) {
                columns++;
            }
        }
        return columns;
    }

    /** The parameters the CSV row fills: not those other resolvers supply. */
    private static int argumentParameters(Method m) {
        int n = 0;
        for (Parameter p : m.getParameters()) {
            if (p.getType() == TestInfo.class || p.getType() == TestReporter.class || p.isAnnotationPresent(TempDir.class)) {
                continue;
            }
            n++;
        }
        return n;
    }
}

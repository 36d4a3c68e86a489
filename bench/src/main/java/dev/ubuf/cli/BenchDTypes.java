package dev.ubuf.cli;

import dev.ubuf.tensor.DType;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

import java.util.Iterator;
import java.util.List;

/** The --dtype values the benchmarks run, by their results-file names (the FP8 types are reserved). */
final class BenchDTypes implements Iterable<String> {
    static final List<DType> ALLOWED = List.of(DType.BF16, DType.FP16, DType.FP32);

    /** For picocli's ${COMPLETION-CANDIDATES}: the names in help and completion. */
    @Override
    public Iterator<String> iterator() {
        return names().iterator();
    }

    static List<String> names() {
        return ALLOWED.stream().map(DType::shortName).toList();
    }

    static final class Converter implements ITypeConverter<DType> {
        @Override
        public DType convert(String value) {
            for (DType d : ALLOWED) {
                if (d.shortName().equalsIgnoreCase(value.trim())) {
                    return d;
                }
            }
            throw new TypeConversionException("expected one of " + String.join(", ", names()) + " but was '"
                    + value + "'");
        }
    }
}

package dev.ubuf.op;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.ServiceLoader;

/**
 * The overlap methods available in this JVM: every {@link OverlapMethod} registered for {@link ServiceLoader} by
 * the modules on the class path (overlap-ag, overlap-rs, atomic-gemm, ...), or an explicit list in tests. An
 * instance, not a global: whoever plans owns one.
 */
public final class MethodRegistry {
    private final List<OverlapMethod> methods;

    private MethodRegistry(List<OverlapMethod> methods) {
        List<OverlapMethod> sorted = new ArrayList<>(methods);
        sorted.sort(Comparator.comparing((OverlapMethod m) -> m.collective()).thenComparing(OverlapMethod::name));
        for (int i = 1; i < sorted.size(); i++) {
            OverlapMethod a = sorted.get(i - 1), b = sorted.get(i);
            if (a.collective() == b.collective() && a.name().equals(b.name())) {
                throw new IllegalStateException("two " + a.collective().resultName() + " methods are named '" + a.name()
                        + "': " + a.getClass().getName() + " and " + b.getClass().getName());
            }
        }
        this.methods = List.copyOf(sorted);
    }

    /** Every method registered on the class path of this class's loader. */
    public static MethodRegistry load() {
        List<OverlapMethod> found = new ArrayList<>();
        ServiceLoader.load(OverlapMethod.class, MethodRegistry.class.getClassLoader()).forEach(found::add);
        return new MethodRegistry(found);
    }

    public static MethodRegistry of(List<OverlapMethod> methods) {
        return new MethodRegistry(methods);
    }

    public List<OverlapMethod> all() {
        return methods;
    }

    public List<OverlapMethod> of(Collective c) {
        return methods.stream().filter(m -> m.collective() == c).toList();
    }

    /** The method of {@code c} named {@code name}; the error lists the registered names. */
    public OverlapMethod get(Collective c, String name) {
        for (OverlapMethod m : of(c)) {
            if (m.name().equalsIgnoreCase(name)) {
                return m;
            }
        }
        throw new IllegalArgumentException("unknown " + c.resultName() + " method '" + name + "'; registered: "
                + String.join(", ", of(c).stream().map(OverlapMethod::name).toList())
                + (of(c).isEmpty() ? "(none: is the overlap-" + c.resultName() + " module on the class path?)" : ""));
    }

    /** The schedule of a method variant "name" or "name:key=v,key=v" for {@code shape}. */
    public Schedule schedule(OverlapShape shape, String variant) {
        String s = variant.trim();
        int colon = s.indexOf(':');
        OverlapMethod m = get(shape.collective(), colon < 0 ? s : s.substring(0, colon));
        java.util.Map<String, String> opts = colon >= 0 && colon < s.length() - 1
                ? MethodOptions.parse(variant, s.substring(colon + 1), m.name(), m.optionKeys())
                : new java.util.LinkedHashMap<>();
        return m.schedule(shape, opts);
    }
}

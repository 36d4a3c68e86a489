package dev.ubuf.tests;

import dev.ubuf.op.MethodRegistry;
import dev.ubuf.op.OverlapMethod;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A method is one class plus its registration (docs/architecture.md, "Adding a method"): every registered method of
 * every module on this class path is served by exactly one top-level class that declares its own name, and each
 * module registers the same classes for the class path (META-INF/services) as for the module path (module-info).
 */
class MethodRegistrationTest {
    private static final String SERVICE = OverlapMethod.class.getName();

    private final List<OverlapMethod> methods = MethodRegistry.load().all();

    @Test
    void everyFamilyOfEveryMethodModuleIsRegistered() {
        Set<String> modules = new TreeSet<>();
        for (OverlapMethod m : methods) {
            modules.add(m.getClass().getPackageName() + " " + m.collective().resultName());
        }
        assertEquals(Set.of("dev.ubuf.ag ag", "dev.ubuf.rs rs", "dev.ubuf.atomic ag", "dev.ubuf.atomic rs"), modules);
    }

    @Test
    void eachMethodIsServedByExactlyOneTopLevelClassThatNamesIt() throws NoSuchMethodException {
        Map<Class<?>, String> served = new HashMap<>();
        for (OverlapMethod m : methods) {
            Class<?> c = m.getClass();
            String key = m.collective().resultName() + "/" + m.name();
            assertNull(c.getEnclosingClass(), key + " is served by a nested class " + c.getName());
            assertEquals(c, c.getMethod("name").getDeclaringClass(), key + ": the name comes from the method's class");
            String before = served.put(c, key);
            assertNull(before, c.getName() + " serves both " + before + " and " + key);
            assertFalse(m.name().isBlank(), c.getName());
        }
        assertEquals(methods.size(), served.size());
    }

    @Test
    void theServicesFileAndModuleInfoOfEachModuleRegisterTheSameClasses() throws IOException {
        Set<URL> roots = new HashSet<>();
        for (OverlapMethod m : methods) {
            roots.add(m.getClass().getProtectionDomain().getCodeSource().getLocation());
        }
        assertEquals(3, roots.size(), "overlap-ag, overlap-rs, atomic-gemm: " + roots);
        for (URL root : roots) {
            // A loader over this one jar or folder alone, so the files read are this module's.
            try (URLClassLoader one = new URLClassLoader(new URL[]{root}, null)) {
                URL services = one.findResource("META-INF/services/" + SERVICE);
                assertNotNull(services, root + " has no services file");
                Set<String> listed = new TreeSet<>();
                try (InputStream in = services.openStream()) {
                    for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
                        String name = line.replaceAll("#.*", "").trim();
                        if (!name.isEmpty()) {
                            listed.add(name);
                        }
                    }
                }
                URL info = one.findResource("module-info.class");
                assertNotNull(info, root + " has no module-info");
                Set<String> provided = new TreeSet<>();
                try (InputStream in = info.openStream()) {
                    ModuleDescriptor d = ModuleDescriptor.read(in);
                    d.provides().stream().filter(p -> p.service().equals(SERVICE))
                            .forEach(p -> provided.addAll(p.providers()));
                }
                assertEquals(listed, provided, root + ": META-INF/services vs module-info's provides");
                assertTrue(listed.stream().noneMatch(n -> n.contains("$")), "nested classes listed: " + listed);
            }
        }
    }
}

package dev.ubuf.resource;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CloserTest {
    private final List<String> log = new ArrayList<>();

    private AutoCloseable resource(String name) {
        return () -> log.add(name);
    }

    private AutoCloseable failing(String name, Exception e) {
        return () -> {
            log.add(name);
            throw e;
        };
    }

    @Test
    void closesInReverseOrderOfRegistration() {
        Closer c = new Closer("owner");
        c.register("a", resource("a"));
        c.onClose("b", () -> log.add("b"));
        c.register("c", resource("c"));
        assertEquals(List.of("a", "b", "c"), c.names());
        c.close();
        assertEquals(List.of("c", "b", "a"), log);
        assertTrue(c.isClosed());
        assertEquals(List.of(), c.names());
    }

    @Test
    void registerReturnsTheResourceAndSkipsNull() {
        Closer c = new Closer("owner");
        AutoCloseable r = resource("r");
        assertSame(r, c.register("r", r));
        assertNull(c.register("none", null));
        assertEquals(List.of("r"), c.names());
        c.close();
        assertEquals(List.of("r"), log);
    }

    @Test
    void secondCloseDoesNothing() {
        Closer c = new Closer("owner");
        c.register("a", resource("a"));
        c.close();
        c.close();
        assertEquals(List.of("a"), log);
    }

    @Test
    void closesEverythingAndThrowsTheFirstFailureWithTheRestSuppressed() {
        Closer c = new Closer("owner");
        IllegalStateException early = new IllegalStateException("a failed");
        IllegalArgumentException late = new IllegalArgumentException("c failed");
        c.register("a", failing("a", early));
        c.register("b", resource("b"));
        c.register("c", failing("c", late));
        RuntimeException thrown = assertThrows(RuntimeException.class, c::close);
        // Reverse order: c fails first, so it is thrown, and a's failure rides along.
        assertSame(late, thrown);
        assertArrayEquals(new Throwable[] {early}, thrown.getSuppressed());
        assertEquals(List.of("c", "b", "a"), log);
        assertTrue(c.isClosed());
        c.close(); // the failures are not thrown again
        assertEquals(List.of("c", "b", "a"), log);
    }

    @Test
    void checkedFailuresAreWrappedNamingTheResourceAndOwner() {
        Closer c = new Closer("the timer");
        IOException io = new IOException("disk");
        c.register("file", failing("file", io));
        IllegalStateException e = assertThrows(IllegalStateException.class, c::close);
        assertSame(io, e.getCause());
        assertTrue(e.getMessage().contains("file") && e.getMessage().contains("the timer"), e.getMessage());
    }

    @Test
    void errorsAreThrownAsTheyAreAfterClosingTheRest() {
        Closer c = new Closer("owner");
        c.register("a", resource("a"));
        AssertionError boom = new AssertionError("boom");
        c.onClose("b", () -> {
            throw boom;
        });
        assertSame(boom, assertThrows(AssertionError.class, c::close));
        assertEquals(List.of("a"), log);
    }

    @Test
    void closeAfterAddsEveryFailureToThePrimaryAndReturnsIt() {
        Closer c = new Closer("owner");
        IllegalStateException f = new IllegalStateException("b failed");
        c.register("a", resource("a"));
        c.register("b", failing("b", f));
        RuntimeException primary = new RuntimeException("constructor failed");
        assertSame(primary, c.closeAfter(primary));
        assertArrayEquals(new Throwable[] {f}, primary.getSuppressed());
        assertEquals(List.of("b", "a"), log);
        assertTrue(c.isClosed());
    }

    @Test
    void nothingCanBeRegisteredAfterClose() {
        Closer c = new Closer("the op");
        c.close();
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> c.register("x", resource("x")));
        assertTrue(e.getMessage().contains("the op is closed"), e.getMessage());
        assertThrows(IllegalStateException.class, () -> c.onClose("y", () -> { }));
        assertEquals(List.of(), log);
    }

    @Test
    void requireOpenFailsOnlyAfterClose() {
        Closer c = new Closer("the tracer");
        c.requireOpen();
        assertFalse(c.isClosed());
        c.close();
        IllegalStateException e = assertThrows(IllegalStateException.class, c::requireOpen);
        assertEquals("the tracer is closed", e.getMessage());
    }

    @Test
    void aResourceRegisteredWhileClosingIsRefusedNotLeakedSilently() {
        Closer c = new Closer("owner");
        List<Throwable> refused = new ArrayList<>();
        c.onClose("reentrant", () -> {
            try {
                c.register("late", resource("late"));
            } catch (IllegalStateException e) {
                refused.add(e);
            }
        });
        c.close();
        assertEquals(1, refused.size());
        assertFalse(log.contains("late"));
    }
}

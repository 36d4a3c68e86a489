package dev.ubuf.testutil;

import dev.ubuf.cuda.ResourceLedger;
import dev.ubuf.cuda.ResourceLedgerMXBean;

import javax.management.JMX;
import javax.management.MBeanServer;
import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;
import java.lang.management.ManagementFactory;
import java.lang.reflect.UndeclaredThrowableException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Every open CUDA context of this JVM and what its ledger holds, at one moment. Contexts publish their ledgers in the
 * platform MBean server while open, so this sees contexts that any thread created, including rank threads and the
 * peer contexts a communicator retains.
 */
record OpenResources(Map<ObjectName, Context> contexts) {
    /** One open context: its device, where it was retained (or null) and its open resources by id. */
    record Context(int device, String allocationStack, Map<Long, ResourceLedger.OpenResource> resources) {
    }

    /**
     * A resource, or a whole context, open now that was not open at the earlier snapshot; {@code key} tells apart
     * resources that read alike.
     */
    record Leak(String key, String description, String allocationStack) {
    }

    static OpenResources now() {
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        Map<ObjectName, Context> contexts = new LinkedHashMap<>();
        for (ObjectName name : server.queryNames(query(), null)) {
            ResourceLedgerMXBean ledger = JMX.newMXBeanProxy(server, name, ResourceLedgerMXBean.class);
            try {
                Map<Long, ResourceLedger.OpenResource> open = new LinkedHashMap<>();
                for (ResourceLedger.OpenResource r : ledger.getOpenResources()) {
                    open.put(r.id(), r);
                }
                contexts.put(name, new Context(ledger.getDevice(), ledger.getContextAllocationStack(), open));
            } catch (UndeclaredThrowableException closedMeanwhile) {
                // the context was closed between the query and the read: it is not open
            }
        }
        return new OpenResources(contexts);
    }

    private static ObjectName query() {
        try {
            return new ObjectName(ResourceLedger.JMX_QUERY);
        } catch (MalformedObjectNameException e) {
            throw new IllegalStateException(e);
        }
    }

    /** What is open now and was not {@code before}: contexts first, then each context's resources, oldest first. */
    List<Leak> openedSince(OpenResources before) {
        List<Leak> leaks = new ArrayList<>();
        contexts.forEach((name, context) -> {
            Context earlier = before.contexts.get(name);
            if (earlier == null) {
                leaks.add(new Leak(name.toString(), "CUDA context of cuda:" + context.device(),
                        context.allocationStack()));
            }
            context.resources().forEach((id, r) -> {
                if (earlier == null || !earlier.resources().containsKey(id)) {
                    leaks.add(new Leak(name + "#" + id, r.toString(), r.allocationStack()));
                }
            });
        });
        return leaks;
    }
}

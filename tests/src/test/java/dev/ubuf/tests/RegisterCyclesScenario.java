package dev.ubuf.tests;

import dev.ubuf.bootstrap.Bootstrap;
import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.comm.UserBuffer;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaContext;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Registers and closes a 64 MiB user buffer {@code cycles} times (after 20 warm-up cycles): free device memory must
 * not fall by a buffer's size, and no allocation may outlive its buffer.
 */
record RegisterCyclesScenario(int cycles) implements RankScenario {
    static final String NAME = "register-cycles";
    private static final long BYTES = 64L << 20;

    RegisterCyclesScenario {
        if (cycles <= 0) {
            throw new IllegalArgumentException("cycles must be positive, got " + cycles);
        }
    }

    static RegisterCyclesScenario parse(List<String> params) {
        return new RegisterCyclesScenario(ScenarioArgs.of(NAME, List.of("cycles"), params).positiveInt(0));
    }

    @Override
    public List<String> toArgs() {
        return List.of(NAME, Integer.toString(cycles));
    }

    @Override
    public void run(int rank, Bootstrap boot, CudaContext ctx, UbufEnvironment env) {
        try (TpCommunicator comm = TpCommunicator.create(boot, ctx, env, null)) {
            for (int i = 0; i < 20; i++) {
                comm.register("warm", BYTES).close();
            }
            long before = ctx.memoryInfo()[0];
            for (int i = 0; i < cycles; i++) {
                try (UserBuffer ub = comm.register("cycle", BYTES)) {
                    assertEquals(BYTES, ub.bytes());
                }
            }
            long after = ctx.memoryInfo()[0];
            assertTrue(before - after < BYTES, "rank " + rank + ": free memory fell from " + before + " to " + after
                    + " over " + cycles + " cycles");
            assertEquals(0, ctx.ledger().deviceBytes(), "rank " + rank + ": no allocation outlives its buffer");
        }
    }
}

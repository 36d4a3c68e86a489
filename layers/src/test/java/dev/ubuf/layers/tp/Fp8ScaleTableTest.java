package dev.ubuf.layers.tp;

import dev.ubuf.fp8.Fp8Format;
import dev.ubuf.fp8.Fp8Role;
import dev.ubuf.fp8.Fp8Recipe;
import org.junit.jupiter.api.Test;

import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The layers' FP8 bookkeeping: every tensor a layer quantizes gets a slot in its role's format, and each step's
 * scales follow the recipe: delayed scaling from the window of the last history_len amaxes (max or most recent), with
 * the margin; current scaling from the tensor's own amax, nothing carried between steps.
 */
class Fp8ScaleTableTest {
    private static final Fp8Role IN = Fp8Role.INPUT;
    private static final Fp8Role W = Fp8Role.WEIGHT;
    private static final Fp8Role DY = Fp8Role.GRAD_OUTPUT;

    @Test
    void slotsTakeTheirRolesFormatUnderTheRecipe() {
        Fp8ScaleTable hybrid = new Fp8ScaleTable(Fp8Recipe.DelayedScaling.TE_DEFAULT);
        assertEquals(Fp8Format.E4M3, hybrid.register("fc1", IN, true).format());
        assertEquals(Fp8Format.E4M3, hybrid.register("fc1", W, false).format());
        assertEquals(Fp8Format.E5M2, hybrid.register("fc1", DY, false).format());
        Fp8ScaleTable e4m3 = new Fp8ScaleTable(new Fp8Recipe.CurrentScaling(Fp8Recipe.Formats.E4M3));
        assertEquals(Fp8Format.E4M3, e4m3.register("fc2", DY, true).format());
        assertEquals(3, hybrid.size());
        assertEquals(java.util.List.of(0, 1, 2), hybrid.slots().stream().map(Fp8ScaleTable.Slot::index).toList());
    }

    @Test
    void delayedScalesFollowTheAmaxWindowAndTheMarginStepByStep() {
        int history = 3;
        int margin = 1;
        Fp8ScaleTable t = new Fp8ScaleTable(new Fp8Recipe.DelayedScaling(Fp8Recipe.Formats.HYBRID, history, margin,
                Fp8Recipe.AmaxCompute.MAX));
        Fp8ScaleTable.Slot x = t.register("fc1", IN, true);
        Fp8ScaleTable.Slot w = t.register("fc1", W, false);
        Fp8ScaleTable.Slot g = t.register("fc1", DY, false);
        t.freeze();
        assertEquals(1f, t.scale(x), "scale 1 until a step ended");
        SplittableRandom rnd = new SplittableRandom(System.nanoTime());
        float[][] seen = new float[8][];
        for (int step = 0; step < seen.length; step++) {
            float[] amax = {(float) rnd.nextDouble(0.5, 8), (float) rnd.nextDouble(0.01, 0.1),
                    (float) rnd.nextDouble(1e-8, 1e-6)};
            seen[step] = amax;
            t.endStep(amax);
            Fp8ScaleTable.Slot[] slots = {x, w, g};
            for (int i = 0; i < 3; i++) {
                float windowMax = 0;
                for (int s = Math.max(0, step - history + 1); s <= step; s++) {
                    windowMax = Math.max(windowMax, seen[s][i]);
                }
                float fmax = i == 2 ? Fp8Format.E5M2.maxFinite() : Fp8Format.E4M3.maxFinite();
                float want = Math.scalb(fmax / windowMax, -margin);
                assertEquals(want, t.scale(slots[i]), "step " + step + " slot " + slots[i].describe());
                assertEquals(1f / want, t.scaleInverse(slots[i]));
            }
        }
        assertEquals(seen.length, t.steps());
        float[] image = t.deviceImage();
        assertEquals(9, image.length);
        assertArrayEquals(new float[]{t.scale(x), t.scale(w), t.scale(g), t.scaleInverse(x), t.scaleInverse(w),
                t.scaleInverse(g), 0, 0, 0}, image, "scales, inverses, zeroed amaxes");
    }

    @Test
    void mostRecentUsesOnlyTheLastStepAndAZeroAmaxKeepsTheScale() {
        Fp8ScaleTable t = new Fp8ScaleTable(new Fp8Recipe.DelayedScaling(Fp8Recipe.Formats.HYBRID, 16, 0,
                Fp8Recipe.AmaxCompute.MOST_RECENT));
        Fp8ScaleTable.Slot x = t.register("proj", IN, false);
        t.endStep(new float[]{4f});
        assertEquals(448f / 4f, t.scale(x));
        t.endStep(new float[]{2f});
        assertEquals(448f / 2f, t.scale(x), "the larger amax of the step before no longer counts");
        t.endStep(new float[]{0f});
        assertEquals(448f / 2f, t.scale(x), "an all-zero tensor says nothing: the scale stays");
        assertEquals(0f, t.history(x)[1]);
    }

    @Test
    void currentScalingTakesTheTensorsOwnAmaxAndCarriesNothing() {
        Fp8ScaleTable t = new Fp8ScaleTable(new Fp8Recipe.CurrentScaling(Fp8Recipe.Formats.HYBRID));
        Fp8ScaleTable.Slot g = t.register("fc2", DY, true);
        float amax = (float) new SplittableRandom(System.nanoTime()).nextDouble(1e-6, 1);
        assertEquals(Fp8Format.E5M2.maxFinite() / amax, t.currentScale(g, amax));
        assertEquals(Fp8Format.E5M2.maxFinite() / amax, t.scale(g));
        assertThrows(IllegalStateException.class, () -> t.endStep(new float[]{amax}));
        Fp8ScaleTable delayed = new Fp8ScaleTable(Fp8Recipe.DelayedScaling.TE_DEFAULT);
        Fp8ScaleTable.Slot x = delayed.register("fc2", IN, false);
        assertThrows(IllegalStateException.class, () -> delayed.currentScale(x, 1f));
    }

    @Test
    void registrationErrorsAreClear() {
        Fp8ScaleTable t = new Fp8ScaleTable(Fp8Recipe.DelayedScaling.TE_DEFAULT);
        t.register("fc1", IN, true);
        IllegalArgumentException twice = assertThrows(IllegalArgumentException.class,
                () -> t.register("fc1", IN, true));
        assertTrue(twice.getMessage().contains("share the name fc1"), twice.getMessage());
        assertEquals("fc1#2", t.layerName("fc1"), "a second block's fc1 gets its own name");
        assertEquals("fc2", t.layerName("fc2"));
        t.register("fc1#2", IN, true);
        assertEquals("fc1#3", t.layerName("fc1"));
        t.freeze();
        IllegalStateException late = assertThrows(IllegalStateException.class, () -> t.register("fc2", IN, true));
        assertTrue(late.getMessage().contains("before their first step"), late.getMessage());
        assertThrows(IllegalArgumentException.class, () -> t.endStep(new float[5]), "one amax per slot");
        Fp8ScaleTable other = new Fp8ScaleTable(Fp8Recipe.DelayedScaling.TE_DEFAULT);
        Fp8ScaleTable.Slot foreign = other.register("qkv", W, false);
        assertThrows(IllegalArgumentException.class, () -> t.scale(foreign));
    }
}

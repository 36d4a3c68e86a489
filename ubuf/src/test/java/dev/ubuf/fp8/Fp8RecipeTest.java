package dev.ubuf.fp8;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ubuf.fp8.Fp8Recipe.AmaxCompute;
import dev.ubuf.fp8.Fp8Recipe.CurrentScaling;
import dev.ubuf.fp8.Fp8Recipe.DelayedScaling;
import dev.ubuf.fp8.Fp8Recipe.Formats;
import org.junit.jupiter.api.Test;

/** The scaling recipes' bookkeeping: how amaxes enter the history and how scales follow from them. */
class Fp8RecipeTest {
    static final DelayedScaling MAX3 = new DelayedScaling(Formats.HYBRID, 3, 0, AmaxCompute.MAX);

    @Test
    void teDefaultsAreHybridFormatsAThousandStepsOfHistoryNoMarginAndTheMax() {
        DelayedScaling d = DelayedScaling.TE_DEFAULT;
        assertEquals(Formats.HYBRID, d.formats());
        assertEquals(1024, d.historyLength());
        assertEquals(0, d.margin());
        assertEquals(AmaxCompute.MAX, d.amaxCompute());
        assertEquals(Fp8Format.E4M3, Formats.HYBRID.forward());
        assertEquals(Fp8Format.E5M2, Formats.HYBRID.backward());
        assertEquals(Fp8Format.E4M3, Formats.E4M3.backward());
    }

    @Test
    void theScaleIsTheFormatsMaximumOverTheAmaxShrunkByTheMargin() {
        DelayedScaling m2 = new DelayedScaling(Formats.HYBRID, 1, 2, AmaxCompute.MAX);
        assertEquals(448f / 3.5f / 4, m2.scale(Fp8Format.E4M3, 3.5f, 1f));
        assertEquals(57344f / 3.5f / 4, m2.scale(Fp8Format.E5M2, 3.5f, 1f));
        assertEquals(448f / 3.5f, MAX3.scale(Fp8Format.E4M3, 3.5f, 1f));
    }

    @Test
    void anUnusableAmaxKeepsThePreviousScale() {
        for (float amax : new float[] {0f, Float.POSITIVE_INFINITY, Float.NaN}) {
            assertEquals(0.75f, MAX3.scale(Fp8Format.E4M3, amax, 0.75f), "amax " + amax);
        }
    }

    @Test
    void aScaleThatWouldOverflowIsTheLargestFloat() {
        assertEquals(Float.MAX_VALUE, MAX3.scale(Fp8Format.E4M3, Float.MIN_VALUE, 1f));
        assertEquals(Float.MAX_VALUE, new CurrentScaling(Formats.HYBRID).scale(Fp8Format.E5M2, 1e-40f));
    }

    @Test
    void theHistoryRollsKeepingTheLastStepsAndTheMaxIsTakenOverThem() {
        ScalingState s = new ScalingState(Fp8Format.E4M3, 3);
        float[] amaxes = {2f, 8f, 1f, 0.5f, 0.25f};
        float[] expectedAmax = {2f, 8f, 8f, 8f, 1f}; // the window of 3 steps slides past the 8
        for (int step = 0; step < amaxes.length; step++) {
            s.recordAmax(amaxes[step]);
            assertEquals(amaxes[step], s.history()[0], "the running step's slot comes first");
            assertEquals(expectedAmax[step], s.update(MAX3), "step " + step);
            assertEquals(448f / expectedAmax[step], s.scale(), "step " + step);
            assertEquals(1f / s.scale(), s.scaleInverse());
            assertEquals(0f, s.history()[0], "a fresh slot is open after the update");
        }
        assertArrayEquals(new float[] {0f, 0.25f, 0.5f}, s.history(), "the oldest amaxes dropped out");
    }

    @Test
    void mostRecentUsesOnlyTheStepJustFinished() {
        DelayedScaling recent = new DelayedScaling(Formats.HYBRID, 4, 0, AmaxCompute.MOST_RECENT);
        ScalingState s = new ScalingState(Fp8Format.E5M2, 4);
        s.recordAmax(100f);
        s.update(recent);
        s.recordAmax(2f);
        assertEquals(2f, s.update(recent));
        assertEquals(57344f / 2f, s.scale());
    }

    @Test
    void severalQuantizationsInAStepKeepTheLargestAmaxAndNanSticks() {
        ScalingState s = new ScalingState(Fp8Format.E4M3, 2);
        s.recordAmax(3f);
        s.recordAmax(7f);
        s.recordAmax(5f);
        assertEquals(7f, s.history()[0]);
        s.recordAmax(Float.NaN);
        s.recordAmax(9f);
        assertTrue(Float.isNaN(s.history()[0]));
        assertThrows(IllegalArgumentException.class, () -> s.recordAmax(-1f));
    }

    @Test
    void zeroInfiniteOrNanAmaxesLeaveTheScaleWhereItWas() {
        ScalingState s = new ScalingState(Fp8Format.E4M3, 1);
        s.recordAmax(4f);
        s.update(new DelayedScaling(Formats.HYBRID, 1, 0, AmaxCompute.MAX));
        assertEquals(112f, s.scale());
        DelayedScaling h1 = new DelayedScaling(Formats.HYBRID, 1, 0, AmaxCompute.MAX);
        s.update(h1); // nothing recorded: amax 0
        assertEquals(112f, s.scale(), "an all-zero step keeps the previous scale");
        s.recordAmax(Float.POSITIVE_INFINITY);
        s.update(h1);
        assertEquals(112f, s.scale(), "infinity keeps the previous scale");
        s.recordAmax(Float.NaN);
        s.update(h1);
        assertEquals(112f, s.scale(), "NaN keeps the previous scale");
        assertEquals(1f, new ScalingState(Fp8Format.E4M3, 1).scale(), "a new state starts at scale 1");
    }

    @Test
    void currentScalingTakesTheScaleFromTheTensorItselfAndOneWhenItSaysNothing() {
        CurrentScaling current = new CurrentScaling(Formats.HYBRID);
        ScalingState input = ScalingState.of(current, Fp8Role.INPUT);
        assertEquals(448f / 2.5f, input.scaleFromCurrentAmax(current, 2.5f));
        assertEquals(57344f / 2.5f, ScalingState.of(current, Fp8Role.GRAD_OUTPUT).scaleFromCurrentAmax(current, 2.5f));
        assertEquals(448f / 2.5f, input.scale());
        ScalingState weight = ScalingState.of(current, Fp8Role.WEIGHT);
        for (float amax : new float[] {0f, Float.POSITIVE_INFINITY, Float.NaN}) {
            assertEquals(1f, weight.scaleFromCurrentAmax(current, amax), "amax " + amax);
        }
        // Nothing carries between steps under current scaling: the layers' scale table refuses an end of step
        // (Fp8ScaleTableTest), as it refuses a current scale under delayed scaling.
    }

    @Test
    void aLayersRolesGetTheForwardFormatAndGradientsTheBackwardOne() {
        for (Fp8Role role : Fp8Role.values()) {
            assertEquals(role.isBackward() ? Fp8Format.E5M2 : Fp8Format.E4M3, ScalingState.of(MAX3, role).format(),
                    role.name());
        }
        ScalingState weight = ScalingState.of(MAX3, Fp8Role.WEIGHT);
        ScalingState grad = ScalingState.of(MAX3, Fp8Role.GRAD_OUTPUT);
        ScalingState input = ScalingState.of(MAX3, Fp8Role.INPUT);
        assertEquals(3, weight.history().length, "the recipe's history length");
        weight.recordAmax(0.5f);
        grad.recordAmax(0.5f);
        for (ScalingState s : new ScalingState[] {weight, grad, input}) {
            s.update(MAX3);
        }
        assertEquals(896f, weight.scale());
        assertEquals(114688f, grad.scale());
        assertEquals(1f, input.scale(), "a role that saw nothing keeps scale 1");
    }

    @Test
    void invalidRecipesAreRejected() {
        assertThrows(IllegalArgumentException.class, () -> new DelayedScaling(Formats.HYBRID, 0, 0, AmaxCompute.MAX));
        assertThrows(IllegalArgumentException.class, () -> new DelayedScaling(Formats.HYBRID, 4, -1, AmaxCompute.MAX));
        ScalingState s = new ScalingState(Fp8Format.E4M3, 2);
        assertThrows(IllegalArgumentException.class, () -> s.update(MAX3), "history lengths must agree");
    }
}

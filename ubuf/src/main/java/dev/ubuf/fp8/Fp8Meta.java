package dev.ubuf.fp8;

import java.util.Collections;
import java.util.EnumMap;
import java.util.Map;
import java.util.Objects;

/**
 * The FP8 scaling state of one GEMM layer (TE's fp8_meta): a {@link ScalingState} per tensor role, each in the format
 * its direction takes under the recipe (forward roles in {@code formats().forward()}, gradients in
 * {@code formats().backward()}).
 */
public final class Fp8Meta {

    /** The tensors of a linear layer's GEMMs that get their own scale. */
    public enum Role {
        INPUT(false), WEIGHT(false), OUTPUT(false), GRAD_OUTPUT(true), GRAD_INPUT(true);

        private final boolean backward;

        Role(boolean backward) {
            this.backward = backward;
        }

        public boolean isBackward() {
            return backward;
        }
    }

    private final Fp8Recipe recipe;
    private final Map<Role, ScalingState> states;

    public Fp8Meta(Fp8Recipe recipe) {
        this.recipe = Objects.requireNonNull(recipe, "recipe");
        // Current scaling keeps no history; one slot lets the state's amax bookkeeping stay uniform.
        int history = recipe instanceof Fp8Recipe.DelayedScaling d ? d.historyLength() : 1;
        Map<Role, ScalingState> m = new EnumMap<>(Role.class);
        for (Role role : Role.values()) {
            Fp8Format format = role.isBackward() ? recipe.formats().backward() : recipe.formats().forward();
            m.put(role, new ScalingState(format, history));
        }
        this.states = Collections.unmodifiableMap(m);
    }

    public Fp8Recipe recipe() {
        return recipe;
    }

    public ScalingState state(Role role) {
        return states.get(Objects.requireNonNull(role, "role"));
    }

    /**
     * Ends a step under delayed scaling: every role's scale is updated from its history and a new slot is opened
     * (TE does this once per iteration). Under current scaling there is nothing to carry between steps.
     *
     * @throws IllegalStateException under current scaling, where scales come from {@link #scaleFromCurrentAmax}
     */
    public void endStep() {
        if (!(recipe instanceof Fp8Recipe.DelayedScaling delayed)) {
            throw new IllegalStateException("current scaling has no per-step update: each tensor's scale comes from "
                    + "its own amax (scaleFromCurrentAmax)");
        }
        states.values().forEach(s -> s.update(delayed));
    }

    /** Current scaling: sets {@code role}'s scale from the amax just measured on it and returns the scale. */
    public float scaleFromCurrentAmax(Role role, float amax) {
        if (!(recipe instanceof Fp8Recipe.CurrentScaling current)) {
            throw new IllegalStateException("delayed scaling takes scales from the amax history (recordAmax, endStep), "
                    + "not from the current tensor");
        }
        return state(role).scaleFromCurrentAmax(current, amax);
    }
}

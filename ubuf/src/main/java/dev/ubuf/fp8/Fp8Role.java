package dev.ubuf.fp8;

import java.util.Objects;

/** The tensors of a linear layer's GEMMs that get a scale of their own (a slot of TE's fp8_meta). */
public enum Fp8Role {
    INPUT(false), WEIGHT(false), OUTPUT(false), GRAD_OUTPUT(true), GRAD_INPUT(true);

    private final boolean backward;

    Fp8Role(boolean backward) {
        this.backward = backward;
    }

    public boolean isBackward() {
        return backward;
    }

    /** The format the recipe gives this role: the forward one, or the backward one for gradients. */
    public Fp8Format format(Fp8Recipe recipe) {
        Objects.requireNonNull(recipe, "recipe");
        return backward ? recipe.formats().backward() : recipe.formats().forward();
    }
}

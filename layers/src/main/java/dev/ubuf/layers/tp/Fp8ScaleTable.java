package dev.ubuf.layers.tp;

import dev.ubuf.fp8.Fp8Format;
import dev.ubuf.fp8.Fp8Role;
import dev.ubuf.fp8.Fp8Recipe;
import dev.ubuf.fp8.ScalingState;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * The FP8 scaling bookkeeping of one context's layers, on the host (TE's fp8_meta of every layer): a slot with its
 * {@link ScalingState} for each tensor a layer quantizes (input, weight, output gradient), in the order the layers
 * registered them. The device keeps the same slots as a table of fp32 scalars ({@link #deviceImage()}: every scale,
 * then every inverse, then every amax), so one collective, one update kernel and one copy back serve all layers at the
 * end of a step; the device computes the next scales itself and this table replays the same steps from the amaxes
 * copied back.
 *
 * <p>Delayed scaling: the quantize kernels fold each tensor's amax into its slot during a step; {@link #endStep}
 * takes those amaxes (already reduced over the TP group, so every rank derives the same scales), records them in each
 * tensor's history and sets the next step's scales ({@code fp8Max / amax / 2^margin}). Current scaling keeps nothing
 * between steps: the device derives each scale from the tensor's own amax right before quantizing it (the host
 * simulation asks {@link #currentScale}).
 *
 * <p>Slots are registered while the layers are made; the first step freezes the table (the device table's size). Not
 * thread-safe: one rank's training loop owns it.
 */
public final class Fp8ScaleTable {
    /**
     * One quantized tensor.
     *
     * @param index  its place in the device table
     * @param layer  the layer's name ("fc1", "qkv", ...); a name may appear in several contexts, not twice in one
     * @param shared whether the tensor is all-gathered, so every rank must quantize it with the same scale (its amax
     *               is reduced over the TP group before the scale is taken, under either recipe)
     */
    public record Slot(int index, String layer, Fp8Role role, boolean shared, Fp8Format format) {
        public Slot {
            Objects.requireNonNull(layer, "layer");
            Objects.requireNonNull(role, "role");
            Objects.requireNonNull(format, "format");
        }

        public String describe() {
            return layer + "." + role.name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    private final Fp8Recipe recipe;
    private final Set<String> layers = new HashSet<>();
    private final List<Slot> slots = new ArrayList<>();
    private final List<ScalingState> states = new ArrayList<>();
    private boolean frozen;
    private long steps;

    public Fp8ScaleTable(Fp8Recipe recipe) {
        this.recipe = Objects.requireNonNull(recipe, "recipe");
    }

    public Fp8Recipe recipe() {
        return recipe;
    }

    public boolean delayed() {
        return recipe instanceof Fp8Recipe.DelayedScaling;
    }

    /**
     * A name for a new layer, {@code base} itself the first time and {@code base#2}, {@code base#3}, ... after: a
     * stack of blocks registers one "fc1" per block.
     */
    public String layerName(String base) {
        if (!layers.contains(base)) {
            return base;
        }
        int i = 2;
        while (layers.contains(base + "#" + i)) {
            i++;
        }
        return base + "#" + i;
    }

    /** A slot for {@code layer}'s tensor {@code role}, in the format the recipe gives that role. */
    public Slot register(String layer, Fp8Role role, boolean shared) {
        if (frozen) {
            throw new IllegalStateException("FP8 tensors are registered while the layers are made, before their first"
                    + " step; " + layer + "." + role + " came after (make every layer of a context before using any)");
        }
        Objects.requireNonNull(role, "role");
        layers.add(Objects.requireNonNull(layer, "layer"));
        for (Slot s : slots) {
            if (s.layer().equals(layer) && s.role() == role) {
                throw new IllegalArgumentException(layer + "." + role + " is registered already: two layers of one"
                        + " context share the name " + layer);
            }
        }
        ScalingState state = ScalingState.of(recipe, role);
        Slot s = new Slot(slots.size(), layer, role, shared, state.format());
        slots.add(s);
        states.add(state);
        return s;
    }

    /** No more slots: the device table is sized now. */
    public void freeze() {
        frozen = true;
    }

    public boolean frozen() {
        return frozen;
    }

    public List<Slot> slots() {
        return List.copyOf(slots);
    }

    public int size() {
        return slots.size();
    }

    /** Steps ended so far ({@link #endStep} calls). */
    public long steps() {
        return steps;
    }

    /** The scale {@code q = fp8(x * scale)} the slot's tensor is quantized with in the running step. */
    public float scale(Slot s) {
        return states.get(check(s)).scale();
    }

    public float scaleInverse(Slot s) {
        return states.get(check(s)).scaleInverse();
    }

    /** The slot's amax window, most recent step first (delayed scaling; one slot under current scaling). */
    public float[] history(Slot s) {
        return states.get(check(s)).history();
    }

    /**
     * Ends a step under delayed scaling: {@code amaxes[i]} is slot i's amax of the step (its largest |x| over every
     * quantization in the step, reduced over the TP group); each is recorded and every scale updated.
     *
     * @throws IllegalStateException under current scaling, which carries nothing between steps
     */
    public void endStep(float[] amaxes) {
        if (!(recipe instanceof Fp8Recipe.DelayedScaling d)) {
            throw new IllegalStateException("current scaling carries nothing between steps: each scale comes from its"
                    + " tensor's own amax when it is quantized");
        }
        if (amaxes.length != slots.size()) {
            throw new IllegalArgumentException(slots.size() + " slots but " + amaxes.length + " amaxes");
        }
        for (int i = 0; i < amaxes.length; i++) {
            states.get(i).recordAmax(amaxes[i]);
            states.get(i).update(d);
        }
        steps++;
    }

    /** Current scaling, on the host: the slot's scale from the amax of the tensor about to be quantized. */
    public float currentScale(Slot s, float amax) {
        if (!(recipe instanceof Fp8Recipe.CurrentScaling c)) {
            throw new IllegalStateException("delayed scaling takes a scale from the amax history (endStep), not from"
                    + " the tensor being quantized");
        }
        return states.get(check(s)).scaleFromCurrentAmax(c, amax);
    }

    /** The device table: scale[0, n), scale inverse[n, 2n), amax[2n, 3n) (zero: a fresh step). */
    public float[] deviceImage() {
        int n = slots.size();
        float[] image = new float[3 * n];
        for (int i = 0; i < n; i++) {
            image[i] = states.get(i).scale();
            image[n + i] = states.get(i).scaleInverse();
        }
        return image;
    }

    private int check(Slot s) {
        if (s.index() >= slots.size() || slots.get(s.index()) != s) {
            throw new IllegalArgumentException(s.describe() + " is not a slot of this table");
        }
        return s.index();
    }
}

package dev.ubuf.tests;

import java.util.Arrays;
import java.util.List;

/** Reads a scenario's positional parameters, naming the scenario and the parameter in every error. */
final class ScenarioArgs {
    private final String scenario;
    private final List<String> names;
    private final List<String> values;

    private ScenarioArgs(String scenario, List<String> names, List<String> values) {
        this.scenario = scenario;
        this.names = names;
        this.values = values;
    }

    /** Checks that {@code values} has one word per name in {@code names}. */
    static ScenarioArgs of(String scenario, List<String> names, List<String> values) {
        if (values.size() != names.size()) {
            throw new IllegalArgumentException("scenario '" + scenario + "' takes " + names.size() + " parameters "
                    + names + ", got " + values.size() + ": " + values);
        }
        return new ScenarioArgs(scenario, names, values);
    }

    int positiveInt(int i) {
        String v = values.get(i);
        int n;
        try {
            n = Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw problem(i, "an integer");
        }
        if (n <= 0) {
            throw problem(i, "a positive integer");
        }
        return n;
    }

    String text(int i) {
        String v = values.get(i);
        if (v.isBlank()) {
            throw problem(i, "a non-empty word");
        }
        return v;
    }

    boolean bool(int i) {
        return switch (values.get(i)) {
            case "true" -> true;
            case "false" -> false;
            default -> throw problem(i, "true or false");
        };
    }

    <E extends Enum<E>> E constant(int i, Class<E> type) {
        try {
            return Enum.valueOf(type, values.get(i));
        } catch (IllegalArgumentException e) {
            throw problem(i, "one of " + Arrays.toString(type.getEnumConstants()));
        }
    }

    private IllegalArgumentException problem(int i, String expected) {
        return new IllegalArgumentException("scenario '" + scenario + "': parameter " + names.get(i) + " must be "
                + expected + ", got '" + values.get(i) + "'");
    }
}

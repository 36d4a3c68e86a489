package dev.ubuf.cli;

/**
 * One key of a method variant on a benchmark's command line ({@code ring:cs=1}): what it sets and its range.
 *
 * @param name    the key as written
 * @param meaning what it sets, for the help
 * @param min     smallest value
 * @param max     largest value
 */
record VariantKey(String name, String meaning, int min, int max) {
    String range() {
        return max == Integer.MAX_VALUE ? ">= " + min : min + ".." + max;
    }

    String help() {
        return String.format("  %-7s %s (%s)", name, meaning, range());
    }
}

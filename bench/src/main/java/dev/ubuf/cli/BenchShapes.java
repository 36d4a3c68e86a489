package dev.ubuf.cli;

/** Parses benchmark shapes "M,K,N" with clear errors. */
final class BenchShapes {
    private BenchShapes() {
    }

    static long[] parse(String spec) {
        String[] p = spec.trim().split(",");
        if (p.length != 3) {
            throw new IllegalArgumentException("a shape is M,K,N (three positive integers), got '" + spec + "'");
        }
        long[] v = new long[3];
        for (int i = 0; i < 3; i++) {
            try {
                v[i] = Long.parseLong(p[i].trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("a shape is M,K,N (three positive integers), got '" + spec + "'");
            }
            if (v[i] <= 0) {
                throw new IllegalArgumentException("shape dimensions must be positive, got '" + spec + "'");
            }
        }
        return v;
    }
}

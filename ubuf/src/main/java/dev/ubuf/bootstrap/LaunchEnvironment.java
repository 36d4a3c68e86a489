package dev.ubuf.bootstrap;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Where this process sits in a multi-process job, as a launcher describes it in torchrun-compatible environment
 * variables ({@code RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT}) plus ubuf's job token.
 *
 * <p>Job token policy: {@code UBUF_JOB_TOKEN} (set by {@code ubuf-launch}: 32 random hex digits) authenticates the
 * ranks to rank 0. Other launchers (torchrun, a shell loop) must set the same token on every rank. Without one,
 * {@link #jobToken()} is the empty string and the TCP bootstrap refuses to start, unless
 * {@link BootstrapConfig#allowNoToken()} ({@code UBUF_ALLOW_NO_TOKEN=1}) declares the host trusted; rank 0 then admits
 * only peers that also have no token — a rank with a token never joins a root without one, and the other way round.
 * The token is never printed ({@link #toString()} hides it).
 *
 * @param rank        this process's rank, 0 &lt;= rank &lt; worldSize
 * @param worldSize   number of ranks in the job
 * @param localRank   rank within this node (selects the GPU), &gt;= 0
 * @param masterAddr  host or address where rank 0 listens
 * @param masterPort  TCP port where rank 0 listens, 1..65535
 * @param jobToken    the shared secret, or "" when none was given
 */
public record LaunchEnvironment(int rank, int worldSize, int localRank, String masterAddr, int masterPort,
                                String jobToken) {
    public static final String RANK = "RANK";
    public static final String WORLD_SIZE = "WORLD_SIZE";
    public static final String LOCAL_RANK = "LOCAL_RANK";
    public static final String LOCAL_WORLD_SIZE = "LOCAL_WORLD_SIZE";
    public static final String MASTER_ADDR = "MASTER_ADDR";
    public static final String MASTER_PORT = "MASTER_PORT";
    public static final String JOB_TOKEN = "UBUF_JOB_TOKEN";
    /** Longest token accepted; ubuf-launch makes 32 characters. */
    public static final int MAX_TOKEN_LENGTH = 256;

    public LaunchEnvironment {
        Objects.requireNonNull(masterAddr, "masterAddr");
        Objects.requireNonNull(jobToken, "jobToken (use \"\" for none)");
        List<String> problems = new ArrayList<>();
        if (worldSize < 1) {
            problems.add("world size must be at least 1, got " + worldSize);
        } else if (rank < 0 || rank >= worldSize) {
            problems.add("rank " + rank + " is outside 0.." + (worldSize - 1));
        }
        if (localRank < 0) {
            problems.add("local rank must be >= 0, got " + localRank);
        }
        if (masterAddr.isBlank()) {
            problems.add("master address is empty");
        }
        if (masterPort < 1 || masterPort > 65535) {
            problems.add("master port must be in 1..65535, got " + masterPort);
        }
        String tokenProblem = tokenProblem(jobToken);
        if (tokenProblem != null) {
            problems.add(tokenProblem);
        }
        if (!problems.isEmpty()) {
            throw new IllegalArgumentException("invalid launch environment: " + String.join("; ", problems));
        }
    }

    private static String tokenProblem(String token) {
        if (token.length() > MAX_TOKEN_LENGTH) {
            return "job token is longer than " + MAX_TOKEN_LENGTH + " characters";
        }
        for (int i = 0; i < token.length(); i++) {
            char c = token.charAt(i);
            if (c <= ' ' || c > '~') {
                return "job token must be printable ASCII without spaces";
            }
        }
        return null;
    }

    /** Reads the variables from this process's environment. */
    public static LaunchEnvironment fromEnvironment() {
        return fromEnvironment(System.getenv());
    }

    /**
     * Reads and validates the variables; one exception lists every missing or invalid one. {@code RANK, WORLD_SIZE,
     * LOCAL_RANK, MASTER_ADDR, MASTER_PORT} are required; {@code UBUF_JOB_TOKEN} is read when present (the TCP
     * bootstrap decides whether it may be missing; see the class comment).
     */
    public static LaunchEnvironment fromEnvironment(Map<String, String> env) {
        Objects.requireNonNull(env, "env");
        List<String> problems = new ArrayList<>();
        int rank = intVariable(env, RANK, problems);
        int worldSize = intVariable(env, WORLD_SIZE, problems);
        int localRank = intVariable(env, LOCAL_RANK, problems);
        String masterAddr = env.get(MASTER_ADDR);
        if (masterAddr == null || masterAddr.isBlank()) {
            problems.add(MASTER_ADDR + " is not set (host or address where rank 0 listens)");
        }
        int masterPort = intVariable(env, MASTER_PORT, problems);
        if (!problems.isEmpty()) {
            throw new IllegalArgumentException("invalid launch environment (start ranks with bin/ubuf-launch, or set "
                    + "torchrun-style variables): " + String.join("; ", problems));
        }
        String token = env.getOrDefault(JOB_TOKEN, "");
        try {
            return new LaunchEnvironment(rank, worldSize, localRank, masterAddr.trim(), masterPort, token);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(e.getMessage() + " (from " + RANK + "=" + env.get(RANK) + ", "
                    + WORLD_SIZE + "=" + env.get(WORLD_SIZE) + ", " + LOCAL_RANK + "=" + env.get(LOCAL_RANK) + ", "
                    + MASTER_ADDR + "=" + env.get(MASTER_ADDR) + ", " + MASTER_PORT + "=" + env.get(MASTER_PORT)
                    + ")");
        }
    }

    private static int intVariable(Map<String, String> env, String name, List<String> problems) {
        String value = env.get(name);
        if (value == null || value.isBlank()) {
            problems.add(name + " is not set");
            return -1;
        }
        try {
            return Integer.parseInt(value.trim());
        } catch (NumberFormatException e) {
            problems.add(name + " is not an integer: '" + value + "'");
            return -1;
        }
    }

    public boolean hasJobToken() {
        return !jobToken.isEmpty();
    }

    /**
     * The variables that describe this environment ({@code UBUF_JOB_TOKEN} only when there is a token), in the form
     * {@link #fromEnvironment(Map)} reads.
     */
    public Map<String, String> toEnvironment() {
        Map<String, String> env = new LinkedHashMap<>();
        env.put(RANK, Integer.toString(rank));
        env.put(WORLD_SIZE, Integer.toString(worldSize));
        env.put(LOCAL_RANK, Integer.toString(localRank));
        env.put(MASTER_ADDR, masterAddr);
        env.put(MASTER_PORT, Integer.toString(masterPort));
        if (hasJobToken()) {
            env.put(JOB_TOKEN, jobToken);
        }
        return env;
    }

    @Override
    public String toString() {
        return "LaunchEnvironment[rank=" + rank + ", worldSize=" + worldSize + ", localRank=" + localRank
                + ", master=" + masterAddr + ":" + masterPort + ", jobToken=" + (hasJobToken() ? "(set)" : "(none)")
                + "]";
    }
}

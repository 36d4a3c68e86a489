package dev.ubuf.bootstrap;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The bootstrap of a multi-process job over TCP, star-shaped through rank 0.
 *
 * <p>Rank 0 listens on {@code MASTER_ADDR:MASTER_PORT} (the address MASTER_ADDR names, so loopback for
 * "127.0.0.1"/"localhost") and runs the hub: every operation's contributions go to it, and it answers each rank. The
 * other ranks connect, retrying until the deadline while rank 0 is not up yet, and introduce themselves with their
 * rank, the world size and the job token. Rank 0 refuses (and tells why) a wrong or missing token, a rank that is
 * out of range, already connected or lost before, or a different world size; a refused peer never counts as a rank.
 * {@link #connect} returns once all ranks have joined.
 *
 * <p>Strangers: without a job token ({@link LaunchEnvironment#JOB_TOKEN}) no rank starts, unless
 * {@link BootstrapConfig#allowNoToken()} says the host is trusted. Until a connection has introduced itself, rank 0
 * gives it one of {@value #HANDSHAKE_THREADS} handshake threads or a place in line (at least {@value #HANDSHAKE_QUEUE},
 * or the world size), and drops it at {@link BootstrapConfig#handshakeTimeout()} after accepting it, however slowly
 * it sends; beyond that, a connection is answered "busy" at once (a real rank then tries again until its deadline).
 * So idle, slow or garbled strangers cost rank 0 a bounded number of threads for a bounded time, and the job's own
 * ranks still get in.
 *
 * <p>Loss: rank 0 reads every connection on its own thread; the end of a stream marks that rank lost and every other
 * rank hears it at once ({@link PeerLostException} for every operation that needs it). The others see rank 0's loss
 * as the end of their connection; since rank 0 relays everything, every later operation then fails.
 *
 * <p>Threads (all daemons, named {@code ubuf-bootstrap-*}, stopped by {@link #close()}): on rank 0 an acceptor, up
 * to {@value #HANDSHAKE_THREADS} handshake threads (ended when idle), a reader and a writer per rank, the deadline
 * timer; on other ranks a reader and a writer.
 */
public final class TcpBootstrap extends WorldBootstrap {
    private static final System.Logger LOG = System.getLogger(TcpBootstrap.class.getName());
    /** Handshakes rank 0 runs at once; a real rank's takes well under a millisecond. */
    static final int HANDSHAKE_THREADS = 8;
    /** Accepted connections waiting for a handshake thread (or the world size, if larger); more are told "busy". */
    static final int HANDSHAKE_QUEUE = 64;
    /** What a connection that waited in line past its deadline still gets: a real rank's hello is already there. */
    private static final Duration HANDSHAKE_GRACE = Duration.ofMillis(200);
    private static final Duration HANDSHAKE_THREAD_IDLE = Duration.ofSeconds(5);
    /** Refusals logged one by one; after these, one in a hundred, so strangers cannot flood the log. */
    private static final int REFUSALS_LOGGED = 10;
    private static final int REFUSALS_PER_LOG_LINE = 100;
    private static final Duration MAX_CONNECT_ATTEMPT = Duration.ofSeconds(2);
    private static final Duration MAX_BACKOFF = Duration.ofMillis(500);
    private static final Duration CLOSE_GRACE = Duration.ofSeconds(2);

    private final LaunchEnvironment environment;
    private final Endpoint endpoint;
    private final GroupBootstrap world;
    private final Root root;
    private final Connection toRoot;
    private final AtomicBoolean closed = new AtomicBoolean();

    private TcpBootstrap(LaunchEnvironment environment, Endpoint endpoint, GroupBootstrap world, Root root,
                         Connection toRoot) {
        this.environment = environment;
        this.endpoint = endpoint;
        this.world = world;
        this.root = root;
        this.toRoot = toRoot;
    }

    /** Reads the launch environment and {@code UB_TIMEOUT} from this process's environment, then connects. */
    public static TcpBootstrap connectFromEnvironment() {
        return connect(LaunchEnvironment.fromEnvironment(), BootstrapConfig.fromEnvironment(System.getenv()));
    }

    /**
     * Joins the job described by {@code environment}; returns when every rank has joined, or throws
     * {@link BootstrapTimeoutException} naming the ranks that did not join within {@code config.timeout()},
     * {@link BootstrapRejectedException} if rank 0 refused this process, {@link PeerLostException} if a rank
     * disconnected meanwhile, and {@link BootstrapException} at once, before touching the network, if there is no job
     * token and {@code config} does not allow that.
     */
    public static TcpBootstrap connect(LaunchEnvironment environment, BootstrapConfig config) {
        Objects.requireNonNull(environment, "environment");
        Objects.requireNonNull(config, "config");
        if (!environment.hasJobToken()) {
            if (!config.allowNoToken()) {
                throw new BootstrapException(environment.rank(), LaunchEnvironment.JOB_TOKEN + " is not set, and "
                        + "without a job token any process that reaches " + environment.masterAddr() + ":"
                        + environment.masterPort() + " could join this job. Start the ranks with bin/ubuf-launch "
                        + "(it sets a fresh token), or give every rank the same " + LaunchEnvironment.JOB_TOKEN
                        + " (e.g. 32 random hex digits), or, on a trusted single-user host only, set "
                        + BootstrapConfig.ALLOW_NO_TOKEN_VARIABLE + "=1");
            }
            if (environment.rank() == 0) {
                LOG.log(System.Logger.Level.INFO, "rank 0: running without a job token ("
                        + BootstrapConfig.ALLOW_NO_TOKEN_VARIABLE + "=1): any process without a token that reaches "
                        + environment.masterAddr() + ":" + environment.masterPort() + " may join");
            }
        }
        long deadline = System.nanoTime() + config.timeout().toNanos();
        return environment.rank() == 0
                ? connectAsRoot(environment, config, deadline)
                : connectToRoot(environment, config.timeout(), deadline);
    }

    private static Duration remaining(long deadline) {
        return Duration.ofNanos(Math.max(1_000_000L, deadline - System.nanoTime()));
    }

    private static TcpBootstrap connectAsRoot(LaunchEnvironment env, BootstrapConfig config, long deadline) {
        Root root = new Root(env, config.handshakeTimeout());
        Endpoint endpoint = new Endpoint(0, -1, frame -> root.hub.receive(0, frame));
        root.start(endpoint);
        GroupBootstrap world = GroupBootstrap.world(endpoint, env.worldSize(), config.timeout());
        TcpBootstrap bootstrap = new TcpBootstrap(env, endpoint, world, root, null);
        joinWorld(bootstrap, deadline);
        return bootstrap;
    }

    private static TcpBootstrap connectToRoot(LaunchEnvironment env, Duration timeout, long deadline) {
        int rank = env.rank();
        long backoffMillis = 20;
        while (true) {
            Socket socket = reachRoot(env, timeout, deadline);
            HandshakeInput input;
            DataInputStream in;
            Frame reply;
            try {
                socket.setTcpNoDelay(true);
                OutputStream out = socket.getOutputStream();
                out.write(Wire.encode(new Frame.Hello(Wire.PROTOCOL_VERSION, rank, env.worldSize(), env.jobToken())));
                out.flush();
                input = new HandshakeInput(socket, deadline);
                in = new DataInputStream(new BufferedInputStream(input));
                reply = Wire.read(in, Wire.MAX_FRAME_BYTES);
                if (reply instanceof Frame.Welcome) {
                    input.lift();
                }
            } catch (SocketTimeoutException e) {
                closeQuietly(socket);
                throw new BootstrapTimeoutException(rank, "connect #0 in world", List.of(0), timeout,
                        "rank 0 accepted the connection but did not answer the hello");
            } catch (EOFException e) {
                closeQuietly(socket);
                throw new BootstrapException(rank, "rank 0 closed the connection during the handshake (is it "
                        + "shutting down, or is " + env.masterAddr() + ":" + env.masterPort() + " another service?)",
                        e);
            } catch (IOException e) {
                closeQuietly(socket);
                throw new BootstrapException(rank, "handshake with rank 0 failed: " + e, e);
            } catch (RuntimeException e) {
                closeQuietly(socket);
                throw e;
            }
            switch (reply) {
                case Frame.Welcome w -> {
                    return joinRoot(env, timeout, deadline, socket, in);
                }
                case Frame.Busy b -> closeQuietly(socket);
                case Frame.Rejected r -> {
                    closeQuietly(socket);
                    throw new BootstrapRejectedException(rank, r.reason());
                }
                default -> {
                    closeQuietly(socket);
                    throw new BootstrapException(rank, "rank 0 answered the hello with " + reply);
                }
            }
            // Rank 0 dropped us unread because too many connections wait for a handshake: try again.
            long remainingMillis = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (remainingMillis <= backoffMillis) {
                throw new BootstrapTimeoutException(rank, "connect #0 in world", List.of(0), timeout,
                        "rank 0 stayed too busy with other connections' handshakes to hear this rank");
            }
            sleepOrFail(rank, backoffMillis);
            backoffMillis = Math.min(backoffMillis * 2, MAX_BACKOFF.toMillis());
        }
    }

    /** Rank 0 admitted this rank: start the connection and join the connect rendezvous. */
    private static TcpBootstrap joinRoot(LaunchEnvironment env, Duration timeout, long deadline, Socket socket,
                                         DataInputStream in) {
        int rank = env.rank();
        ConnectionHolder holder = new ConnectionHolder();
        Endpoint endpoint = new Endpoint(rank, 0, frame -> holder.connection.send(frame));
        Connection connection;
        try {
            connection = new Connection(socket, in, "r" + rank + "-to-r0", new Connection.Listener() {
                @Override
                public void onFrame(Frame frame) {
                    endpoint.onFrame(frame);
                }

                @Override
                public void onDisconnect(String detail) {
                    endpoint.hubLost("the connection to rank 0 (the bootstrap root) ended: " + detail);
                }
            });
        } catch (IOException e) {
            closeQuietly(socket);
            throw new BootstrapException(rank, "could not set up the connection to rank 0: " + e, e);
        }
        holder.connection = connection;
        connection.start();
        GroupBootstrap world = GroupBootstrap.world(endpoint, env.worldSize(), timeout);
        TcpBootstrap bootstrap = new TcpBootstrap(env, endpoint, world, null, connection);
        joinWorld(bootstrap, deadline);
        return bootstrap;
    }

    private static final class ConnectionHolder {
        volatile Connection connection;
    }

    /** The connect rendezvous; on failure everything started so far is closed. */
    private static void joinWorld(TcpBootstrap bootstrap, long deadline) {
        try {
            bootstrap.world.connect(remaining(deadline));
        } catch (RuntimeException e) {
            bootstrap.close();
            throw e;
        }
    }

    /** Connects to rank 0, retrying while it is not listening yet, until the deadline. */
    private static Socket reachRoot(LaunchEnvironment env, Duration timeout, long deadline) {
        long backoffMillis = 20;
        IOException last = null;
        while (true) {
            long remainingMillis = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (remainingMillis <= 0) {
                throw new BootstrapTimeoutException(env.rank(), "connect #0 in world", List.of(0), timeout,
                        "could not reach rank 0 at " + env.masterAddr() + ":" + env.masterPort()
                                + (last == null ? "" : " (last error: " + last + ")"));
            }
            Socket socket = new Socket();
            try {
                socket.connect(new InetSocketAddress(env.masterAddr(), env.masterPort()),
                        (int) Math.max(1, Math.min(remainingMillis, MAX_CONNECT_ATTEMPT.toMillis())));
                return socket;
            } catch (IOException e) {
                last = e;
                closeQuietly(socket);
            }
            sleepOrFail(env.rank(), Math.min(backoffMillis, Math.max(1, remainingMillis)));
            backoffMillis = Math.min(backoffMillis * 2, MAX_BACKOFF.toMillis());
        }
    }

    private static void sleepOrFail(int rank, long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new BootstrapException(rank, "interrupted while connecting to rank 0");
        }
    }

    private static void closeQuietly(Socket socket) {
        try {
            socket.close();
        } catch (IOException e) {
            // nothing to save
        }
    }

    /** The launch environment this bootstrap joined with (its token is not printed by toString). */
    public LaunchEnvironment environment() {
        return environment;
    }

    /** The TCP port rank 0 listens on (rank 0 only; useful when MASTER_PORT named a port chosen by the system). */
    public int listeningPort() {
        if (root == null) {
            throw new IllegalStateException("rank " + rank() + " does not listen; only rank 0 does");
        }
        return root.server.getLocalPort();
    }

    @Override
    GroupBootstrap world() {
        return world;
    }

    /**
     * Leaves the job: the other ranks' operations that need this rank fail with {@link PeerLostException} (all of
     * them when this is rank 0, which relays everything). Stops this bootstrap's threads. Idempotent.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        world.closeGroup(false);
        boolean announce = endpoint.markClosed();
        if (root != null) {
            if (announce) {
                root.hub.receive(0, new Frame.Leave(Frame.WORLD, new int[0]));
            }
            root.close();
        } else {
            if (announce) {
                toRoot.send(new Frame.Leave(Frame.WORLD, new int[0]));
            }
            toRoot.close(CLOSE_GRACE);
        }
    }

    @Override
    public String toString() {
        return "TcpBootstrap[rank " + rank() + " of " + size() + ", master " + environment.masterAddr() + ":"
                + environment.masterPort() + (closed.get() ? ", closed]" : "]");
    }

    /**
     * Rank 0's side: the listening socket, the admission of ranks (a bounded pool of handshakes, see the class
     * comment), the hub and one connection per rank.
     */
    private static final class Root {
        private final LaunchEnvironment env;
        private final Duration handshakeTimeout;
        private final ServerSocket server;
        private final Hub hub;
        private final AtomicReferenceArray<Connection> connections;
        /** Accepted sockets not yet admitted or refused (running or in line), closed by {@link #close()}. */
        private final Set<Socket> handshaking = ConcurrentHashMap.newKeySet();
        private final ThreadPoolExecutor handshakes;
        private final int handshakeQueue;
        private final AtomicLong refusals = new AtomicLong();
        private final Object admission = new Object();
        private final Thread acceptor;
        private volatile Endpoint local;
        private volatile boolean closing;

        Root(LaunchEnvironment env, Duration handshakeTimeout) {
            this.env = env;
            this.handshakeTimeout = handshakeTimeout;
            this.connections = new AtomicReferenceArray<>(env.worldSize());
            this.server = listen(env);
            this.hub = new Hub(env.worldSize(), this::deliver, "ubuf-bootstrap-timer-r0");
            // Room in line for every rank at once, so a large job's own burst of connections is never told "busy".
            this.handshakeQueue = Math.max(HANDSHAKE_QUEUE, env.worldSize());
            this.handshakes = new ThreadPoolExecutor(HANDSHAKE_THREADS, HANDSHAKE_THREADS,
                    HANDSHAKE_THREAD_IDLE.toMillis(), TimeUnit.MILLISECONDS, new ArrayBlockingQueue<>(handshakeQueue),
                    Thread.ofPlatform().daemon().name("ubuf-bootstrap-handshake-r0-", 0).factory());
            this.handshakes.allowCoreThreadTimeOut(true); // none left once every rank is in
            this.acceptor = Thread.ofPlatform().daemon().name("ubuf-bootstrap-accept-r0").unstarted(this::acceptLoop);
        }

        private static ServerSocket listen(LaunchEnvironment env) {
            InetAddress address;
            try {
                address = InetAddress.getByName(env.masterAddr());
            } catch (IOException e) {
                throw new BootstrapException(0, "cannot resolve MASTER_ADDR " + env.masterAddr() + ": " + e, e);
            }
            try {
                ServerSocket server = new ServerSocket();
                server.setReuseAddress(true);
                try {
                    server.bind(new InetSocketAddress(address, env.masterPort()), Math.max(64, env.worldSize()));
                } catch (IOException e) {
                    server.close();
                    throw e;
                }
                return server;
            } catch (IOException e) {
                throw new BootstrapException(0, "rank 0 cannot listen on " + address.getHostAddress() + ":"
                        + env.masterPort() + " (MASTER_ADDR " + env.masterAddr() + " must name an address of this "
                        + "host, MASTER_PORT a free port): " + e, e);
            }
        }

        void start(Endpoint localEndpoint) {
            this.local = localEndpoint;
            acceptor.start();
        }

        private void deliver(int worldRank, Frame frame) {
            if (worldRank == 0) {
                Endpoint endpoint = local;
                if (endpoint != null) {
                    // Our own copies: the hub's arrays are being encoded for the other ranks meanwhile.
                    endpoint.onFrame(frame instanceof Frame.Result r ? copyResult(r) : frame);
                }
                return;
            }
            Connection connection = connections.get(worldRank);
            if (connection != null) {
                connection.send(frame);
            }
        }

        private static Frame.Result copyResult(Frame.Result r) {
            byte[][] copy = new byte[r.payloads().length][];
            for (int i = 0; i < copy.length; i++) {
                copy[i] = r.payloads()[i] == null ? null : r.payloads()[i].clone();
            }
            return new Frame.Result(r.group(), r.seq(), copy);
        }

        private void acceptLoop() {
            while (!closing) {
                Socket socket;
                try {
                    socket = server.accept();
                } catch (IOException e) {
                    if (!closing) {
                        LOG.log(System.Logger.Level.ERROR, "rank 0: accepting bootstrap connections failed", e);
                    }
                    return;
                }
                // The deadline runs from here, so connections waiting in line behind idle ones expire too.
                long deadline = System.nanoTime() + handshakeTimeout.toNanos();
                handshaking.add(socket);
                try {
                    handshakes.execute(() -> handshake(socket, deadline));
                } catch (RejectedExecutionException e) {
                    handshaking.remove(socket);
                    refuse(socket, String.valueOf(socket.getRemoteSocketAddress()), new Frame.Busy("rank 0 is busy: "
                            + HANDSHAKE_THREADS + " handshakes are running and " + handshakeQueue + " waiting"));
                }
            }
        }

        private void handshake(Socket socket, long acceptDeadline) {
            String peer = String.valueOf(socket.getRemoteSocketAddress());
            try {
                if (closing) {
                    closeQuietly(socket);
                    return;
                }
                long graceDeadline = System.nanoTime() + HANDSHAKE_GRACE.toNanos();
                long deadline = acceptDeadline - graceDeadline > 0 ? acceptDeadline : graceDeadline;
                socket.setTcpNoDelay(true);
                HandshakeInput input = new HandshakeInput(socket, deadline);
                DataInputStream in = new DataInputStream(new BufferedInputStream(input));
                Frame frame;
                try {
                    frame = Wire.read(in, Wire.MAX_HELLO_BYTES);
                } catch (SocketTimeoutException e) {
                    reject(socket, peer, "no hello within " + Durations.format(handshakeTimeout) + " of connecting");
                    return;
                } catch (EOFException e) {
                    reject(socket, peer, "the connection ended before a complete hello");
                    return;
                } catch (IOException e) {
                    reject(socket, peer, "no valid hello: " + e.getMessage());
                    return;
                }
                if (!(frame instanceof Frame.Hello hello)) {
                    reject(socket, peer, "expected a hello, got " + frame.getClass().getSimpleName());
                    return;
                }
                admit(socket, in, input, peer, hello);
            } catch (IOException | RuntimeException e) {
                closeQuietly(socket);
                if (!closing) {
                    LOG.log(System.Logger.Level.WARNING, "rank 0: handshake with " + peer + " failed: " + e);
                }
            } finally {
                handshaking.remove(socket);
            }
        }

        private void admit(Socket socket, DataInputStream in, HandshakeInput input, String peer, Frame.Hello hello)
                throws IOException {
            int rank = hello.rank();
            Connection connection;
            synchronized (admission) {
                String problem = admissionProblem(hello);
                if (problem != null) {
                    reject(socket, peer, problem);
                    return;
                }
                connection = new Connection(socket, in, "r0-from-r" + rank, new Connection.Listener() {
                    @Override
                    public void onFrame(Frame frame) {
                        hub.receive(rank, frame);
                    }

                    @Override
                    public void onDisconnect(String detail) {
                        if (!hub.isLost(rank)) { // not after a rank's own orderly leave
                            LOG.log(System.Logger.Level.WARNING, "rank 0: lost rank " + rank + ": " + detail);
                        }
                        hub.rankGone(rank, false, "its connection to rank 0 ended: " + detail);
                    }
                });
                connection.send(new Frame.Welcome()); // queued before the hub can address this rank
                input.lift();
                connections.set(rank, connection);
            }
            connection.start();
        }

        /** Why {@code hello} may not join, or null. */
        private String admissionProblem(Frame.Hello hello) {
            if (closing) {
                return "rank 0 is shutting down";
            }
            if (hello.protocolVersion() != Wire.PROTOCOL_VERSION) {
                return "bootstrap protocol version " + hello.protocolVersion() + ", rank 0 speaks "
                        + Wire.PROTOCOL_VERSION + " (mixed ubuf versions?)";
            }
            boolean tokenMatches = MessageDigest.isEqual(hello.token().getBytes(StandardCharsets.UTF_8),
                    env.jobToken().getBytes(StandardCharsets.UTF_8));
            if (!tokenMatches) {
                if (env.jobToken().isEmpty()) {
                    return "this job runs without a job token (" + LaunchEnvironment.JOB_TOKEN + " is unset on rank "
                            + "0) but the peer sent one: it belongs to another job";
                }
                return hello.token().isEmpty()
                        ? "missing job token: this job requires " + LaunchEnvironment.JOB_TOKEN
                        : "wrong job token: the peer belongs to another job";
            }
            if (hello.worldSize() != env.worldSize()) {
                return "world size " + hello.worldSize() + " differs from rank 0's " + env.worldSize();
            }
            if (hello.rank() == 0) {
                return "rank 0 is this process; a second rank 0 cannot join";
            }
            if (hello.rank() < 1 || hello.rank() >= env.worldSize()) {
                return "rank " + hello.rank() + " is outside 1.." + (env.worldSize() - 1);
            }
            if (hub.isLost(hello.rank())) {
                return "rank " + hello.rank() + " was lost earlier and cannot rejoin this job";
            }
            if (connections.get(hello.rank()) != null) {
                return "rank " + hello.rank() + " is already connected (duplicate rank)";
            }
            return null;
        }

        private void reject(Socket socket, String peer, String reason) {
            refuse(socket, peer, new Frame.Rejected(reason));
        }

        /** Tells the peer why ({@code answer}: a Rejected or a Busy frame, a few bytes that never block) and closes. */
        private void refuse(Socket socket, String peer, Frame answer) {
            logRefusal(peer, switch (answer) {
                case Frame.Rejected r -> r.reason();
                case Frame.Busy b -> b.reason();
                default -> answer.toString();
            });
            try {
                OutputStream out = socket.getOutputStream();
                out.write(Wire.encode(answer));
                out.flush();
                socket.shutdownOutput();
            } catch (IOException e) {
                // the peer is gone already; nothing to tell
            } finally {
                closeQuietly(socket);
            }
        }

        private void logRefusal(String peer, String reason) {
            long n = refusals.incrementAndGet();
            if (n <= REFUSALS_LOGGED) {
                LOG.log(System.Logger.Level.WARNING, "rank 0: refused bootstrap peer " + peer + ": " + reason
                        + (n == REFUSALS_LOGGED ? " (from now on one refusal in " + REFUSALS_PER_LOG_LINE
                        + " is logged)" : ""));
            } else if (n % REFUSALS_PER_LOG_LINE == 0) {
                LOG.log(System.Logger.Level.WARNING, "rank 0: refused " + n + " bootstrap peers so far; the latest, "
                        + peer + ": " + reason);
            }
        }

        void close() {
            closing = true;
            try {
                server.close();
            } catch (IOException e) {
                // closing
            }
            handshakes.shutdownNow();
            for (Socket socket : handshaking) {
                closeQuietly(socket);
            }
            try {
                if (Thread.currentThread() != acceptor) {
                    acceptor.join(1000);
                }
                handshakes.awaitTermination(1, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            long deadline = System.nanoTime() + CLOSE_GRACE.toNanos();
            for (int rank = 1; rank < connections.length(); rank++) {
                Connection connection = connections.get(rank);
                if (connection != null) {
                    connection.close(remaining(deadline));
                }
            }
            hub.close();
            hub.awaitStopped(1000);
        }
    }
}

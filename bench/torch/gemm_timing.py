"""How the PyTorch baselines time GEMMs, the way `ubuf bench gemm` and `ubuf bench fp8` time cuBLASLt (EventTimer).

A large GEMM holds an H200 at its power limit, where its clocks fall from 1980 to about 1450 MHz, so how fast a
kernel runs depends on how busy the GPU was just before: runs with idle gaps between them (a host synchronizing, a
spin kernel holding the stream while the host enqueues) run cooler, and faster, than runs that follow each other.
Both sides therefore time replays of CUDA graphs: each function runs once (library setup), is captured as a graph
of runs_per_graph(m, n, k) runs (about GRAPH_MS of work at NOMINAL_TFLOPS, at most MAX_RUNS_PER_GRAPH: from the
shape, so both sides hold the same runs and pay the same launch cost per replay), all graphs replay round-robin for
heat_ms, then the warm-up replays and the timed replays, each between CUDA events, are enqueued back to back and
waited for once (the warm-ups keep the GPU busy while the host enqueues the timed ones). A sample is one replay's
time over its runs.
"""
import math
import time

GRAPH_MS = 0.5              # as ubuf's EventTimer.GRAPH_MS
MAX_RUNS_PER_GRAPH = 64     # as ubuf's EventTimer.MAX_RUNS_PER_GRAPH
NOMINAL_TFLOPS = 700        # as ubuf's EventTimer.NOMINAL_TFLOPS
HEAT_ROUNDS_AHEAD = 4       # rounds the heat phase enqueues between synchronizations


def percentile(values, q):
    """The q-quantile (0..1) of values, linear between the two nearest ranks."""
    s = sorted(values)
    pos = (len(s) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def runs_per_graph(m, n, k):
    """Runs per graph of an M x N x K GEMM: about GRAPH_MS of work at NOMINAL_TFLOPS, 1..MAX_RUNS_PER_GRAPH
    (EventTimer.runsPerGraph)."""
    if min(m, n, k) < 1:
        raise ValueError(f"a GEMM shape is positive, got {m}x{n}x{k}")
    nominal_ms = 2.0 * m * n * k / (NOMINAL_TFLOPS * 1e9)
    return int(max(1, min(MAX_RUNS_PER_GRAPH, math.ceil(GRAPH_MS / nominal_ms))))


def capture(torch, fn, runs):
    """A CUDA graph of runs calls of fn (captured on a side stream, as torch requires)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(side):
        with torch.cuda.graph(graph, stream=side):
            for _ in range(runs):
                fn()
    torch.cuda.current_stream().wait_stream(side)
    return graph


def heat(torch, graphs, ms):
    """Replays the graphs round-robin for ms of wall time, at most a few rounds ahead of the GPU."""
    end = time.monotonic() + ms / 1000.0
    rounds = 0
    while time.monotonic() < end:
        for g in graphs:
            g.replay()
        rounds += 1
        if rounds % HEAT_ROUNDS_AHEAD == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()


def time_graphs(torch, fns, warmup, iters, heat_ms, runs):
    """[per-run ms of each sample] for each of fns, each captured as a graph of runs runs (runs_per_graph of their
    shape), timed round-robin as the module's docstring says."""
    if runs < 1 or runs > MAX_RUNS_PER_GRAPH:
        raise ValueError(f"runs per graph must be 1..{MAX_RUNS_PER_GRAPH}, got {runs}")
    for fn in fns:
        fn()
    torch.cuda.synchronize()
    graphs = [capture(torch, fn, runs) for fn in fns]
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(iters * len(graphs))]
    heat(torch, graphs, heat_ms)
    for _ in range(warmup):
        for g in graphs:
            g.replay()
    j = 0
    for _ in range(iters):
        for g in graphs:
            events[j][0].record()
            g.replay()
            events[j][1].record()
            j += 1
    events[-1][1].synchronize()
    times = [[] for _ in fns]
    for j, (start, end) in enumerate(events):
        times[j % len(fns)].append(start.elapsed_time(end) / runs)
    return times

"""Checks of gemm_timing.py without a GPU: a fake torch whose graphs and events run on a simulated GPU clock.

    python3 bench/torch/test_gemm_timing.py   (exit 0 when every check passes)
"""
import contextlib
import os
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemm_timing  # noqa: E402


class FakeGpu:
    """One stream whose work runs in enqueue order. A function enqueues a kernel of its duration; under capture the
    kernel goes into the graph instead. A replay runs the graph's kernels back to back; events stamp the GPU time at
    which the stream reaches them. Enqueueing costs the host host_us per call, so an idle GPU waits for the host."""

    def __init__(self, host_us):
        self.host_us = host_us
        self.host = 0.0
        self.gpu = 0.0
        self.capturing = None
        self.kernels = 0

    def kernel(self, duration_us):
        if self.capturing is not None:
            self.capturing.append(duration_us)
            return
        self.host += self.host_us
        self.gpu = max(self.gpu, self.host) + duration_us
        self.kernels += 1

    def torch(self):
        gpu = self

        class Event:
            def __init__(self, enable_timing=False):
                self.at = None

            def record(self):
                gpu.host += gpu.host_us
                gpu.gpu = max(gpu.gpu, gpu.host)
                self.at = gpu.gpu

            def elapsed_time(self, other):
                return (other.at - self.at) / 1000.0

            def synchronize(self):
                gpu.host = max(gpu.host, gpu.gpu)

        class CUDAGraph:
            def __init__(self):
                self.kernels = []

            def replay(self):
                gpu.host += gpu.host_us
                gpu.gpu = max(gpu.gpu, gpu.host) + sum(self.kernels)
                gpu.kernels += len(self.kernels)

        @contextlib.contextmanager
        def graph(g, stream=None):
            gpu.capturing = g.kernels
            try:
                yield
            finally:
                gpu.capturing = None

        class Stream:
            def wait_stream(self, other):
                pass

        cuda = types.SimpleNamespace(
            Event=Event, CUDAGraph=CUDAGraph, graph=graph, Stream=Stream,
            stream=lambda s: contextlib.nullcontext(), current_stream=lambda: Stream(),
            synchronize=lambda: setattr(gpu, "host", max(gpu.host, gpu.gpu)))
        return types.SimpleNamespace(cuda=cuda)


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok   " + what)


def main():
    # Two GEMMs of 100 us and 7 us, round-robin; every host call costs 20 us, more than the small GEMM takes.
    gpu = FakeGpu(host_us=20.0)
    torch = gpu.torch()
    ta, tb = gemm_timing.time_graphs(torch, [lambda: gpu.kernel(100.0), lambda: gpu.kernel(7.0)],
                                     warmup=10, iters=30, heat_ms=0, runs=5)
    check(len(ta) == 30 and len(tb) == 30, "one sample per timed replay of each function (30 of 30)")
    check(all(abs(t - 0.1) < 1e-9 for t in ta), "a sample is a replay's GPU time over its runs (0.100 ms)")
    check(all(abs(t - 0.007) < 1e-9 for t in tb),
          "replayed runs carry no host time even when the host is slower than one GEMM (0.007 ms)")
    runs = 2 * 1 + 2 * 5 * (10 + 30)
    check(gpu.kernels == runs, f"each function runs once, then only as graph replays ({gpu.kernels} of {runs})")

    # Runs per graph come from the shape alone, as ubuf's EventTimer.runsPerGraph (its test checks the same values).
    check(gemm_timing.runs_per_graph(8192, 8192, 8192) == 1, "a GEMM longer than 0.5 ms nominal: one run")
    check(gemm_timing.runs_per_graph(8192, 3072, 4096) == 2, "0.29 ms nominal: two runs")
    check(gemm_timing.runs_per_graph(1024, 5120, 2560) == 14, "0.038 ms nominal: 14 runs")
    check(gemm_timing.runs_per_graph(256, 4096, 2048) == 64, "6 us nominal: capped at 64")
    for bad in ((0, 8, 8), (8, -1, 8)):
        try:
            gemm_timing.runs_per_graph(*bad)
            check(False, f"{bad} refused")
        except ValueError:
            check(True, f"a shape with a dimension below 1 is refused {bad}")
    try:
        gemm_timing.time_graphs(torch, [lambda: gpu.kernel(1.0)], warmup=0, iters=1, heat_ms=0, runs=65)
        check(False, "65 runs per graph refused")
    except ValueError:
        check(True, "more runs per graph than the cap are refused")

    check(gemm_timing.percentile([4.0, 1.0, 3.0, 2.0, 5.0], 0.5) == 3.0
          and abs(gemm_timing.percentile([1.0, 2.0], 0.1) - 1.1) < 1e-12, "percentiles interpolate between ranks")

    # The heat phase replays the graphs for about heat_ms of wall time before the warm-ups.
    fast = FakeGpu(host_us=1.0)
    gemm_timing.time_graphs(fast.torch(), [lambda: fast.kernel(1.0)], warmup=0, iters=1, heat_ms=20, runs=4)
    check(fast.kernels > 10 * 4, f"the heat phase replays the graph ({fast.kernels} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Checks of gemm_timing.py without a GPU: a fake torch whose events read a simulated GPU clock.

    python3 bench/torch/test_gemm_timing.py   (exit 0 when every check passes)
"""
import os
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemm_timing  # noqa: E402


class FakeGpu:
    """A stream whose work runs in enqueue order: a spin holds it, each GEMM takes its duration, and the host's
    enqueue of each call costs host_us; events stamp the GPU time at which the stream reaches them."""

    def __init__(self, host_us):
        self.host_us = host_us
        self.host = 0.0   # host clock, us
        self.gpu = 0.0    # time the stream's queued work ends, us
        self.calls = []

    def enqueue(self, duration_us):
        self.host += self.host_us
        self.gpu = max(self.gpu, self.host) + duration_us

    def torch(self):
        gpu = self

        class Event:
            def __init__(self, enable_timing=False):
                self.at = None

            def record(self):
                gpu.enqueue(0.0)
                self.at = gpu.gpu

            def elapsed_time(self, other):
                return (other.at - self.at) / 1000.0

            def synchronize(self):
                gpu.host = max(gpu.host, gpu.gpu)

        cuda = types.SimpleNamespace(
            Event=Event,
            _sleep=lambda cycles: gpu.enqueue(cycles / 2000.0),  # 2 GHz
            synchronize=lambda: setattr(gpu, "host", max(gpu.host, gpu.gpu)))
        return types.SimpleNamespace(cuda=cuda)


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok   " + what)


def main():
    # Two GEMMs of 100 us and 300 us, round-robin; enqueueing a call costs the host 5 us.
    gpu = FakeGpu(host_us=5.0)
    torch = gpu.torch()
    a = lambda: gpu.enqueue(100.0)  # noqa: E731
    b = lambda: gpu.enqueue(300.0)  # noqa: E731
    (ta, tb), starved = gemm_timing.time_back_to_back(torch, [a, b], warmup=2, iters=50, heat_ms=0)
    check(len(ta) == 50 and len(tb) == 50, "every timed run of each function is returned (50 of 50, over 3 batches)")
    check(all(abs(t - 0.1) < 1e-9 for t in ta) and all(abs(t - 0.3) < 1e-9 for t in tb),
          "runs held behind the spin measure GPU time only (0.100 and 0.300 ms, no host time)")
    check(starved == 0, "no run starts late when the spin outlasts the enqueue")

    # A host slower than the spin (enqueueing a call costs 200 us: 48 runs take far longer than the 5 ms spin).
    slow = FakeGpu(host_us=200.0)
    (t,), starved = gemm_timing.time_back_to_back(slow.torch(), [lambda: slow.enqueue(10.0)], warmup=0, iters=48,
                                                  heat_ms=0)
    check(starved > 0, f"runs that wait for the host are counted as starved ({starved} of 48)")

    # The heat phase runs the functions for about heat_ms of wall time before the warm-ups.
    count = [0]
    fast = FakeGpu(host_us=1.0)
    gemm_timing.time_back_to_back(fast.torch(), [lambda: (count.__setitem__(0, count[0] + 1), fast.enqueue(1.0))],
                                  warmup=0, iters=1, heat_ms=20)
    check(count[0] > 10, f"the heat phase runs the work repeatedly ({count[0]} runs in 20 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

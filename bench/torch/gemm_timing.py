"""How the PyTorch baselines time GEMMs, the way `ubuf bench gemm` and `ubuf bench fp8` time cuBLASLt (EventTimer).

A large GEMM holds an H200 at its power limit, where its clocks fall from 1980 to about 1450 MHz, so how fast a
kernel runs depends on how busy the GPU was just before. Each function therefore runs once (library setup), then all
run round-robin for heat_ms (back to back), then the warm-ups, then the timed runs in batches: a spin kernel holds
the stream while a batch's events and GEMMs are enqueued, so the runs follow each other with no host time inside or
between them. A run that starts more than GAP_MS after the previous one ended means the spin ran out before the
host had enqueued the batch: such runs are counted (starved) and reported, not hidden.
"""
import time

BATCH_RUNS = 48            # runs per held batch, as ubuf's EventTimer.BATCH_RUNS
HOLD_CYCLES = 10_000_000   # spin before a batch: 5-7 ms at 1.4-2 GHz, longer than enqueueing 48 runs takes
HEAT_ROUNDS_AHEAD = 4      # rounds the heat phase enqueues between synchronizations
GAP_MS = 0.02              # a larger gap between two runs means the host fell behind the GPU


def heat(torch, fns, ms):
    """Runs fns round-robin, back to back, for ms of wall time, at most a few rounds ahead of the GPU."""
    end = time.monotonic() + ms / 1000.0
    rounds = 0
    while time.monotonic() < end:
        for fn in fns:
            fn()
        rounds += 1
        if rounds % HEAT_ROUNDS_AHEAD == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()


def time_back_to_back(torch, fns, warmup, iters, heat_ms):
    """([per-run ms] for each of fns, starved runs): fns timed round-robin as the module's docstring says."""
    for fn in fns:
        fn()
    torch.cuda.synchronize()
    heat(torch, fns, heat_ms)
    for _ in range(warmup):
        for fn in fns:
            fn()
    torch.cuda.synchronize()
    times = [[] for _ in fns]
    starved = 0
    per_batch = max(1, BATCH_RUNS // len(fns))
    done = 0
    while done < iters:
        rounds = min(per_batch, iters - done)
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(rounds * len(fns))]
        torch.cuda._sleep(HOLD_CYCLES)
        j = 0
        for _ in range(rounds):
            for fn in fns:
                events[j][0].record()
                fn()
                events[j][1].record()
                j += 1
        events[-1][1].synchronize()
        for j, (start, end) in enumerate(events):
            times[j % len(fns)].append(start.elapsed_time(end))
            if j > 0 and events[j - 1][1].elapsed_time(start) > GAP_MS:
                starved += 1
        done += rounds
    return times, starved

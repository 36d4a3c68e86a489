#!/usr/bin/env python3
"""cuBLASLt (ubuf) against torch.matmul, alternating shape by shape on one GPU.

    python3 scripts/gemm-parity.py --out-dir DIR --rounds 3 --shapes M,K,N ... \
        --java 'bash .gpu/java.sh -cp ".gpu/lib/*" dev.ubuf.cli.UbufCli bench gemm --serve' \
        --torch 'python3 .gpu/torch_gemm_serve.py' [--budget-s 500]

Both sides run as servers for the whole run (`ubuf bench gemm --serve`, bench/torch/torch_gemm_serve.py): each shape
goes to one and then the other, the first side alternating from shape to shape and round to round, so both are
timed in the same power and thermal state (an H200 at its power limit drifts by several percent over tens of
seconds, more than the 1% parity is judged by; whole processes run one after another do not share that state).
Each round writes DIR/gemm-rN.json and DIR/torch-gemm-rN.json in the results format, for combine-rounds.py.
A round is not started when the time left is less than the longest round so far took.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import time


class Server:
    """A serving benchmark: one shape line in, 'RECORD {json}' lines and 'DONE' (or 'ERROR ...') out."""

    def __init__(self, name, command):
        self.name = name
        self.proc = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     bufsize=1)

    def time(self, shape):
        self.proc.stdin.write(shape + "\n")
        self.proc.stdin.flush()
        records = []
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            if line.startswith("RECORD "):
                records.append(json.loads(line[7:]))
            elif line == "DONE":
                return records
            elif line.startswith("ERROR "):
                raise RuntimeError(f"{self.name} refused {shape}: {line[6:]}")
        raise RuntimeError(f"{self.name} exited (code {self.proc.wait()}) while timing {shape}")

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


def write(path, records, device, torch_version=None):
    doc = dict(device=device, date=datetime.date.today().isoformat(),
               commit=os.environ.get("UBUF_COMMIT", "unknown"))
    if torch_version:
        doc["torch"] = torch_version
    doc["records"] = records
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out-dir", required=True)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--shapes", nargs="+", required=True, metavar="M,K,N")
    p.add_argument("--java", required=True, help="command that starts ubuf bench gemm --serve")
    p.add_argument("--torch", required=True, help="command that starts torch_gemm_serve.py")
    p.add_argument("--budget-s", type=float, default=float("inf"))
    a = p.parse_args(argv)
    if a.rounds < 1:
        p.error("--rounds must be >= 1")
    a.shapes = [s[5:] if s.startswith("gemm:") else s for s in a.shapes]
    return a


def main(argv):
    a = parse_args(argv)
    os.makedirs(a.out_dir, exist_ok=True)
    start = time.monotonic()
    java, torch = Server("ubuf", a.java), Server("torch", a.torch)
    longest = 0.0
    try:
        for r in range(1, a.rounds + 1):
            left = a.budget_s - (time.monotonic() - start)
            if r > 1 and longest > left:
                print(f"gemm-parity: stopping before round {r}: {left:.0f} s left, a round takes {longest:.0f} s",
                      flush=True)
                break
            t0 = time.monotonic()
            mine, theirs = [], []
            for i, shape in enumerate(a.shapes):
                java_first = (r + i) % 2 == 0
                for side in ((java, torch) if java_first else (torch, java)):
                    recs = side.time(shape)
                    for rec in recs:
                        rec["parity_position"] = 1 if (side is java) == java_first else 2
                    (mine if side is java else theirs).extend(recs)
                lt = next(x for x in mine if x["method"] == "cublaslt" and f'{x["m"]},{x["k"]},{x["n"]}' == shape)
                pt = next(x for x in theirs if f'{x["m"]},{x["k"]},{x["n"]}' == shape)
                print(f"round {r} {shape}: cublaslt {lt['ms']:.4f} ms, torch {pt['ms']:.4f} ms, "
                      f"ratio {lt['ms'] / pt['ms']:.3f} ({'ubuf' if java_first else 'torch'} first)", flush=True)
            device = next((x["device"] for x in theirs if x.get("device")), "unknown")  # the same GPU for both
            write(os.path.join(a.out_dir, f"gemm-r{r}.json"), mine, device)
            write(os.path.join(a.out_dir, f"torch-gemm-r{r}.json"), theirs, device,
                  torch_version=next((x.get("torch") for x in theirs), "unknown"))
            longest = max(longest, time.monotonic() - t0)
    finally:
        codes = (java.close(), torch.close())
    return 0 if codes == (0, 0) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

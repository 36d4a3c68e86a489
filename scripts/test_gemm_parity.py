"""Checks of gemm-parity.py without a GPU: two fake servers that answer with fixed times.

    python3 scripts/test_gemm_parity.py   (exit 0 when every check passes)
"""
import importlib.util
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("gemm_parity", os.path.join(HERE, "gemm-parity.py"))
parity = importlib.util.module_from_spec(spec)
spec.loader.exec_module(parity)

FAKE = r'''
import json, sys
method, ms, log = sys.argv[1], float(sys.argv[2]), sys.argv[3]
for line in sys.stdin:
    m, k, n = map(int, line.strip().split(","))
    if m == 13:
        print("ERROR no such shape", flush=True); continue
    with open(log, "a") as f: f.write(method + "\n")
    print("RECORD " + json.dumps(dict(op="gemm", method=method, tp=1, dtype="bf16", m=m, n=n, k=k, ms=ms,
                                      timing="sequential", device="Fake GPU", torch="0.0")), flush=True)
    print("DONE", flush=True)
'''


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok   " + what)


def main():
    with tempfile.TemporaryDirectory() as d:
        fake = os.path.join(d, "fake.py")
        log = os.path.join(d, "order.txt")
        with open(fake, "w") as f:
            f.write(FAKE)
        out = os.path.join(d, "out")
        rc = parity.main(["--out-dir", out, "--rounds", "2", "--shapes", "8,16,32", "gemm:64,16,8",
                          "--java", f"{sys.executable} {fake} cublaslt 2.0 {log}",
                          "--torch", f"{sys.executable} {fake} torch 1.0 {log}"])
        check(rc == 0, "both servers exit 0 when their input ends")
        names = sorted(os.listdir(out))
        check(names == ["gemm-r1.json", "gemm-r2.json", "torch-gemm-r1.json", "torch-gemm-r2.json"],
              f"one ubuf and one torch results file per round ({names})")
        r1 = json.load(open(os.path.join(out, "gemm-r1.json")))
        t1 = json.load(open(os.path.join(out, "torch-gemm-r1.json")))
        check([(x["m"], x["k"], x["n"]) for x in r1["records"]] == [(8, 16, 32), (64, 16, 8)],
              "every shape is timed by ubuf, in order")
        check("torch" in t1 and "torch" not in r1, "only the torch file carries the torch marker combine-rounds reads")
        check(r1["device"] == t1["device"] == "Fake GPU", "both files name the GPU the torch side reports")
        order = open(log).read().split()
        check(order == ["torch", "cublaslt", "cublaslt", "torch", "cublaslt", "torch", "torch", "cublaslt"],
              f"the side that goes first alternates from shape to shape and round to round ({order})")
        positions = [x["parity_position"] for x in r1["records"]]
        check(positions == [2, 1], f"each record says whether its side went first ({positions})")
        try:
            parity.main(["--out-dir", out, "--rounds", "1", "--shapes", "13,1,1",
                         "--java", f"{sys.executable} {fake} cublaslt 2.0 {log}",
                         "--torch", f"{sys.executable} {fake} torch 1.0 {log}"])
            check(False, "a refused shape stops the run")
        except RuntimeError as e:
            check("refused 13,1,1: no such shape" in str(e), "a refused shape stops the run with the server's reason")
    return 0


if __name__ == "__main__":
    sys.exit(main())

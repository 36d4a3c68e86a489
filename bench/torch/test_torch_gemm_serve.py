"""Checks of torch_gemm_serve.py's input handling without a GPU or PyTorch.

    python3 bench/torch/test_torch_gemm_serve.py   (exit 0 when every check passes)
"""
import contextlib
import io
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_gemm_serve  # noqa: E402


def refused(argv):
    """The argparse error text of argv, or None when it parses."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            torch_gemm_serve.parse_args(argv)
        except SystemExit:
            return err.getvalue()
    return None


def check(name, ok):
    print(("ok   " if ok else "FAIL ") + name)
    return ok


def main():
    results = []
    a = torch_gemm_serve.parse_args(["--fp8", "split"])
    results.append(check("--fp8 split parses with the default bf16", a.fp8 == "split" and a.dtype == "bf16"))
    results.append(check("no --fp8 means torch.matmul", torch_gemm_serve.parse_args([]).fp8 is None))
    msg = refused(["--fp8", "fast", "--dtype", "fp16"])
    results.append(check("--fp8 with --dtype fp16 is refused", msg is not None and "--dtype must be bf16" in msg))
    msg = refused(["--fp8", "slow"])
    results.append(check("--fp8 takes split or fast only", msg is not None and "invalid choice" in msg))
    results.append(check("a bf16 shape need not be a multiple of 16",
                         torch_gemm_serve.parse_shape("gemm:100,36,20\n") == (100, 36, 20)))
    results.append(check("an FP8 shape of multiples of 16 parses",
                         torch_gemm_serve.parse_shape("1024,4096,3584", fp8=True) == (1024, 4096, 3584)))
    try:
        torch_gemm_serve.parse_shape("1024,4096,4100", fp8=True)
        results.append(check("an FP8 shape off 16 is refused", False))
    except ValueError as e:
        results.append(check("an FP8 shape off 16 is refused", "multiple of 16" in str(e)))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""GPU check of ubuf_kernels.fatbin, for a machine with a GPU, PyTorch and NumPy (not part of the Maven build).

    python3 kernels/src/test/gpu/check_kernels.py <path/to/ubuf_kernels.fatbin> [results.json]

Loads the fatbin with cuModuleLoadData and launches every kernel through cuLaunchKernel with a kernelParams array
of pointers to the argument values (what JCuda's Pointer.to(...) builds), on strided views with aligned and
misaligned pointers, several launch geometries, and guard regions around every output. Results must be bit-exact
against PyTorch / NumPy references (fp32 adds in the same order, round-to-nearest-even stores). With two GPUs it
also sums sources on a peer GPU and copies into a peer GPU. Ends with a few bandwidth figures.
"""
import ctypes
import json
import sys

import numpy as np
import torch

cuda = ctypes.CDLL("libcuda.so.1")
cuda.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
cuda.cuModuleGetFunction.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p]
cuda.cuModuleLoadData.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
cuda.cuFuncGetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
cuda.cuCtxEnablePeerAccess.argtypes = [ctypes.c_void_p, ctypes.c_uint]
cuda.cuDevicePrimaryCtxRetain.argtypes = [ctypes.c_void_p, ctypes.c_int]

FAILS = []
CHECKS = [0]


def ck(rc, what):
    if rc != 0:
        name = ctypes.c_char_p()
        cuda.cuGetErrorName(rc, ctypes.byref(name))
        raise RuntimeError(f"{what} failed: {rc} {name.value}")


def expect(ok, msg):
    CHECKS[0] += 1
    if not ok:
        FAILS.append(msg)
        if len(FAILS) <= 30:
            print("FAIL:", msg, flush=True)


torch.cuda.set_device(0)
torch.zeros(1, device="cuda:0")  # primary context current on this thread
image = open(sys.argv[1], "rb").read()
image_buf = ctypes.create_string_buffer(image, len(image))
module = ctypes.c_void_p()
ck(cuda.cuModuleLoadData(ctypes.byref(module), image_buf), "cuModuleLoadData")

FUNCS = {}


def fn(name):
    if name not in FUNCS:
        f = ctypes.c_void_p()
        ck(cuda.cuModuleGetFunction(ctypes.byref(f), module, name.encode()), f"cuModuleGetFunction({name})")
        FUNCS[name] = f
    return FUNCS[name]


def launch(name, grid, block, *args):
    ptrs = (ctypes.c_void_p * len(args))(*[ctypes.cast(ctypes.pointer(a), ctypes.c_void_p) for a in args])
    ck(cuda.cuLaunchKernel(fn(name), grid, 1, 1, block, 1, 1, 0, None, ptrs, None), f"launch {name}")


P = ctypes.c_uint64  # a device pointer
LL = ctypes.c_longlong


def sum_sources(ptrs):
    arr = (ctypes.c_longlong * 8)()  # what Pointer.to(new long[8]) passes: 64 bytes
    for j, p in enumerate(ptrs):
        arr[j] = p
    return arr


TYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
BITS = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}
GEOMS = [(1, 256), (3, 100), (1024, 512)]
# rows, cols, srcLd, dstLd, srcOff, dstOff (elements)
SHAPES = [(64, 256, 256, 256, 0, 0), (33, 136, 200, 144, 0, 0), (17, 129, 131, 130, 0, 0),
          (16, 64, 64, 64, 1, 0), (16, 64, 64, 64, 0, 2), (1, 1, 1, 1, 0, 0), (0, 5, 5, 5, 0, 0)]


def bits(t):
    return t.contiguous().view(BITS[t.dtype])


def same_bits(a, b):
    return torch.equal(bits(a), bits(b))


class Mat:
    """A rows x cols view with leading dimension ld at element offset off of a buffer, guard-filled around it."""

    def __init__(self, dtype, rows, cols, ld, off, device="cuda:0", fill=None):
        self.n = off + max(rows, 1) * ld + 64
        self.buf = torch.empty(self.n, dtype=dtype, device=device)
        self.buf.view(BITS[dtype]).fill_(0x5a5a if dtype != torch.float32 else 0x5a5a5a5a)
        self.view = torch.as_strided(self.buf, (rows, cols), (ld, 1), off)
        if fill is not None:
            self.view.copy_(fill)
        self.guard = self.buf.clone()
        self.mask = torch.ones(self.n, dtype=torch.bool, device=device)
        torch.as_strided(self.mask, (rows, cols), (ld, 1), off).fill_(False)

    def ptr(self):
        return self.view.data_ptr()

    def guard_ok(self):
        return torch.equal(bits(self.buf)[self.mask], bits(self.guard)[self.mask])


def rnd(rows, cols, dtype, device="cuda:0"):
    return (torch.rand(rows, cols, device=device) * 4 - 2).to(dtype)


def check_sum(device_of_src=lambda j: "cuda:0"):
    combos = [("ubuf_sum_f32", "f32", "f32"), ("ubuf_sum_f16", "f16", "f16"), ("ubuf_sum_bf16", "bf16", "bf16"),
              ("ubuf_sum_f32_to_f16", "f32", "f16"), ("ubuf_sum_f32_to_bf16", "f32", "bf16")]
    for name, s, d in combos:
        S, D = TYPES[s], TYPES[d]
        for (rows, cols, sld, dld, soff, doff) in SHAPES:
            for k in (1, 2, 3, 8):
                for acc in (0, 1):
                    for grid, block in GEOMS:
                        srcs = [Mat(S, rows, cols, sld, soff, device_of_src(j), rnd(rows, cols, S, device_of_src(j)))
                                for j in range(k)]
                        dst = Mat(D, rows, cols, dld, doff, "cuda:0", rnd(rows, cols, D))
                        before = dst.view.clone()
                        ref = srcs[0].view.float().to("cuda:0")
                        for m in srcs[1:]:
                            ref = ref + m.view.float().to("cuda:0")
                        if acc:
                            ref = before.float() + ref
                        ref = ref.to(D)
                        launch(name, grid, block, sum_sources([m.ptr() for m in srcs]), ctypes.c_int(k), LL(rows),
                               LL(cols), LL(sld), P(dst.ptr()), LL(dld), ctypes.c_int(acc))
                        torch.cuda.synchronize()
                        tag = f"{name} rows={rows} cols={cols} ld={sld}/{dld} off={soff}/{doff} k={k} acc={acc} grid={grid}x{block}"
                        expect(same_bits(dst.view, ref), tag + ": values")
                        expect(dst.guard_ok(), tag + ": wrote outside the view")
    # one misaligned source among aligned ones (scalar path), and dst aliasing source 0
    for name, s, d in combos:
        S, D = TYPES[s], TYPES[d]
        rows, cols, ld = 20, 64, 64
        srcs = [Mat(S, rows, cols, ld, 0, fill=rnd(rows, cols, S)) for _ in range(3)]
        odd = Mat(S, rows, cols, ld, 1, fill=rnd(rows, cols, S))
        srcs.append(odd)
        dst = Mat(D, rows, cols, ld, 0, fill=rnd(rows, cols, D))
        ref = (((srcs[0].view.float() + srcs[1].view.float()) + srcs[2].view.float()) + odd.view.float()).to(D)
        launch(name, 7, 128, sum_sources([m.ptr() for m in srcs]), ctypes.c_int(4), LL(rows), LL(cols), LL(ld),
               P(dst.ptr()), LL(ld), ctypes.c_int(0))
        torch.cuda.synchronize()
        expect(same_bits(dst.view, ref) and dst.guard_ok(), f"{name}: one misaligned source")
        if S == D:
            a = Mat(S, rows, cols, ld, 0, fill=rnd(rows, cols, S))
            b = Mat(S, rows, cols, ld, 0, fill=rnd(rows, cols, S))
            ref = (a.view.float() + b.view.float() + a.view.float()).to(D)
            launch(name, 5, 256, sum_sources([a.ptr(), b.ptr(), a.ptr()]), ctypes.c_int(3), LL(rows), LL(cols),
                   LL(ld), P(a.ptr()), LL(ld), ctypes.c_int(0))
            torch.cuda.synchronize()
            expect(same_bits(a.view, ref), f"{name}: dst aliasing source 0 (in place)")


def check_cast():
    for d in ("f16", "bf16"):
        D = TYPES[d]
        name = "ubuf_cast_f32_to_" + d
        for (rows, cols, sld, dld, soff, doff) in SHAPES:
            for grid, block in GEOMS:
                src = Mat(torch.float32, rows, cols, sld, soff, fill=torch.randn(rows, cols, device="cuda:0") * 100)
                dst = Mat(D, rows, cols, dld, doff)
                launch(name, grid, block, P(src.ptr()), LL(rows), LL(cols), LL(sld), P(dst.ptr()), LL(dld))
                torch.cuda.synchronize()
                tag = f"{name} rows={rows} cols={cols} ld={sld}/{dld} off={soff}/{doff} grid={grid}x{block}"
                expect(same_bits(dst.view, src.view.to(D)), tag)
                expect(dst.guard_ok(), tag + ": guard")
        special = torch.tensor([[0.0, -0.0, 1e-8, -1e-8, 65504.0, 65520.0, 1e5, -1e5, float("inf"), float("-inf"),
                                 3.0e38, 1.00390625, 1.01171875, 5.96e-8, 1e-40, 2.5]], device="cuda:0")
        dst = torch.empty(1, 16, dtype=D, device="cuda:0")
        launch(name, 1, 32, P(special.data_ptr()), LL(1), LL(16), LL(16), P(dst.data_ptr()), LL(16))
        nan_src = torch.full((1, 8), float("nan"), device="cuda:0")
        nan_dst = torch.empty(1, 8, dtype=D, device="cuda:0")
        launch(name, 1, 32, P(nan_src.data_ptr()), LL(1), LL(8), LL(8), P(nan_dst.data_ptr()), LL(8))
        torch.cuda.synchronize()
        expect(same_bits(dst, special.to(D)), f"{name}: special values {dst.tolist()} vs {special.to(D).tolist()}")
        expect(bool(torch.isnan(nan_dst.float()).all()), f"{name}: NaN stays NaN")


def check_bias():
    for t, T in TYPES.items():
        name = "ubuf_add_bias_" + t
        for (rows, cols, _, ld, _, off) in SHAPES:
            for boff in (0, 1):
                for grid, block in GEOMS:
                    out = Mat(T, rows, cols, ld, off, fill=rnd(rows, cols, T))
                    bias_buf = rnd(1, cols + 1, T).flatten()
                    bias = bias_buf[boff:boff + cols]
                    ref = (out.view.float() + bias.float()[None, :]).to(T)
                    launch(name, grid, block, P(out.ptr()), LL(rows), LL(cols), LL(ld), P(bias.data_ptr()))
                    torch.cuda.synchronize()
                    tag = f"{name} rows={rows} cols={cols} ld={ld} off={off} biasOff={boff} grid={grid}x{block}"
                    expect(same_bits(out.view, ref), tag)
                    expect(out.guard_ok(), tag + ": guard")


def check_fill():
    for name, size, pattern in (("ubuf_fill_u8", 1, 0xab), ("ubuf_fill_u16", 2, 0x7e00), ("ubuf_fill_u32", 4, 0x7fc00000)):
        for n in (0, 1, 7, 8, 9, 15, 16, 17, 1000, 12345):
            for off in range(0, 17, size):
                for grid, block in GEOMS:
                    buf = torch.full((off + n + 64,), 0x11, dtype=torch.uint8, device="cuda:0")
                    launch(name, grid, block, P(buf.data_ptr() + off), LL(n // size if size > 1 else n),
                           ctypes.c_uint(pattern | 0xdead0000 if size < 4 else pattern))
                    torch.cuda.synchronize()
                    cnt = n // size if size > 1 else n
                    want = np.frombuffer(np.array([pattern], dtype=np.uint32).tobytes()[:size] * cnt, dtype=np.uint8)
                    got = buf.cpu().numpy()
                    tag = f"{name} n={cnt} off={off} grid={grid}x{block}"
                    expect(np.array_equal(got[off:off + cnt * size], want), tag)
                    expect((got[:off] == 0x11).all() and (got[off + cnt * size:] == 0x11).all(), tag + ": guard")


def ref_random(seed, rows, cols, scale, r0=0, c0=0):
    with np.errstate(over="ignore"):
        M = np.uint64
        G = M(0x9E3779B97F4A7C15)

        def mix(z):
            z = (z ^ (z >> M(30))) * M(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> M(27))) * M(0x94D049BB133111EB)
            return z ^ (z >> M(31))

        r = np.arange(r0, r0 + rows, dtype=np.uint64)[:, None]
        c = np.arange(c0, c0 + cols, dtype=np.uint64)[None, :]
        key = mix(M(seed) + G * (r + M(1)))
        h = mix(key + G * (c + M(1)))
        m = (h >> M(40)).astype(np.int64) - (1 << 23)
        unit = m.astype(np.float32) * np.float32(2.0 ** -23)
        return (unit * np.float32(scale)).astype(np.float32)


def check_random():
    for t, T in TYPES.items():
        name = "ubuf_fill_random_" + t
        for rows, cols, ld, off in ((37, 104, 104, 0), (37, 96, 120, 0), (37, 99, 101, 0), (9, 64, 64, 3), (1, 1, 1, 0)):
            for grid, block in GEOMS:
                for seed, scale in ((12345, 1.0), (0xFFFFFFFFFFFFFFFF, 0.02), (7, 300.0)):
                    dst = Mat(T, rows, cols, ld, off)
                    launch(name, grid, block, P(dst.ptr()), LL(rows), LL(cols), LL(ld), ctypes.c_ulonglong(seed),
                           ctypes.c_float(scale))
                    torch.cuda.synchronize()
                    ref = torch.from_numpy(ref_random(seed, rows, cols, scale)).to("cuda:0").to(T)
                    tag = f"{name} rows={rows} cols={cols} ld={ld} off={off} seed={seed:#x} scale={scale} grid={grid}x{block}"
                    expect(same_bits(dst.view, ref), tag)
                    expect(dst.guard_ok(), tag + ": guard")
    # The hand-computed values of DeviceRandomTest (that are reachable with a small matrix).
    table = [(0, 0, 0, 1.0, 0x3e9c1b74, 0x34e1, 0x3e9c), (42, 3, 7, 0.5, 0xbc53f2c0, 0xa2a0, 0xbc54),
             (0xFFFFFFFFFFFFFFFF, 1, 0, 0.001, 0xb6bdcdd4, 0x805f, 0xb6be)]
    for seed, row, col, scale, b32, b16, bb16 in table:
        for t, want in (("f32", b32), ("f16", b16), ("bf16", bb16)):
            T = TYPES[t]
            dst = torch.zeros(4, 8, dtype=T, device="cuda:0")
            launch("ubuf_fill_random_" + t, 2, 64, P(dst.data_ptr()), LL(4), LL(8), LL(8), ctypes.c_ulonglong(seed),
                   ctypes.c_float(scale))
            torch.cuda.synchronize()
            got = int(bits(dst)[row, col].item()) & (0xffffffff if t == "f32" else 0xffff)
            expect(got == want, f"fill_random_{t} seed={seed:#x} ({row},{col}) scale={scale}: {got:#x} != {want:#x}")


def check_copy(dst_device="cuda:0"):
    for n in (0, 1, 15, 16, 17, 100, 4096, 1000003):
        for soff, doff in ((0, 0), (1, 1), (3, 3), (0, 1), (5, 2), (8, 8)):
            for grid, block in GEOMS:
                src = torch.randint(0, 256, (soff + n + 32,), dtype=torch.uint8, device="cuda:0")
                dst = torch.full((doff + n + 32,), 0x11, dtype=torch.uint8, device=dst_device)
                launch("ubuf_copy_bytes", grid, block, P(dst.data_ptr() + doff), P(src.data_ptr() + soff), LL(n))
                torch.cuda.synchronize()
                got = dst.cpu()
                tag = f"ubuf_copy_bytes n={n} off={soff}/{doff} dst={dst_device} grid={grid}x{block}"
                expect(torch.equal(got[doff:doff + n], src.cpu()[soff:soff + n]), tag)
                expect(bool((got[:doff] == 0x11).all()) and bool((got[doff + n:] == 0x11).all()), tag + ": guard")


def time_ms(f, reps=10):
    f()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(reps):
        f()
    b.record()
    torch.cuda.synchronize()
    return a.elapsed_time(b) / reps


def bandwidth(results):
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    grid = sms * 8
    n = 1 << 30
    src = torch.empty(n, dtype=torch.uint8, device="cuda:0")
    dst = torch.empty(n, dtype=torch.uint8, device="cuda:0")
    ms = time_ms(lambda: launch("ubuf_copy_bytes", grid, 256, P(dst.data_ptr()), P(src.data_ptr()), LL(n)))
    ce = time_ms(lambda: dst.copy_(src))
    results["copy_local_GBps_rw"] = 2 * n / ms / 1e6
    results["torch_copy_local_GBps_rw"] = 2 * n / ce / 1e6
    for k in (1, 2, 4, 8):
        rows, cols = 8192, 8192 // 2  # bf16 64 MiB per source
        srcs = [torch.empty(rows, cols, dtype=torch.bfloat16, device="cuda:0").uniform_() for _ in range(k)]
        out = torch.empty(rows, cols, dtype=torch.bfloat16, device="cuda:0")
        ms = time_ms(lambda: launch("ubuf_sum_bf16", grid, 256, sum_sources([s.data_ptr() for s in srcs]),
                                    ctypes.c_int(k), LL(rows), LL(cols), LL(cols), P(out.data_ptr()), LL(cols),
                                    ctypes.c_int(0)))
        results[f"sum_bf16_k{k}_GBps"] = (k + 1) * out.numel() * 2 / ms / 1e6
    for k in (1, 2, 4):
        rows, cols = 8192, 4096  # fp32 128 MiB per source
        srcs = [torch.empty(rows, cols, dtype=torch.float32, device="cuda:0").uniform_() for _ in range(k)]
        out = torch.empty(rows, cols, dtype=torch.bfloat16, device="cuda:0")
        ms = time_ms(lambda: launch("ubuf_sum_f32_to_bf16", grid, 256, sum_sources([s.data_ptr() for s in srcs]),
                                    ctypes.c_int(k), LL(rows), LL(cols), LL(cols), P(out.data_ptr()), LL(cols),
                                    ctypes.c_int(0)))
        results[f"sum_f32_to_bf16_k{k}_GBps"] = (4 * k + 2) * out.numel() / ms / 1e6
    ms = time_ms(lambda: launch("ubuf_cast_f32_to_bf16", grid, 256, P(srcs[0].data_ptr()), LL(rows), LL(cols),
                                LL(cols), P(out.data_ptr()), LL(cols)))
    results["cast_f32_to_bf16_GBps"] = 6 * out.numel() / ms / 1e6
    rows, cols = 8192, 8192
    out = torch.empty(rows, cols, dtype=torch.bfloat16, device="cuda:0")
    ms = time_ms(lambda: launch("ubuf_fill_random_bf16", grid, 256, P(out.data_ptr()), LL(rows), LL(cols), LL(cols),
                                ctypes.c_ulonglong(1), ctypes.c_float(1.0)))
    results["fill_random_bf16_GBps"] = out.numel() * 2 / ms / 1e6
    if torch.cuda.device_count() > 1:
        peer = torch.empty(n, dtype=torch.uint8, device="cuda:1")
        ms = time_ms(lambda: launch("ubuf_copy_bytes", grid, 256, P(peer.data_ptr()), P(src.data_ptr()), LL(n)))
        ce = time_ms(lambda: peer.copy_(src))
        results["copy_peer_push_GBps"] = n / ms / 1e6
        results["torch_copy_peer_GBps"] = n / ce / 1e6
        srcs = [torch.empty(8192, 4096, dtype=torch.bfloat16, device="cuda:1").uniform_() for _ in range(2)]
        outp = torch.empty(8192, 4096, dtype=torch.bfloat16, device="cuda:0")
        ms = time_ms(lambda: launch("ubuf_sum_bf16", grid, 256, sum_sources([s.data_ptr() for s in srcs]),
                                    ctypes.c_int(2), LL(8192), LL(4096), LL(4096), P(outp.data_ptr()), LL(4096),
                                    ctypes.c_int(0)))
        results["sum_bf16_k2_peer_sources_GBps_read"] = 2 * outp.numel() * 2 / ms / 1e6


def main():
    results = {"device": torch.cuda.get_device_name(0), "gpus": torch.cuda.device_count()}
    attrs = {}
    for name in sorted(open(sys.argv[1].replace("ubuf_kernels.fatbin", "kernels.properties")).read()
                       .split("kernels=")[1].split("\n")[0].split(",")):
        v = ctypes.c_int()
        ck(cuda.cuFuncGetAttribute(ctypes.byref(v), 0, fn(name)), "attr")
        regs = ctypes.c_int()
        ck(cuda.cuFuncGetAttribute(ctypes.byref(regs), 4, fn(name)), "attr")
        local = ctypes.c_int()
        ck(cuda.cuFuncGetAttribute(ctypes.byref(local), 3, fn(name)), "attr")
        attrs[name] = {"maxThreads": v.value, "regs": regs.value, "localBytes": local.value}
        expect(v.value == 512 and local.value == 0, f"{name}: {attrs[name]}")
    results["functions"] = attrs
    big = torch.empty(64, device="cuda:0")
    ptrs = (ctypes.c_void_p * 3)(*[ctypes.cast(ctypes.pointer(a), ctypes.c_void_p)
                                  for a in (P(big.data_ptr()), LL(64), ctypes.c_uint(0))])
    rc = cuda.cuLaunchKernel(fn("ubuf_fill_u32"), 1, 1, 1, 1024, 1, 1, 0, None, ptrs, None)
    expect(rc == 1, f"a 1024-thread block must be refused with CUDA_ERROR_INVALID_VALUE (1), got {rc}")
    torch.cuda.synchronize()
    for check in (check_sum, check_cast, check_bias, check_fill, check_random, check_copy):
        before = len(FAILS)
        check()
        print(f"{check.__name__}: {'ok' if len(FAILS) == before else 'FAILED'}", flush=True)
    if torch.cuda.device_count() > 1:
        ctx1 = ctypes.c_void_p()
        ck(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx1), 1), "cuDevicePrimaryCtxRetain")
        torch.zeros(1, device="cuda:1")
        torch.cuda.set_device(0)
        rc = cuda.cuCtxEnablePeerAccess(ctx1, 0)
        if rc not in (0, 704):
            ck(rc, "cuCtxEnablePeerAccess")
        before = len(FAILS)
        check_sum(lambda j: "cuda:1" if j % 2 == 1 else "cuda:0")
        check_copy("cuda:1")
        print(f"peer sum/copy: {'ok' if len(FAILS) == before else 'FAILED'}", flush=True)
    bandwidth(results)
    results["checks"] = CHECKS[0]
    results["failures"] = FAILS[:100]
    print(json.dumps({k: v for k, v in results.items() if k != "functions"}, indent=1))
    print("registers:", {k: v["regs"] for k, v in attrs.items()})
    if len(sys.argv) > 2:
        json.dump(results, open(sys.argv[2], "w"), indent=1)
    print(f"{CHECKS[0] - len(FAILS)} passed, {len(FAILS)} failed")
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()

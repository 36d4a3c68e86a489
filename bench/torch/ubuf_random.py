"""The very matrices `ubuf bench gemm` multiplies, made with PyTorch on the GPU, so GEMM parity compares the same
inputs and not only the same distribution (a GEMM's power draw, and so its clocks at the power limit, depends on the
bits it moves).

ubuf's device kernel (kernels/src/main/cuda/ubuf_fill.cu; host reference dev.ubuf.kernels.DeviceRandom) makes element
(row, col) of the matrix of `seed` and `scale` as:
    row_key = mix(seed + (row + 1) * GAMMA);  h = mix(row_key + (col + 1) * GAMMA)      (uint64, wrapping)
    mix(z): z = (z ^ z >>> 30) * C1;  z = (z ^ z >>> 27) * C2;  z ^ z >>> 31
    m = (h >>> 40) - 2^23;  value = fp32(m * 2^-23) * fp32 scale (one rounding), then rounded to the element type.
Here the same runs on int64 tensors: two's-complement addition and multiplication wrap like uint64, and a logical
shift is an arithmetic one masked. `ubuf bench gemm` fills A [M, K] with seed and scale 1, B [K, N] with seed + 1 and
scale `1f / (float) Math.sqrt(K)` (java_inverse_sqrt).
"""
import math
import struct

GAMMA = 0x9E3779B97F4A7C15
C1 = 0xBF58476D1CE4E5B9
C2 = 0x94D049BB133111EB
MASK64 = (1 << 64) - 1
CHUNK_ELEMENTS = 1 << 26  # rows are made in slices of at most this many elements (int64 temporaries: 512 MiB each)


def signed64(x):
    """x mod 2^64 as a two's-complement int64 value."""
    x &= MASK64
    return x - (1 << 64) if x >= 1 << 63 else x


def _lsr(z, s):
    """Logical right shift of int64 values (arrays or tensors) by s bits."""
    return (z >> s) & ((1 << (64 - s)) - 1)


def mix(z):
    """splitmix64's output function on int64 arrays or tensors (wrapping arithmetic)."""
    z = (z ^ _lsr(z, 30)) * signed64(C1)
    z = (z ^ _lsr(z, 27)) * signed64(C2)
    return z ^ _lsr(z, 31)


def centred_top_bits(row_keys, cols):
    """m = (h >>> 40) - 2^23 of every element, for int64 row keys [R, 1] and column numbers [1, C] (col + 1)."""
    h = mix(row_keys + cols * signed64(GAMMA))
    return _lsr(h, 40) - (1 << 23)


def java_inverse_sqrt(k):
    """`1f / (float) Math.sqrt(k)` as Java computes it: sqrt in double, rounded to float, then a float division."""
    f32 = lambda x: struct.unpack("<f", struct.pack("<f", x))[0]  # noqa: E731 (round to nearest float)
    return f32(1.0 / f32(math.sqrt(k)))


def uniform(torch, rows, cols, seed, scale, dtype, device):
    """The [rows, cols] matrix ubuf_fill_random makes from seed and scale, as a dtype tensor on device."""
    out = torch.empty(rows, cols, device=device, dtype=dtype)
    scale32 = torch.tensor(scale, dtype=torch.float32).item()  # the float32 value, exactly
    step = max(1, CHUNK_ELEMENTS // max(cols, 1))
    col_numbers = torch.arange(1, cols + 1, device=device, dtype=torch.int64).unsqueeze(0)
    for r0 in range(0, rows, step):
        r1 = min(rows, r0 + step)
        row_numbers = torch.arange(r0 + 1, r1 + 1, device=device, dtype=torch.int64).unsqueeze(1)
        keys = mix(row_numbers * signed64(GAMMA) + signed64(seed))
        m = centred_top_bits(keys, col_numbers)
        unit = m.to(torch.float32) * (2.0 ** -23)  # exact: |m| <= 2^23
        out[r0:r1] = (unit * scale32).to(dtype)  # one fp32 multiply, then one rounding to the dtype
    return out

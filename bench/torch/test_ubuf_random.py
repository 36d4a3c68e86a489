"""Checks of ubuf_random.py without a GPU: its int64 arithmetic gives, element for element, the values ubuf's device
kernel makes (dev.ubuf.kernels.DeviceRandom's values, copied below), on int64 values as PyTorch's tensors hold them.

    python3 bench/torch/test_ubuf_random.py   (exit 0 when every check passes)
"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ubuf_random  # noqa: E402

# (seed, row, col) -> (hash as unsigned, fp32 bits of the value at scale 1, bf16 bits at scale 1f/(float)sqrt(5120)),
# printed by dev.ubuf.kernels.DeviceRandom.hash, uniform and bits (2026-11-23).
JAVA = {
    (20261123, 0, 0): (14058319290206128405, 1057370716, 15344),
    (20261123, 0, 1): (11603167572435318890, 1048845036, 15212),
    (20261123, 5, 7): (16819613659674125576, 1062393482, 15421),
    (20261124, 4095, 8191): (14080057083584380885, 1057410258, 15345),
    (-1, 123456, 98765): (10812227304036174787, 1043359224, 15134),
    (0, 0, 0): (12035550249420947055, 1050418036, 15244),
}
# K -> fp32 bits of Java's 1f / (float) Math.sqrt(K).
JAVA_INVERSE_SQRT = {2048: 1018496243, 3584: 1015600759, 4096: 1015021568, 5120: 1013250350, 14336: 1007212151,
                     27648: 1002770851}


def reference_hash(seed, row, col):
    """h of element (row, col) with unbounded Python integers masked to 64 bits: a reference that shares no code
    with ubuf_random's int64 arithmetic."""
    def m(z):
        z = ((z ^ (z >> 30)) * ubuf_random.C1) & ubuf_random.MASK64
        z = ((z ^ (z >> 27)) * ubuf_random.C2) & ubuf_random.MASK64
        return z ^ (z >> 31)
    key = m((seed + (row + 1) * ubuf_random.GAMMA) & ubuf_random.MASK64)
    return m((key + (col + 1) * ubuf_random.GAMMA) & ubuf_random.MASK64)


class Int64:
    """A value as an int64 tensor element holds it: two's complement, wrapping + and *, arithmetic >>, & and ^."""

    def __init__(self, v):
        self.v = ubuf_random.signed64(v)

    def _wrap(self, other):
        return other.v if isinstance(other, Int64) else other

    def __add__(self, o):
        return Int64(self.v + self._wrap(o))

    def __sub__(self, o):
        return Int64(self.v - self._wrap(o))

    def __mul__(self, o):
        return Int64(self.v * self._wrap(o))

    def __xor__(self, o):
        return Int64(self.v ^ self._wrap(o))

    def __and__(self, o):
        return Int64(self.v & self._wrap(o))

    def __rshift__(self, s):
        return Int64(self.v >> s)  # Python's >> on a negative int is arithmetic, as int64 tensors' is


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def bf16_bits(x):
    """Round-to-nearest-even fp32 -> bf16 (finite values)."""
    b = f32_bits(x)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok   " + what)


def main():
    for (seed, row, col), (h, unit_bits, bf16) in JAVA.items():
        check(reference_hash(seed & ubuf_random.MASK64, row, col) == h,
              f"the Python reference hashes ({seed}, {row}, {col}) as DeviceRandom.hash does")
        key = ubuf_random.mix(Int64(row + 1) * ubuf_random.signed64(ubuf_random.GAMMA) + ubuf_random.signed64(seed))
        m = ubuf_random.centred_top_bits(key, Int64(col + 1)).v
        check(m == (h >> 40) - (1 << 23), f"int64 arithmetic gives the same top 24 bits ({seed}, {row}, {col})")
        unit = f32(m * 2.0 ** -23)
        check(f32_bits(unit) == unit_bits, f"and the same fp32 value at scale 1 ({seed}, {row}, {col})")
        scaled = f32(unit * ubuf_random.java_inverse_sqrt(5120))
        check(bf16_bits(scaled) == bf16, f"and the same bf16 at scale 1/sqrt(5120) ({seed}, {row}, {col})")
    for k, bits in JAVA_INVERSE_SQRT.items():
        check(f32_bits(ubuf_random.java_inverse_sqrt(k)) == bits, f"1f / (float) Math.sqrt({k}) as Java rounds it")
    # A grid of neighbours, against the independent reference, with seeds near the int64 edges.
    bad = 0
    for seed in (0, 1, 20261123, (1 << 63) - 1, -(1 << 63), -1):
        for row in (0, 1, 2, 1000, 65535):
            key = ubuf_random.mix(Int64(row + 1) * ubuf_random.signed64(ubuf_random.GAMMA)
                                  + ubuf_random.signed64(seed))
            for col in (0, 1, 7, 8, 4095, 28671):
                h = reference_hash(seed & ubuf_random.MASK64, row, col)
                bad += ubuf_random.centred_top_bits(key, Int64(col + 1)).v != (h >> 40) - (1 << 23)
    check(bad == 0, f"180 elements of six seeds, int64 arithmetic against the reference ({bad} differ)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""make_quant_golden.py - blocks of every quantized type we read, with the float32 values
llama.cpp's gguf-py dequantizes them to, for tests/test_kernels_quant.c.

The values come from gguf-py's quants.py: llama.cpp's own NumPy implementation of each type's
dequantization, written apart from ggml's C (ggml-quants.c) and from ours, so our to_float must
give them bit for bit. gguf-py is not part of this repository: pass the path of llama.cpp's
gguf-py folder (the one holding the gguf package) as the argument or in GGUF_PY, and run it with
a Python that has NumPy (Debian: apt-get install python3-numpy, /usr/bin/python3):
    /usr/bin/python3 tests/golden/make_quant_golden.py /path/to/llama.cpp/gguf-py
The output, tests/golden/quant_blocks.bin, is committed, so the tests need no Python.

Per type, six blocks: three with random bytes and ordinary scales, one all zero, one with every
quant and sub-block scale field at its largest (0xFF bytes) and the largest half scales, and one
with random quants, the extreme halves (-65504, the smallest subnormal, -0) as scales.
The file is little-endian records: uint32 type id, uint32 blocks, uint32 bytes a block, the
blocks' bytes, then their elements' float32 values.
"""
import os
import struct
import sys

import numpy as np

# type id -> (name in gguf-py, bytes a block, elements a block, byte offsets of fp16 fields)
TYPES = {
    2: ("Q4_0", 18, 32, [0]),
    3: ("Q4_1", 20, 32, [0, 2]),
    6: ("Q5_0", 22, 32, [0]),
    7: ("Q5_1", 24, 32, [0, 2]),
    8: ("Q8_0", 34, 32, [0]),
    10: ("Q2_K", 84, 256, [80, 82]),
    11: ("Q3_K", 110, 256, [108]),
    12: ("Q4_K", 144, 256, [0, 2]),
    13: ("Q5_K", 176, 256, [0, 2]),
    14: ("Q6_K", 210, 256, [208]),
    20: ("IQ4_NL", 18, 32, [0]),
    23: ("IQ4_XS", 136, 256, [0]),
}
EXTREME_HALVES = [0xFBFF, 0x0001, 0x8000]  # -65504, 2^-24, -0


def set_half(block, offset, bits):
    block[offset:offset + 2] = np.frombuffer(struct.pack("<H", bits), dtype=np.uint8)


def blocks_for(rng, size, halves):
    out = []
    for _ in range(3):
        b = rng.integers(0, 256, size, dtype=np.uint8)
        for off in halves:  # ordinary scales, of either sign, a few orders of magnitude
            h = np.float16(rng.standard_normal() * 10.0 ** rng.integers(-4, 1))
            set_half(b, off, int(h.view(np.uint16)))
        out.append(b)
    out.append(np.zeros(size, dtype=np.uint8))
    b = np.full(size, 0xFF, dtype=np.uint8)
    for off in halves:
        set_half(b, off, 0x7BFF)  # 65504
    out.append(b)
    b = rng.integers(0, 256, size, dtype=np.uint8)
    for i, off in enumerate(halves):
        set_half(b, off, EXTREME_HALVES[i % len(EXTREME_HALVES)])
    out.append(b)
    return np.stack(out)


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("GGUF_PY")
    if not path:
        sys.exit("usage: make_quant_golden.py LLAMA_CPP/gguf-py (or GGUF_PY=...)")
    sys.path.insert(0, path)
    from gguf import quants
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    rng = np.random.default_rng(17)
    out = bytearray()
    for type_id, (name, size, elems, halves) in TYPES.items():
        qtype = GGMLQuantizationType[name]
        assert int(qtype) == type_id and GGML_QUANT_SIZES[qtype] == (elems, size), name
        blocks = blocks_for(rng, size, halves)
        values = quants.dequantize(blocks, qtype).astype(np.float32).reshape(-1)
        assert values.size == len(blocks) * elems and np.all(np.isfinite(values)), name
        out += struct.pack("<III", type_id, len(blocks), size)
        out += blocks.tobytes()
        out += values.astype("<f4").tobytes()
    dest = os.path.join(os.path.dirname(os.path.abspath(__file__)), "quant_blocks.bin")
    with open(dest, "wb") as f:
        f.write(out)
    print(f"wrote {dest}: {len(TYPES)} types, {len(out)} bytes")


if __name__ == "__main__":
    main()

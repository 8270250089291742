#!/usr/bin/env python3
"""make_llamacpp_quant_golden.py - rows of floats and the bytes llama.cpp's own llama-quantize
writes for them in every quantized type we write, for tests/test_kernels_quant.c.

llama-quantize (without an importance matrix) quantizes with ggml's reference quantizers
(quantize_row_*_ref in ggml-quants.c), so these bytes are what a file llama.cpp writes holds,
and our quantizers must give them byte for byte. The rows are a tensor of a tiny llama model of
float32 weights (written with llama.cpp's gguf-py), quantized with `llama-quantize --pure` into
each type and read back with gguf-py. They are chosen for the ways quantizers differ: ordinary
rows at several scales, rows of halves (every Q8_0 and Q4_0 quant an exact .5 before rounding),
rows on a coarse grid (ties in the K-quants' searches), zero, constant, tiny (under ggml's
GROUP_MAX_EPS), one-sided and outlier rows.

llama.cpp is not part of this repository: pass its folder (with build/bin/llama-quantize built,
scripts/llamacpp-crosscheck/build-llama-bench.sh) as the argument; run with a Python that has
NumPy (/usr/bin/python3):
    /usr/bin/python3 tests/golden/make_llamacpp_quant_golden.py /path/to/llama.cpp
The output, tests/golden/llamacpp_quant.bin, is committed, so the tests need neither.
The file is little-endian: uint32 rows, uint32 columns, the rows' float32 values; then per type
uint32 type id, uint32 bytes, the quantized rows.
"""
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

# llama-quantize's names of the types, each written as a whole with --pure
TYPES = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K",
         "IQ4_NL", "IQ4_XS"]
E, N_HEAD, N_HEAD_KV = 256, 8, 1  # attn_k: E / N_HEAD * N_HEAD_KV = 32 rows of E
TENSOR = "blk.0.attn_k.weight"


def rows(rng):
    n = E * N_HEAD_KV // N_HEAD
    out = [rng.standard_normal(E) * 0.02 for _ in range(6)]
    out += [rng.standard_normal(E).astype(np.float16).astype(np.float64) * 2.0 ** -6 for _ in range(2)]
    # Q8_0 halves: in each block of 32 the first element 127/128 (amax, so d = 1/128 exactly)
    # and the others (k + 0.5) / 128
    h8 = (rng.integers(-127, 127, E) + 0.5) / 128
    h8[::32] = 127 / 128
    # Q4_0 halves: the first element -8/64 (d = 1/64), the others (k + 0.5) / 64, k in -8..6
    h4 = (rng.integers(-8, 7, E) + 0.5) / 64
    h4[::32] = -8 / 64
    out += [h8, -h8, h4, -h4]
    out += [np.zeros(E), np.full(E, 0.01), np.full(E, -3.0)]
    spike = rng.standard_normal(E) * 0.01
    spike[77] = 5.0
    out += [spike, rng.standard_normal(E) * 1e-18]
    out += [rng.integers(-3, 4, E) / 16.0, rng.integers(0, 16, E) / 32.0]
    out += [rng.random(E) * 0.05, -rng.random(E) * 0.05]
    out += [np.sign(rng.standard_normal(E)) * 10.0 ** rng.uniform(-6, 1, E)]
    for scale in [1e-3, 1e-1, 1.0, 10.0, 100.0]:
        out.append(rng.standard_normal(E) * scale)
    while len(out) < n:
        out.append(rng.standard_normal(E) * 0.05)
    return np.stack(out[:n]).astype(np.float32)


def write_model(gguf, path, attn_k):
    rng = np.random.default_rng(2)
    w = gguf.GGUFWriter(path, "llama")
    w.add_block_count(1)
    w.add_context_length(128)
    w.add_embedding_length(E)
    w.add_feed_forward_length(E)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD_KV)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(0)

    def tensor(name, *shape):  # shape as ggml's ne: the row length first
        w.add_tensor(name, (rng.standard_normal(shape[::-1]) * 0.02).astype(np.float32))

    kv = E * N_HEAD_KV // N_HEAD
    tensor("token_embd.weight", E, 64)
    tensor("output_norm.weight", E)
    tensor("output.weight", E, 64)
    for name in ["attn_norm", "ffn_norm"]:
        tensor(f"blk.0.{name}.weight", E)
    tensor("blk.0.attn_q.weight", E, E)
    w.add_tensor(TENSOR, attn_k)
    tensor("blk.0.attn_v.weight", E, kv)
    tensor("blk.0.attn_output.weight", E, E)
    for name in ["ffn_gate", "ffn_up", "ffn_down"]:
        tensor(f"blk.0.{name}.weight", E, E)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_llamacpp_quant_golden.py LLAMA_CPP_DIR")
    llama = sys.argv[1]
    sys.path.insert(0, os.path.join(llama, "gguf-py"))
    import gguf

    x = rows(np.random.default_rng(17))
    out = bytearray(struct.pack("<II", *x.shape)) + x.tobytes()
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "f32.gguf")
        write_model(gguf, src, x)
        for name in TYPES:
            dst = os.path.join(tmp, name + ".gguf")
            subprocess.run([os.path.join(llama, "build/bin/llama-quantize"), "--pure", src, dst,
                            name], check=True, capture_output=True)
            t = next(t for t in gguf.GGUFReader(dst).tensors if t.name == TENSOR)
            data = t.data.view(np.uint8).tobytes()
            want = gguf.GGMLQuantizationType[name]
            assert t.tensor_type == want, (name, t.tensor_type)
            out += struct.pack("<II", int(t.tensor_type), len(data)) + data
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "llamacpp_quant.bin")
    with open(path, "wb") as f:
        f.write(out)
    print(f"{path}: {x.shape[0]} rows of {x.shape[1]}, {len(TYPES)} types, {len(out)} bytes")


if __name__ == "__main__":
    main()

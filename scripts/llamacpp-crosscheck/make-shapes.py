#!/usr/bin/env python3
"""make-shapes.py DIR: two small llama models of random f16 weights and no vocabulary, written
with llama.cpp's gguf-py, whose types in each mix test_quantize_mix.c tabulates:
  DIR/gqa-untied.gguf  8 layers, 8 query heads on 2 KV heads, its own output.weight
  DIR/tied.gguf       16 layers, 4 heads on 4, no output.weight (token_embd is the head)
both 256 wide with n_ff 512 (every row fits every type's blocks)."""
import os
import sys

sys.path.insert(0, os.environ.get("GGUF_PY", "/work/llama.cpp/gguf-py"))
import numpy as np  # noqa: E402
import gguf  # noqa: E402


def make(path, n_layer, n_head, n_head_kv, tied, E=256, F=512, V=64):
    w = gguf.GGUFWriter(path, "llama")
    w.add_block_count(n_layer)
    w.add_context_length(128)
    w.add_embedding_length(E)
    w.add_feed_forward_length(F)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(1)
    rng = np.random.default_rng(1)

    def tensor(name, *shape):  # shape as ggml's ne: the row length first
        dtype = np.float16 if len(shape) > 1 else np.float32
        w.add_tensor(name, (rng.standard_normal(shape[::-1]) * 0.02).astype(dtype))

    kv = E * n_head_kv // n_head
    tensor("token_embd.weight", E, V)
    tensor("output_norm.weight", E)
    if not tied:
        tensor("output.weight", E, V)
    for layer in range(n_layer):
        p = f"blk.{layer}."
        tensor(p + "attn_norm.weight", E)
        tensor(p + "ffn_norm.weight", E)
        tensor(p + "attn_q.weight", E, E)
        tensor(p + "attn_k.weight", E, kv)
        tensor(p + "attn_v.weight", E, kv)
        tensor(p + "attn_output.weight", E, E)
        tensor(p + "ffn_gate.weight", E, F)
        tensor(p + "ffn_up.weight", E, F)
        tensor(p + "ffn_down.weight", F, E)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


make(os.path.join(sys.argv[1], "gqa-untied.gguf"), 8, 8, 2, False)
make(os.path.join(sys.argv[1], "tied.gguf"), 16, 4, 4, True)

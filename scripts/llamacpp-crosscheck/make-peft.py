#!/usr/bin/env python3
"""make-peft.py - a random PEFT LoRA folder (adapter_config.json, adapter_model.safetensors, F32)
for the Hugging Face model whose config.json is given, so that lora-check.sh has adapters for
models that `edgelora finetune` does not train (qwen3, phi3, gemma3). The modules are named as
Hugging Face names them: phi3's fused qkv_proj and gate_up_proj, or the q/k/v_proj and
gate/up_proj that PEFT also lets one target apart (then each part has its own lora_A).
Plain Python (struct, random): no numpy, the same files for the same arguments.
Usage: make-peft.py CONFIG.json OUT_DIR MODULE,MODULE,... RANK ALPHA SEED
"""
import json
import os
import random
import struct
import sys


def shapes(cfg):
    """(n_in, n_out) of each module of a block."""
    d, ff = cfg["hidden_size"], cfg["intermediate_size"]
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim", d // nh)
    q, kv = nh * hd, nkv * hd
    return {"q_proj": (d, q), "k_proj": (d, kv), "v_proj": (d, kv), "o_proj": (q, d),
            "qkv_proj": (d, q + 2 * kv), "gate_proj": (d, ff), "up_proj": (d, ff),
            "gate_up_proj": (d, 2 * ff), "down_proj": (ff, d)}


def main():
    if len(sys.argv) != 7:
        sys.exit("usage: make-peft.py CONFIG.json OUT_DIR MODULE,MODULE,... RANK ALPHA SEED")
    cfg_path, out, modules, rank, alpha, seed = sys.argv[1:]
    with open(cfg_path) as f:
        cfg = json.load(f)
    rank, alpha = int(rank), float(alpha)
    modules = modules.split(",")
    shape = shapes(cfg)
    unknown = [m for m in modules if m not in shape]
    if unknown:
        sys.exit(f"make-peft.py: unknown module(s) {unknown}; known: {sorted(shape)}")
    rng = random.Random(int(seed))
    header, blobs, offset = {}, [], 0
    for il in range(cfg["num_hidden_layers"]):
        for m in modules:
            n_in, n_out = shape[m]
            parent = "mlp" if m in ("gate_proj", "up_proj", "gate_up_proj", "down_proj") \
                else "self_attn"
            stem = f"base_model.model.model.layers.{il}.{parent}.{m}"
            # A like PEFT's kaiming-uniform start; B nonzero (a trained adapter's), large enough
            # that the adapter moves the logits far more than the engines differ
            for ab, rows, cols, bound in (("A", rank, n_in, 1 / n_in ** 0.5),
                                          ("B", n_out, rank, 0.5)):
                data = struct.pack(f"<{rows * cols}f",
                                   *(rng.uniform(-bound, bound) for _ in range(rows * cols)))
                header[f"{stem}.lora_{ab}.weight"] = {
                    "dtype": "F32", "shape": [rows, cols],
                    "data_offsets": [offset, offset + len(data)]}
                blobs.append(data)
                offset += len(data)
    head = json.dumps(header).encode()
    head += b" " * (-len(head) % 8)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "adapter_model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + b"".join(blobs))
    with open(os.path.join(out, "adapter_config.json"), "w") as f:
        json.dump({"peft_type": "LORA", "r": rank, "lora_alpha": alpha,
                   "target_modules": sorted(set(modules)), "bias": "none"}, f, indent=1)


main()

#!/usr/bin/python3
"""make_lora_golden.py - reference files for the LoRA tests, from an independent float64 numpy
implementation in Hugging Face's layout.

1. lora_llama_base.gguf + lora_llama_peft/ + lora_llama_{base,peft}.logits (test_lora_golden.c):
   a tiny random llama model made in Hugging Face's layout (q_proj/k_proj rows in HF order, RoPE
   with rotate_half on pairs (j, j + hd/2)) and a PEFT LoRA adapter for it (lora_A [r, in],
   lora_B [out, r], alpha/r scaling, on q/k/v/o and two MLP projections, one of them with an
   alpha_pattern). The script
     - merges the adapter into the HF weights in float64 (W + alpha/r * B @ A) and runs the prompt
       through an HF-style forward pass (rotate_half RoPE on the unpermuted q/k): the expected
       logits of base + adapter; and the same without the adapter;
     - writes the base as llama.cpp's converter does: Q and K rows permuted per head with
       w.reshape(n_head, 2, hd/2, in).swapaxes(1, 2).reshape(out, in) (n_head_kv heads for K),
       everything else as is, F32, no tokenizer (a logits-only model);
     - writes the PEFT folder untouched (HF order).
   So the engine reproduces the expected logits only if it permutes PEFT's q/k lora_B rows the
   way the converter permuted the base.
2. lora_stories.gguf and lora_stories_peft/ (tests/cli/test_lora.sh): small random adapters for
   the shape of ../shared/data/models/stories260K (dim 64, hidden 172, 5 layers, 8 heads,
   4 kv heads), GGUF (F16, alpha 8, rank 4, all seven projections) and PEFT (F32, rank 2, q/v).

A .logits file: "ELGL", u32 version 1, u32 n_tokens, u32 n_vocab, i32 tokens[n_tokens],
f32 logits[n_tokens][n_vocab] (row i: after tokens[0..i] at positions 0..i).
Run with /usr/bin/python3 (needs numpy). Deterministic: the same files every time.
"""
import json
import os
import struct

import numpy as np

import make_golden

HERE = os.path.dirname(os.path.abspath(__file__))

# ---------------------------------------------------------------- writers

def write_gguf(path, kvs, tensors):
    """tensors: list of (name, numpy array of float32 or float16); ne is the reversed shape.
    Written by make_golden.py's GGUF writer (independent of the C code under test)."""
    entries = []
    for name, arr in tensors:
        tname = "f16" if arr.dtype == np.float16 else "f32"
        raw = arr.astype("<f2" if tname == "f16" else "<f4").tobytes()
        entries.append((name, tname, list(reversed(arr.shape)), raw))
    make_golden.write_gguf(path, kvs, entries)


def write_safetensors(path, tensors):
    """tensors: dict name -> float32 array (all F32, so every tensor is aligned)."""
    header, data, off = {}, b"", 0
    for name in sorted(tensors):
        raw = tensors[name].astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape),
                        "data_offsets": [off, off + len(raw)]}
        data += raw
        off += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((-len(h)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def write_peft(folder, config, tensors):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "adapter_config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")
    write_safetensors(os.path.join(folder, "adapter_model.safetensors"), tensors)


# ---------------------------------------------------------------- the HF-layout model

CFG = dict(vocab=40, dim=32, n_layer=2, n_head=4, n_head_kv=2, ff=48, eps=1e-5, base=10000.0)
PROJ = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
GGUF_NAME = {"q_proj": "attn_q", "k_proj": "attn_k", "v_proj": "attn_v", "o_proj": "attn_output",
             "gate_proj": "ffn_gate", "up_proj": "ffn_up", "down_proj": "ffn_down"}
PART = {"q_proj": "self_attn", "k_proj": "self_attn", "v_proj": "self_attn",
        "o_proj": "self_attn", "gate_proj": "mlp", "up_proj": "mlp", "down_proj": "mlp"}


def f32(x):
    return np.asarray(x, dtype=np.float32)


def proj_shape(c, p):
    hd = c["dim"] // c["n_head"]
    kv = c["n_head_kv"] * hd
    return {"q_proj": (c["dim"], c["dim"]), "k_proj": (kv, c["dim"]), "v_proj": (kv, c["dim"]),
            "o_proj": (c["dim"], c["dim"]), "gate_proj": (c["ff"], c["dim"]),
            "up_proj": (c["ff"], c["dim"]), "down_proj": (c["dim"], c["ff"])}[p]  # (out, in)


def make_hf_model(c, rng):
    W = {"embed": f32(rng.uniform(-1, 1, (c["vocab"], c["dim"]))),
         "norm": f32(rng.uniform(0.8, 1.2, c["dim"])),
         "lm_head": f32(rng.uniform(-0.3, 0.3, (c["vocab"], c["dim"])))}
    for il in range(c["n_layer"]):
        W[(il, "attn_norm")] = f32(rng.uniform(0.8, 1.2, c["dim"]))
        W[(il, "ffn_norm")] = f32(rng.uniform(0.8, 1.2, c["dim"]))
        for p in PROJ:
            W[(il, p)] = f32(rng.uniform(-0.25, 0.25, proj_shape(c, p)))
    return W


def rms(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def hf_forward(c, W, tokens):
    """Hugging Face LlamaForCausalLM in float64: rotate_half RoPE, GQA, SwiGLU."""
    n, hd = len(tokens), c["dim"] // c["n_head"]
    g = c["n_head"] // c["n_head_kv"]
    x = W["embed"][tokens].astype(np.float64)
    pos = np.arange(n, dtype=np.float64)
    inv = c["base"] ** (-np.arange(0, hd, 2, dtype=np.float64) / hd)
    ang = np.concatenate([pos[:, None] * inv[None, :]] * 2, axis=1)  # [n, hd]
    cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    mask = np.triu(np.full((n, n), -np.inf), 1)
    for il in range(c["n_layer"]):
        L = lambda p: W[(il, p)].astype(np.float64)
        h = rms(x, W[(il, "attn_norm")], c["eps"])
        q = (h @ L("q_proj").T).reshape(n, c["n_head"], hd)
        k = (h @ L("k_proj").T).reshape(n, c["n_head_kv"], hd)
        v = (h @ L("v_proj").T).reshape(n, c["n_head_kv"], hd)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        out = np.zeros((n, c["n_head"], hd))
        for hh in range(c["n_head"]):
            s = q[:, hh, :] @ k[:, hh // g, :].T / np.sqrt(hd) + mask
            s = np.exp(s - s.max(axis=1, keepdims=True))
            s /= s.sum(axis=1, keepdims=True)
            out[:, hh, :] = s @ v[:, hh // g, :]
        x = x + out.reshape(n, -1) @ L("o_proj").T
        h = rms(x, W[(il, "ffn_norm")], c["eps"])
        a = h @ L("gate_proj").T
        x = x + ((a / (1 + np.exp(-a))) * (h @ L("up_proj").T)) @ L("down_proj").T
    return rms(x, W["norm"], c["eps"]) @ W["lm_head"].astype(np.float64).T


def permute(w, n_head):
    """llama.cpp's convert_hf_to_gguf.py permutation of Q/K rows (HF -> GGUF llama order)."""
    out, inn = w.shape
    return w.reshape(n_head, 2, out // n_head // 2, inn).swapaxes(1, 2).reshape(out, inn)


def write_base_gguf(path, c, W):
    kvs = {"general.architecture": "llama", "general.name": "lora golden base",
           "llama.context_length": 64, "llama.embedding_length": c["dim"],
           "llama.block_count": c["n_layer"], "llama.feed_forward_length": c["ff"],
           "llama.attention.head_count": c["n_head"],
           "llama.attention.head_count_kv": c["n_head_kv"],
           "llama.attention.layer_norm_rms_epsilon": c["eps"],
           "llama.rope.freq_base": c["base"]}
    t = [("token_embd.weight", W["embed"]), ("output_norm.weight", W["norm"]),
         ("output.weight", W["lm_head"])]
    for il in range(c["n_layer"]):
        t.append(("blk.%d.attn_norm.weight" % il, W[(il, "attn_norm")]))
        t.append(("blk.%d.ffn_norm.weight" % il, W[(il, "ffn_norm")]))
        for p in PROJ:
            w = W[(il, p)]
            if p == "q_proj":
                w = permute(w, c["n_head"])
            elif p == "k_proj":
                w = permute(w, c["n_head_kv"])
            t.append(("blk.%d.%s.weight" % (il, GGUF_NAME[p]), np.ascontiguousarray(w)))
    write_gguf(path, kvs, t)


def make_lora(c, rng, rank, targets, layers, spread=0.3):
    """{(il, proj): (A [rank, in], B [out, rank])} float32."""
    out = {}
    for il in layers:
        for p in targets:
            o, i = proj_shape(c, p)
            out[(il, p)] = (f32(rng.uniform(-spread, spread, (rank, i))),
                            f32(rng.uniform(-spread, spread, (o, rank))))
    return out


def peft_tensors(lora):
    t = {}
    for (il, p), (a, b) in lora.items():
        pre = "base_model.model.model.layers.%d.%s.%s" % (il, PART[p], p)
        t[pre + ".lora_A.weight"] = a
        t[pre + ".lora_B.weight"] = b
    return t


def write_logits(path, tokens, logits):
    with open(path, "wb") as f:
        f.write(b"ELGL" + struct.pack("<III", 1, len(tokens), logits.shape[1]))
        f.write(np.asarray(tokens).astype("<i4").tobytes())
        f.write(logits.astype("<f4").tobytes())


def main():
    rng = np.random.default_rng(4242)
    c = CFG
    W = make_hf_model(c, rng)
    rank, alpha, alpha_down = 4, 8.0, 2.0
    targets = ["q_proj", "k_proj", "v_proj", "o_proj", "up_proj", "down_proj"]
    lora = make_lora(c, rng, rank, targets, range(c["n_layer"]))
    merged = dict(W)
    for (il, p), (a, b) in lora.items():
        s = (alpha_down if p == "down_proj" else alpha) / rank
        merged[(il, p)] = W[(il, p)].astype(np.float64) + s * (b.astype(np.float64) @ a)
    tokens = rng.integers(0, c["vocab"], 9)
    write_base_gguf(os.path.join(HERE, "lora_llama_base.gguf"), c, W)
    write_peft(os.path.join(HERE, "lora_llama_peft"),
               {"peft_type": "LORA", "r": rank, "lora_alpha": alpha,
                "target_modules": targets, "alpha_pattern": {"down_proj": alpha_down},
                "rank_pattern": {}, "use_rslora": False, "bias": "none",
                "base_model_name_or_path": "lora golden base"}, peft_tensors(lora))
    base_logits = hf_forward(c, W, tokens)
    peft_logits = hf_forward(c, merged, tokens)
    write_logits(os.path.join(HERE, "lora_llama_base.logits"), tokens, base_logits)
    write_logits(os.path.join(HERE, "lora_llama_peft.logits"), tokens, peft_logits)
    # how much a missing permutation would matter: merge the adapter as if the GGUF were HF order
    print("adapter moves the logits by %.3f (max |base| %.3f)" %
          (np.abs(peft_logits - base_logits).max(), np.abs(base_logits).max()))

    # stories260K-shaped adapters for the CLI test
    s = dict(vocab=512, dim=64, n_layer=5, n_head=8, n_head_kv=4, ff=172)
    g = make_lora(s, rng, 4, PROJ, range(s["n_layer"]), 0.15)
    t = []
    for (il, p), (a, b) in sorted(g.items()):
        t.append(("blk.%d.%s.weight.lora_a" % (il, GGUF_NAME[p]), a.astype(np.float16)))
        t.append(("blk.%d.%s.weight.lora_b" % (il, GGUF_NAME[p]), b.astype(np.float16)))
    write_gguf(os.path.join(HERE, "lora_stories.gguf"),
               {"general.architecture": "llama", "general.type": "adapter",
                "adapter.type": "lora", "adapter.lora.alpha": 8.0}, t)
    pf = make_lora(s, rng, 2, ["q_proj", "v_proj"], range(s["n_layer"]), 0.3)
    write_peft(os.path.join(HERE, "lora_stories_peft"),
               {"peft_type": "LORA", "r": 2, "lora_alpha": 4, "target_modules": ["q_proj", "v_proj"]},
               peft_tensors(pf))


if __name__ == "__main__":
    main()

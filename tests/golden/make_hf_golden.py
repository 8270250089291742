#!/usr/bin/python3
"""make_hf_golden.py - tiny Hugging Face model folders and their logits, for test_hf_convert.

Writes tests/golden/hf/{llama,qwen2,mistral,qwen3,phi3,gemma3}/ in the Hugging Face layout
(config.json, model.safetensors, tokenizer.json, tokenizer_config.json) and, beside each,
expected_logits.txt:
the logits of a fixed token sequence at fixed positions computed here in float64 the way
Hugging Face's modeling code computes them (RoPE by rotate_half on the unpermuted weights,
inv_freq scaled as transformers' llama3 / linear rope scaling does, GQA by repeating K/V heads,
RMSNorm as x * rsqrt(mean(x^2) + eps) * w). Nothing here comes from edgelora, so the test checks
the converter's names, permutation and RoPE settings against an independent reference.

  llama:   LlamaForCausalLM, GQA, llama3 rope scaling (all three bands used), untied, F32,
           byte-level BPE tokenizer with the llama3 Split regex
  qwen2:   Qwen2ForCausalLM, q/k/v biases, tied embeddings, BF16, qwen2 regex
  mistral: MistralForCausalLM, linear rope scaling, "head_dim": null, F16, SentencePiece-style
           tokenizer (byte_fallback, "▁" pieces)
  qwen3:   Qwen3ForCausalLM (modeling_qwen3.py): q_norm / k_norm RMSNorms of each head before
           RoPE, head_dim 16 while hidden / heads is 8, GQA, tied, BF16, qwen2 regex
  phi3:    Phi3ForCausalLM (modeling_phi3.py): fused qkv_proj (Q, K, V rows) and gate_up_proj
           (gate rows first: Phi3MLP's chunk(2)), partial_rotary_factor 0.75, longrope (the
           long factors, as transformers picks them when the sequence, up to position 1500, is
           longer than original_max_position_embeddings 32; edgelora and llama.cpp pick them by
           a context larger than it, test_hf_convert's 64), cos and sin times the attention
           factor sqrt(1 + ln(4096 / 32) / ln 32), F16, SentencePiece-style tokenizer
  gemma3:  Gemma3ForCausalLM (model_type gemma3_text), BF16, written from transformers'
           modeling_gemma3.py: RMSNorm times (1 + w), embeddings times sqrt(hidden_size),
           q_norm / k_norm per head before RoPE, post-attention and pre/post-feedforward norms,
           gelu_pytorch_tanh gating, scores times query_pre_attn_scalar^-0.5, sliding-window
           layers (layer_types; window 4 over 12 consecutive positions, so it cuts) rotated with
           rope_local_base_freq and no scaling, global ones with rope_theta and linear scaling,
           tied embeddings, a Gemma-style tokenizer (byte_fallback, no dummy prefix)

Deterministic (numpy's PCG64 with fixed seeds). Run from the repository root:
    /usr/bin/python3 tests/golden/make_hf_golden.py
"""
import json
import math
import os
import struct

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hf")
TOKENS = [1, 70, 101, 256, 300 - 40, 33, 7]
POSITIONS = [0, 1, 2, 9, 70, 400, 1500]
GEMMA3_TOKENS = [2, 70, 101, 256, 260, 33, 7, 280, 5, 150, 290, 44]  # at positions 0..11

LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
               r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


# ------------------------------------------------------------------ storage


def to_bf16_bits(x):
    """float64 -> bfloat16 bits, round to nearest even (as torch does)."""
    b = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    return b.astype(np.uint16)


def stored(x, dtype):
    """(bytes, the float64 values the bytes hold) of x stored as dtype."""
    if dtype == "F32":
        v = np.asarray(x, dtype=np.float32)
        return v.tobytes(), v.astype(np.float64)
    if dtype == "F16":
        v = np.asarray(x, dtype=np.float16)
        return v.tobytes(), v.astype(np.float64)
    bits = to_bf16_bits(x)
    vals = (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return bits.tobytes(), vals


def write_safetensors(path, tensors):
    """tensors: {name: (dtype, shape, bytes)} -> a safetensors file (sorted by name)."""
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        dtype, shape, data = tensors[name]
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


# ------------------------------------------------------------------ tokenizers


def bytes_to_unicode():
    """GPT-2's map of the 256 bytes to printable code points."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def bytelevel_tokenizer(n_vocab, regex):
    """256 byte tokens in byte order, merges of common pairs, 4 special tokens at the end."""
    b2u = bytes_to_unicode()
    vocab = {b2u[b]: b for b in range(256)}
    merges = []
    pairs = ["Ġ t", "h e", "Ġ a", "i n", "Ġt he", "e r", "o n", "Ġ s", "a t", "r e", "e n",
             "Ġ w", "o r", "Ġ o", "e s", "a n", "Ġ c", "i s", "Ġ b", "i t"]
    for p in pairs:
        if len(vocab) >= n_vocab - 4:
            break
        merges.append(p)
        vocab[p.replace(" ", "")] = len(vocab)
    added = []
    for i, s in enumerate(["<|begin|>", "<|end|>", "<|pad|>", "<|tool|>"]):
        idx = len(vocab) + i
        added.append({"id": idx, "content": s, "single_word": False, "lstrip": False,
                      "rstrip": False, "normalized": False, "special": i < 3})
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated",
             "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
             "use_regex": False}]},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                           "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": regex == LLAMA3_REGEX,
                  "vocab": vocab, "merges": merges},
    }


def spm_tokenizer(n_vocab, extra=()):
    """Llama-2 style: <unk> <s> </s>, 256 <0xNN> byte tokens, then pieces made by merges, then
    the special tokens `extra` (Phi-3's <|endoftext|>, which llama.cpp expects in a phi3)."""
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab["<0x%02X>" % b] = len(vocab)
    for c in "▁etaoinshr":
        vocab[c] = len(vocab)
    merges = []
    for a, b in [("▁", "t"), ("e", "r"), ("i", "n"), ("▁", "a"), ("e", "n"), ("o", "n"),
                 ("▁t", "h"), ("▁th", "e"), ("e", "s"), ("▁", "s")]:
        if len(vocab) >= n_vocab:
            break
        merges.append(a + " " + b)
        vocab[a + b] = len(vocab)
    for t in extra:
        vocab[t] = len(vocab)
    added = [{"id": vocab[s], "content": s, "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": False, "special": True}
             for s in ["<unk>", "<s>", "</s>"] + list(extra)]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "},
                                                  "content": "▁"}]},
        "pre_tokenizer": None,
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [], "special_tokens": {}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ",
                                                          "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>",
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": True, "byte_fallback": True, "vocab": vocab, "merges": merges},
    }


# ------------------------------------------------------------------ the model


def rotary_dim(cfg):
    hd = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    return int(hd * cfg.get("partial_rotary_factor", 1.0))


def attention_scaling(cfg, seq_len):
    """longrope's factor on cos and sin (_compute_longrope_parameters); 1 for the others."""
    rs = cfg.get("rope_scaling") or {}
    if rs.get("rope_type", rs.get("type")) != "longrope":
        return 1.0
    factor = cfg["max_position_embeddings"] / cfg["original_max_position_embeddings"]
    if factor <= 1.0:
        return 1.0
    return math.sqrt(1 + math.log(factor) / math.log(cfg["original_max_position_embeddings"]))


def inv_freq(cfg, seq_len):
    """transformers' rope init: default, linear, llama3 or longrope (for a sequence of seq_len)."""
    hd = rotary_dim(cfg)
    base = cfg.get("rope_theta", 10000.0)
    f = 1.0 / base ** (np.arange(0, hd, 2, dtype=np.float64) / hd)
    rs = cfg.get("rope_scaling") or {}
    kind = rs.get("rope_type", rs.get("type"))
    if kind == "longrope":  # the dynamic update: long factors past the original length
        long = seq_len > cfg["original_max_position_embeddings"]
        return f / np.asarray(rs["long_factor" if long else "short_factor"], dtype=np.float64)
    if kind == "linear":
        return f / rs["factor"]
    if kind == "llama3":
        factor, lo, hi = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
        old = rs["original_max_position_embeddings"]
        lo_wl, hi_wl = old / lo, old / hi
        wl = 2 * math.pi / f
        out = np.where(wl > lo_wl, f / factor, f)
        smooth = (old / wl - lo) / (hi - lo)
        smoothed = (1 - smooth) * out / factor + smooth * out
        medium = ~(wl < hi_wl) & ~(wl > lo_wl)
        return np.where(medium, smoothed, out)
    return f


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def rmsnorm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def forward(cfg, W, tokens, positions):
    d, nh, nkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or d // nh
    eps = cfg["rms_norm_eps"]
    T = len(tokens)
    x = W["model.embed_tokens.weight"][tokens]
    seq_len = max(positions) + 1
    ang = np.outer(np.asarray(positions, dtype=np.float64), inv_freq(cfg, seq_len))
    emb = np.concatenate([ang, ang], axis=-1)
    mag = attention_scaling(cfg, seq_len)
    cos, sin = mag * np.cos(emb)[:, None, :], mag * np.sin(emb)[:, None, :]
    rd = rotary_dim(cfg)

    def rotary(t):  # apply_rotary_pos_emb: the first rd dims rotated, the rest passed
        r = t[..., :rd] * cos + rotate_half(t[..., :rd]) * sin
        return np.concatenate([r, t[..., rd:]], axis=-1)

    mask = np.triu(np.full((T, T), -np.inf), 1)
    for l in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % l
        h = rmsnorm(x, W[p + "input_layernorm.weight"], eps)
        if p + "self_attn.qkv_proj.weight" in W:  # Phi3Attention: Q, K, V slices of one
            qkv = h @ W[p + "self_attn.qkv_proj.weight"].T
            q, k, v = qkv[:, :nh * hd], qkv[:, nh * hd:(nh + nkv) * hd], qkv[:, (nh + nkv) * hd:]
        else:
            q = h @ W[p + "self_attn.q_proj.weight"].T
            k = h @ W[p + "self_attn.k_proj.weight"].T
            v = h @ W[p + "self_attn.v_proj.weight"].T
        if p + "self_attn.q_proj.bias" in W:
            q += W[p + "self_attn.q_proj.bias"]
            k += W[p + "self_attn.k_proj.bias"]
            v += W[p + "self_attn.v_proj.bias"]
        q, k, v = q.reshape(T, nh, hd), k.reshape(T, nkv, hd), v.reshape(T, nkv, hd)
        if p + "self_attn.q_norm.weight" in W:  # Qwen3Attention: per head, before RoPE
            q = rmsnorm(q, W[p + "self_attn.q_norm.weight"], eps)
            k = rmsnorm(k, W[p + "self_attn.k_norm.weight"], eps)
        q, k = rotary(q), rotary(k)
        rep = nh // nkv
        k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
        att = np.einsum("thd,shd->hts", q, k) / math.sqrt(hd) + mask
        att = np.exp(att - att.max(axis=-1, keepdims=True))
        att /= att.sum(axis=-1, keepdims=True)
        o = np.einsum("hts,shd->thd", att, v).reshape(T, nh * hd)
        x = x + o @ W[p + "self_attn.o_proj.weight"].T
        h = rmsnorm(x, W[p + "post_attention_layernorm.weight"], eps)
        if p + "mlp.gate_up_proj.weight" in W:  # Phi3MLP: gate, up = chunk(2)
            gu = h @ W[p + "mlp.gate_up_proj.weight"].T
            g, u = gu[:, :gu.shape[1] // 2], gu[:, gu.shape[1] // 2:]
        else:
            g = h @ W[p + "mlp.gate_proj.weight"].T
            u = h @ W[p + "mlp.up_proj.weight"].T
        x = x + (g / (1 + np.exp(-g)) * u) @ W[p + "mlp.down_proj.weight"].T
    x = rmsnorm(x, W["model.norm.weight"], eps)
    out = W["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else W["lm_head.weight"]
    return x @ out.T


def gemma_tokenizer(n_vocab):
    """Gemma-style SentencePiece BPE: <pad> <eos> <bos> <unk> <mask>, the turn markers, 256
    <0xNN> byte tokens, pieces; spaces become "▁" with none put before the text."""
    vocab = {s: i for i, s in enumerate(["<pad>", "<eos>", "<bos>", "<unk>", "<mask>",
                                         "<start_of_turn>", "<end_of_turn>"])}
    for b in range(256):
        vocab["<0x%02X>" % b] = len(vocab)
    for c in "▁etaoinshrdlcu":
        vocab[c] = len(vocab)
    merges = []
    for a, b in [("▁", "t"), ("h", "e"), ("▁t", "he"), ("i", "n"), ("▁", "a"), ("e", "r"),
                 ("o", "n"), ("▁", "s"), ("a", "t"), ("e", "n")]:
        if len(vocab) >= n_vocab:
            break
        merges.append(a + " " + b)
        vocab[a + b] = len(vocab)
    added = [{"id": vocab[s], "content": s, "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": False, "special": True}
             for s in ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<start_of_turn>",
                       "<end_of_turn>"]]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
        "pre_tokenizer": None,
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "<bos>", "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [], "special_tokens": {}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>",
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": True, "byte_fallback": True, "vocab": vocab, "merges": merges},
    }


def gemma3_inv_freq(cfg, sliding):
    """transformers' Gemma3RotaryEmbedding: the local one with rope_local_base_freq and the
    default rope, the global one with rope_theta and rope_scaling (linear here)."""
    hd = cfg["head_dim"]
    base = cfg["rope_local_base_freq"] if sliding else cfg["rope_theta"]
    f = 1.0 / base ** (np.arange(0, hd, 2, dtype=np.float64) / hd)
    rs = cfg.get("rope_scaling") or {}
    if not sliding and rs.get("rope_type") == "linear":
        f = f / rs["factor"]
    return f


def gemma3_norm(x, w, eps):
    """Gemma3RMSNorm: x * rsqrt(mean(x^2) + eps) * (1 + w)."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * (1.0 + w)


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def forward_gemma3(cfg, W, tokens, positions):
    d, nh, nkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd, eps, T = cfg["head_dim"], cfg["rms_norm_eps"], len(tokens)
    pos = np.asarray(positions, dtype=np.float64)
    x = W["model.embed_tokens.weight"][tokens] * math.sqrt(d)
    # causal; a sliding layer also drops keys window or more positions back (kv > q - window)
    dist = pos[:, None] - pos[None, :]
    causal = np.where(dist >= 0, 0.0, -np.inf)
    sliding_mask = np.where((dist >= 0) & (dist < cfg["sliding_window"]), 0.0, -np.inf)
    for l in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % l
        sliding = cfg["layer_types"][l] == "sliding_attention"
        ang = np.outer(pos, gemma3_inv_freq(cfg, sliding))
        emb = np.concatenate([ang, ang], axis=-1)
        cos, sin = np.cos(emb)[:, None, :], np.sin(emb)[:, None, :]
        h = gemma3_norm(x, W[p + "input_layernorm.weight"], eps)
        q = (h @ W[p + "self_attn.q_proj.weight"].T).reshape(T, nh, hd)
        k = (h @ W[p + "self_attn.k_proj.weight"].T).reshape(T, nkv, hd)
        v = (h @ W[p + "self_attn.v_proj.weight"].T).reshape(T, nkv, hd)
        q = gemma3_norm(q, W[p + "self_attn.q_norm.weight"], eps)
        k = gemma3_norm(k, W[p + "self_attn.k_norm.weight"], eps)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = nh // nkv
        k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
        att = np.einsum("thd,shd->hts", q, k) * cfg["query_pre_attn_scalar"] ** -0.5
        att = att + (sliding_mask if sliding else causal)
        att = np.exp(att - att.max(axis=-1, keepdims=True))
        att /= att.sum(axis=-1, keepdims=True)
        o = np.einsum("hts,shd->thd", att, v).reshape(T, nh * hd)
        o = o @ W[p + "self_attn.o_proj.weight"].T
        x = x + gemma3_norm(o, W[p + "post_attention_layernorm.weight"], eps)
        h = gemma3_norm(x, W[p + "pre_feedforward_layernorm.weight"], eps)
        g = h @ W[p + "mlp.gate_proj.weight"].T
        u = h @ W[p + "mlp.up_proj.weight"].T
        f = (gelu_tanh(g) * u) @ W[p + "mlp.down_proj.weight"].T
        x = x + gemma3_norm(f, W[p + "post_feedforward_layernorm.weight"], eps)
    x = gemma3_norm(x, W["model.norm.weight"], eps)
    logits = x @ W["model.embed_tokens.weight"].T
    if cfg.get("final_logit_softcapping"):
        c = cfg["final_logit_softcapping"]
        logits = c * np.tanh(logits / c)
    return logits


def make(name, cfg, dtype, tokenizer, tok_cfg, seed):
    rng = np.random.default_rng(seed)
    d, ff, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or d // nh
    shapes = {"model.embed_tokens.weight": (V, d), "model.norm.weight": (d,)}
    if not cfg["tie_word_embeddings"]:
        shapes["lm_head.weight"] = (V, d)
    fused = cfg["model_type"] == "phi3"
    for l in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % l
        shapes.update({
            p + "input_layernorm.weight": (d,), p + "post_attention_layernorm.weight": (d,),
            p + "self_attn.o_proj.weight": (d, nh * hd), p + "mlp.down_proj.weight": (d, ff)})
        if fused:
            shapes.update({p + "self_attn.qkv_proj.weight": ((nh + 2 * nkv) * hd, d),
                           p + "mlp.gate_up_proj.weight": (2 * ff, d)})
        else:
            shapes.update({
                p + "self_attn.q_proj.weight": (nh * hd, d),
                p + "self_attn.k_proj.weight": (nkv * hd, d),
                p + "self_attn.v_proj.weight": (nkv * hd, d),
                p + "mlp.gate_proj.weight": (ff, d), p + "mlp.up_proj.weight": (ff, d)})
        if cfg["model_type"] == "qwen3":
            shapes.update({p + "self_attn.q_norm.weight": (hd,),
                           p + "self_attn.k_norm.weight": (hd,)})
        if name == "qwen2":
            shapes.update({p + "self_attn.q_proj.bias": (nh * hd,),
                           p + "self_attn.k_proj.bias": (nkv * hd,),
                           p + "self_attn.v_proj.bias": (nkv * hd,)})
        if name == "gemma3":
            shapes.update({p + "self_attn.q_norm.weight": (hd,), p + "self_attn.k_norm.weight": (hd,),
                           p + "pre_feedforward_layernorm.weight": (d,),
                           p + "post_feedforward_layernorm.weight": (d,)})
    files, W = {}, {}
    for t in sorted(shapes):
        s = shapes[t]
        if t.endswith("norm.weight") and name == "gemma3":  # the norm multiplies by 1 + w
            x = 0.2 * rng.standard_normal(s)
        elif t.endswith("norm.weight"):
            x = 1.0 + 0.2 * rng.standard_normal(s)
        elif t.endswith(".bias"):
            x = 0.3 * rng.standard_normal(s)
        else:
            x = rng.standard_normal(s) / math.sqrt(s[-1]) * (2.0 if "embed" in t else 1.0)
        data, W[t] = stored(x, dtype)
        files[t] = (dtype, s, data)
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    write_safetensors(os.path.join(folder, "model.safetensors"), files)
    for fname, obj in [("config.json", cfg), ("tokenizer.json", tokenizer),
                       ("tokenizer_config.json", tok_cfg)]:
        with open(os.path.join(folder, fname), "w", encoding="utf-8") as f:
            json.dump(obj, f, ensure_ascii=False, indent=1)
    tokens, positions = (GEMMA3_TOKENS, list(range(len(GEMMA3_TOKENS)))) if name == "gemma3" \
        else (TOKENS, POSITIONS)
    run = forward_gemma3 if name == "gemma3" else forward
    logits = run(cfg, W, tokens, positions)
    with open(os.path.join(folder, "expected_logits.txt"), "w") as f:
        f.write("# logits of the tokens at the positions below, float64 reference\n")
        f.write("tokens " + " ".join(map(str, tokens)) + "\n")
        f.write("positions " + " ".join(map(str, positions)) + "\n")
        for row in logits:
            f.write(" ".join("%.7e" % v for v in row) + "\n")


def base_cfg(arch, model_type):
    return {"architectures": [arch], "model_type": model_type, "hidden_size": 32,
            "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "vocab_size": 300, "max_position_embeddings": 4096,
            "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": False,
            "bos_token_id": 296, "eos_token_id": 297, "torch_dtype": "float32"}


def main():
    llama = base_cfg("LlamaForCausalLM", "llama")
    llama.update({"rope_theta": 500000.0, "head_dim": 8,
                  "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                   "high_freq_factor": 16.0,
                                   "original_max_position_embeddings": 1024}})
    # head_dim 8, theta 5e5: wavelengths 6.3, 170, 4600, 1.3e5 against 64 and 1024: all bands
    make("llama", llama, "F32", bytelevel_tokenizer(300, LLAMA3_REGEX),
         {"bos_token": "<|begin|>", "eos_token": "<|end|>", "add_bos_token": True,
          "chat_template": "{{ messages }}"}, 1)

    qwen = base_cfg("Qwen2ForCausalLM", "qwen2")
    qwen.update({"tie_word_embeddings": True, "rope_theta": 1000000.0, "rms_norm_eps": 1e-6,
                 "num_key_value_heads": 1, "torch_dtype": "bfloat16"})
    make("qwen2", qwen, "BF16", bytelevel_tokenizer(300, QWEN2_REGEX),
         {"bos_token": None, "eos_token": "<|end|>", "pad_token": "<|pad|>",
          "add_bos_token": False}, 2)

    mistral = base_cfg("MistralForCausalLM", "mistral")
    mistral.update({"head_dim": None, "rope_scaling": {"type": "linear", "factor": 4.0},
                    "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "float16"})
    make("mistral", mistral, "F16", spm_tokenizer(300),
         {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "add_bos_token": True,
          "add_eos_token": False}, 3)

    qwen3 = base_cfg("Qwen3ForCausalLM", "qwen3")
    qwen3.update({"tie_word_embeddings": True, "rope_theta": 1000000.0, "rms_norm_eps": 1e-6,
                  "head_dim": 16, "attention_bias": False, "max_position_embeddings": 40960,
                  "torch_dtype": "bfloat16"})
    make("qwen3", qwen3, "BF16", bytelevel_tokenizer(300, QWEN2_REGEX),
         {"bos_token": None, "eos_token": "<|end|>", "pad_token": "<|pad|>",
          "add_bos_token": False}, 4)

    phi3 = base_cfg("Phi3ForCausalLM", "phi3")
    phi3.update({"hidden_size": 64, "intermediate_size": 96, "partial_rotary_factor": 0.75,
                 "original_max_position_embeddings": 32, "sliding_window": 2047,
                 "bos_token_id": 1, "eos_token_id": 2, "attention_bias": False,
                 "rope_scaling": {"type": "longrope",
                                  "long_factor": [1.0, 1.5, 3.0, 7.0, 20.0, 60.0],
                                  "short_factor": [1.0, 1.1, 1.3, 1.6, 2.0, 2.5]},
                 "torch_dtype": "float16"})
    make("phi3", phi3, "F16", spm_tokenizer(300, ("<|endoftext|>", "<|end|>")),
         {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "add_bos_token": True,
          "add_eos_token": False}, 5)

    gemma = base_cfg("Gemma3ForCausalLM", "gemma3_text")
    n_layer, pattern = 6, 6
    gemma.update({"num_hidden_layers": n_layer, "head_dim": 32, "query_pre_attn_scalar": 32,
                  "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
                  "rope_scaling": {"rope_type": "linear", "factor": 4.0},
                  "sliding_window": 4, "sliding_window_pattern": pattern,
                  "layer_types": ["sliding_attention" if (i + 1) % pattern else "full_attention"
                                  for i in range(n_layer)],
                  "hidden_activation": "gelu_pytorch_tanh", "final_logit_softcapping": None,
                  "attn_logit_softcapping": None, "tie_word_embeddings": True,
                  "bos_token_id": 2, "eos_token_id": 1, "pad_token_id": 0,
                  "torch_dtype": "bfloat16"})
    make("gemma3", gemma, "BF16", gemma_tokenizer(300),
         {"bos_token": "<bos>", "eos_token": "<eos>", "unk_token": "<unk>", "pad_token": "<pad>",
          "add_bos_token": True, "add_eos_token": False}, 4)


if __name__ == "__main__":
    main()

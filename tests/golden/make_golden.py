#!/usr/bin/python3
"""make_golden.py - golden logits for tests/test_model_golden.c from an independent implementation.

For each configuration below this script
  1. makes a tiny random llama, qwen2, qwen3, phi3 or gemma3 model; quantized tensors are random
     *valid block bytes*,
  2. writes it as GGUF with its own minimal writer (no code shared with the C writer),
  3. dequantizes every tensor from those bytes with its own numpy reading of the ggml block
     layouts (so a layout misunderstanding on either side shows up as a mismatch),
  4. runs the prompt through a float64 numpy forward pass and writes the logits of every position.

Outputs, in this folder: <name>.gguf and <name>.logits. A .logits file is little-endian:
  "ELGL", u32 version (1), u32 n_tokens, u32 n_vocab, i32 tokens[n_tokens],
  f32 exact[n_tokens][n_vocab]    (row i: the logits after tokens[0..i] at positions 0..i)
  f32 act_q8[n_tokens][n_vocab]   (the same, with every matmul input rounded as ggml-style
                                   engines do before a quantized dot product: to q8_0 blocks for
                                   q8_0/q4_0 weights, to q8_K blocks for q4_K/q6_K weights)
The second set lets the C test check quantized models tightly; the first bounds how far the
activation rounding takes them from exact arithmetic.
The models carry no tokenizer: the C loader accepts a GGUF without tokenizer.ggml.* keys as a
logits-only model.

gemma3 follows llama.cpp's reading of its GGUF (llama-model.cpp, models/gemma3.cpp): the norm
weights hold Hugging Face's 1 + w and are applied as they are; embeddings times sqrt(n_embd);
per-head RMSNorm of Q and K before NEOX RoPE; RMSNorm of the attention and FFN outputs before
their residuals; GELU (tanh) gating; in sliding-window layers (all but every pattern-th) a row
sees the positions p - window < j <= p, rotated with rope.freq_base_swa and no scaling; scores
scaled by 1/sqrt(head_dim); logits soft-capped when final_logit_softcapping is set.

qwen3 and phi3 follow Hugging Face's modeling_qwen3.py / modeling_phi3.py: qwen3 RMS-normalizes
each Q and K head (weights of head_dim) before RoPE and may have head_dim != dim / heads; phi3
stores Q, K, V as one attn_qkv matrix (Q rows, then K, then V) and gate and up as one ffn_up of
2*ff rows (gate first, as Phi3MLP's chunk(2) takes it), and its longrope scaling divides the
frequencies by rope_factors_short or _long and multiplies cos and sin by an attention factor.
Which set applies follows llama.cpp: the long one when the context (n_ctx 32 in the C test) is
larger than rope.scaling.original_context_length; the configurations below use both cases.

Run with /usr/bin/python3 (needs numpy). Deterministic: the same files every time.
"""
import math
import os
import struct
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

# ---------------------------------------------------------------- GGUF writer

GGUF_U32, GGUF_F32, GGUF_STRING, GGUF_ARRAY = 4, 6, 8, 9
ALIGN = 32
TYPE_ID = {"f32": 0, "f16": 1, "q4_0": 2, "q8_0": 8, "q4_k": 12, "q6_k": 14, "bf16": 30}


def gguf_str(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf_kv(key, value):
    out = gguf_str(key)
    if isinstance(value, str):
        return out + struct.pack("<I", GGUF_STRING) + gguf_str(value)
    if isinstance(value, float):
        return out + struct.pack("<If", GGUF_F32, value)
    if isinstance(value, int):
        return out + struct.pack("<II", GGUF_U32, value)
    raise TypeError(key)


def write_gguf(path, kvs, tensors):
    """kvs: dict; tensors: list of (name, type name, ne list, raw bytes)."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for k, v in kvs.items():
        head += gguf_kv(k, v)
    offset, data = 0, b""
    for name, tname, ne, raw in tensors:
        head += gguf_str(name) + struct.pack("<I", len(ne))
        head += b"".join(struct.pack("<Q", n) for n in ne)
        head += struct.pack("<IQ", TYPE_ID[tname], offset)
        pad = (-len(raw)) % ALIGN
        data += raw + b"\0" * pad
        offset += len(raw) + pad
    head += b"\0" * ((-len(head)) % ALIGN)
    with open(path, "wb") as f:
        f.write(head + data)


# ---------------------------------------------------------------- block layouts
# Each encoder makes random valid bytes for n_out rows of n_in values with about `std` spread;
# each decoder turns bytes back into float64 values, reading the layout independently.

def f16_bits(x):
    return np.asarray(x, dtype=np.float16).view(np.uint16)


def enc_f32(rng, n_out, n_in, std):
    return (rng.standard_normal((n_out, n_in)) * std).astype("<f4").tobytes()


def dec_f32(raw, n):
    return np.frombuffer(raw, dtype="<f4").astype(np.float64)[:n]


def enc_f16(rng, n_out, n_in, std):
    return (rng.standard_normal((n_out, n_in)) * std).astype("<f2").tobytes()


def dec_f16(raw, n):
    return np.frombuffer(raw, dtype="<f2").astype(np.float64)[:n]


def enc_bf16(rng, n_out, n_in, std):
    # any 16-bit pattern of a finite float is a valid bf16: take the top half of random f32s
    bits = (rng.standard_normal((n_out, n_in)) * std).astype("<f4").view("<u4") >> 16
    return bits.astype("<u2").tobytes()


def dec_bf16(raw, n):
    bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
    return bits.view(np.float32).astype(np.float64)[:n]


def enc_q8_0(rng, n_out, n_in, std):
    # block of 32: f16 d, int8 q[32]; x = d * q
    nb = n_out * n_in // 32
    d = f16_bits(rng.uniform(0.5, 1.5, nb) * std / 73.0)
    q = rng.integers(-127, 128, (nb, 32)).astype(np.int8)
    return b"".join(struct.pack("<H", d[i]) + q[i].tobytes() for i in range(nb))


def dec_q8_0(raw, n):
    b = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 34)
    d = b[:, :2].copy().view("<f2").astype(np.float64)
    q = b[:, 2:].view(np.int8).astype(np.float64)
    return (d * q).reshape(-1)[:n]


def enc_q4_0(rng, n_out, n_in, std):
    # block of 32: f16 d, u8 qs[16]; low nibbles are x[0..15], high nibbles x[16..31], x = d*(q-8)
    nb = n_out * n_in // 32
    d = f16_bits(rng.uniform(0.5, 1.5, nb) * std / 4.6)
    qs = rng.integers(0, 256, (nb, 16)).astype(np.uint8)
    return b"".join(struct.pack("<H", d[i]) + qs[i].tobytes() for i in range(nb))


def dec_q4_0(raw, n):
    b = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 18)
    d = b[:, :2].copy().view("<f2").astype(np.float64)
    qs = b[:, 2:]
    q = np.concatenate([qs & 0xF, qs >> 4], axis=1).astype(np.float64) - 8.0
    return (d * q).reshape(-1)[:n]


def enc_q4_k(rng, n_out, n_in, std):
    # super-block of 256 (144 bytes): f16 d, f16 dmin, u8 scales[12] (eight 6-bit scales and
    # eight 6-bit mins), u8 qs[128]; 8 sub-blocks of 32: x = d*sc*q - dmin*m
    nb = n_out * n_in // 256
    out = []
    for _ in range(nb):
        sc = rng.integers(32, 64, 8)
        mn = rng.integers(32, 64, 8)
        d = rng.uniform(0.5, 1.5) * std / (47.0 * 4.6)
        dmin = d * 7.5 * rng.uniform(0.9, 1.1)  # mins roughly centre the 0..15 quants
        s = np.zeros(12, dtype=np.uint8)
        for j in range(8):
            if j < 4:
                s[j] = sc[j] & 63
                s[j + 4] = mn[j] & 63
            else:
                s[j + 4] = (sc[j] & 0xF) | ((mn[j] & 0xF) << 4)
                s[j - 4] |= (sc[j] >> 4) << 6
                s[j] |= (mn[j] >> 4) << 6
        qs = rng.integers(0, 256, 128).astype(np.uint8)
        out.append(struct.pack("<HH", f16_bits(d), f16_bits(dmin)) + s.tobytes() + qs.tobytes())
    return b"".join(out)


def q4_k_scale_min(s, j):
    if j < 4:
        return s[j] & 63, s[j + 4] & 63
    return (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4), (s[j + 4] >> 4) | ((s[j] >> 6) << 4)


def dec_q4_k(raw, n):
    b = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 144)
    y = []
    for blk in b:
        d = float(blk[0:2].copy().view("<f2")[0])
        dmin = float(blk[2:4].copy().view("<f2")[0])
        s, qs = blk[4:16].astype(np.int64), blk[16:144]
        for c in range(4):  # each 32 bytes of qs: low nibbles are sub-block 2c, high 2c+1
            q = qs[32 * c:32 * c + 32]
            for half, vals in ((0, q & 0xF), (1, q >> 4)):
                sc, m = q4_k_scale_min(s, 2 * c + half)
                y.append(d * sc * vals.astype(np.float64) - dmin * m)
    return np.concatenate(y)[:n]


def enc_q6_k(rng, n_out, n_in, std):
    # super-block of 256 (210 bytes): u8 ql[128] (low 4 bits), u8 qh[64] (high 2 bits),
    # i8 scales[16] (one per 16 values), f16 d; x = d * scale * (q - 32)
    nb = n_out * n_in // 256
    out = []
    for _ in range(nb):
        ql = rng.integers(0, 256, 128).astype(np.uint8)
        qh = rng.integers(0, 256, 64).astype(np.uint8)
        sc = (rng.integers(16, 64, 16) * rng.choice([-1, 1], 16)).astype(np.int8)
        d = rng.uniform(0.5, 1.5) * std / (40.0 * 18.5)
        out.append(ql.tobytes() + qh.tobytes() + sc.tobytes() + struct.pack("<H", f16_bits(d)))
    return b"".join(out)


def dec_q6_k(raw, n):
    b = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 210)
    y = []
    for blk in b:
        ql, qh = blk[0:128].astype(np.int64), blk[128:192].astype(np.int64)
        sc = blk[192:208].view(np.int8).astype(np.float64)
        d = float(blk[208:210].copy().view("<f2")[0])
        out = np.zeros(256)
        for h in range(2):  # two halves of 128 values
            L, H, S = ql[64 * h:64 * h + 64], qh[32 * h:32 * h + 32], sc[8 * h:8 * h + 8]
            for l in range(32):
                q = [(L[l] & 0xF) | (((H[l] >> 0) & 3) << 4),
                     (L[l + 32] & 0xF) | (((H[l] >> 2) & 3) << 4),
                     (L[l] >> 4) | (((H[l] >> 4) & 3) << 4),
                     (L[l + 32] >> 4) | (((H[l] >> 6) & 3) << 4)]
                for k in range(4):
                    out[128 * h + 32 * k + l] = d * S[l // 16 + 2 * k] * (q[k] - 32)
        y.append(out)
    return np.concatenate(y)[:n]


CODEC = {
    "f32": (enc_f32, dec_f32), "f16": (enc_f16, dec_f16), "bf16": (enc_bf16, dec_bf16),
    "q8_0": (enc_q8_0, dec_q8_0), "q4_0": (enc_q4_0, dec_q4_0),
    "q4_k": (enc_q4_k, dec_q4_k), "q6_k": (enc_q6_k, dec_q6_k),
}

# ---------------------------------------------------------------- model


def make_model(cfg, rng):
    """Returns (tensors for the GGUF, float64 weights by name)."""
    d, V, L, ff = cfg["dim"], cfg["vocab"], cfg["layers"], cfg["ff"]
    nh, nkv = cfg["heads"], cfg["kv_heads"]
    hd = cfg.get("head_dim", d // nh)
    tensors, W = [], {}

    def matrix(name, n_in, n_out, tname, std):
        enc, dec = CODEC[tname]
        raw = enc(rng, n_out, n_in, std)
        tensors.append((name, tname, [n_in, n_out], raw))
        W[name] = dec(raw, n_in * n_out).reshape(n_out, n_in)

    def vector(name, values):
        raw = np.asarray(values, dtype="<f4").tobytes()
        tensors.append((name, "f32", [len(values)], raw))
        W[name] = np.frombuffer(raw, dtype="<f4").astype(np.float64)

    wt = cfg["type"]
    # the embedding scale only matters where it doubles as the output matrix (tied)
    matrix("token_embd.weight", d, V, cfg.get("embd_type", wt), 2.0 * d ** -0.5)
    for i in range(L):
        p = "blk.%d." % i
        vector(p + "attn_norm.weight", 1.0 + 0.1 * rng.standard_normal(d))
        if cfg["arch"] == "phi3":
            matrix(p + "attn_qkv.weight", d, (nh + 2 * nkv) * hd, wt, d ** -0.5)
        else:
            matrix(p + "attn_q.weight", d, nh * hd, wt, d ** -0.5)
            matrix(p + "attn_k.weight", d, nkv * hd, wt, d ** -0.5)
            matrix(p + "attn_v.weight", d, nkv * hd, wt, d ** -0.5)
        matrix(p + "attn_output.weight", nh * hd, d, wt, d ** -0.5)
        if cfg["arch"] == "qwen3":
            vector(p + "attn_q_norm.weight", 1.0 + 0.3 * rng.standard_normal(hd))
            vector(p + "attn_k_norm.weight", 1.0 + 0.3 * rng.standard_normal(hd))
        if cfg["arch"] == "qwen2":
            vector(p + "attn_q.bias", 0.2 * rng.standard_normal(nh * hd))
            vector(p + "attn_k.bias", 0.2 * rng.standard_normal(nkv * hd))
            vector(p + "attn_v.bias", 0.2 * rng.standard_normal(nkv * hd))
        if cfg["arch"] == "gemma3":
            vector(p + "attn_q_norm.weight", 1.0 + 0.3 * rng.standard_normal(hd))
            vector(p + "attn_k_norm.weight", 1.0 + 0.3 * rng.standard_normal(hd))
            vector(p + "post_attention_norm.weight", 1.0 + 0.1 * rng.standard_normal(d))
            vector(p + "post_ffw_norm.weight", 1.0 + 0.1 * rng.standard_normal(d))
        vector(p + "ffn_norm.weight", 1.0 + 0.1 * rng.standard_normal(d))
        if cfg["arch"] == "phi3":
            matrix(p + "ffn_up.weight", d, 2 * ff, wt, d ** -0.5)
        else:
            matrix(p + "ffn_gate.weight", d, ff, wt, d ** -0.5)
            matrix(p + "ffn_up.weight", d, ff, wt, d ** -0.5)
        matrix(p + "ffn_down.weight", ff, d, wt, ff ** -0.5)
    vector("output_norm.weight", 1.0 + 0.1 * rng.standard_normal(d))
    if not cfg["tied"]:
        matrix("output.weight", d, V, cfg.get("out_type", wt), d ** -0.5)
    if cfg.get("rope_freqs"):
        vector("rope_freqs.weight", rng.uniform(1.0, 8.0, cfg.get("n_rot", hd) // 2))
    if "orig_ctx" in cfg:
        vector("rope_factors_long.weight", rng.uniform(1.0, 40.0, cfg.get("n_rot", hd) // 2))
        vector("rope_factors_short.weight", rng.uniform(0.9, 3.0, cfg.get("n_rot", hd) // 2))
    return tensors, W


def metadata(cfg, name):
    a = cfg["arch"]
    kv = {
        "general.architecture": a,
        "general.name": name,
        a + ".context_length": 256,
        a + ".embedding_length": cfg["dim"],
        a + ".block_count": cfg["layers"],
        a + ".feed_forward_length": cfg["ff"],
        a + ".attention.head_count": cfg["heads"],
        a + ".attention.head_count_kv": cfg["kv_heads"],
        a + ".attention.layer_norm_rms_epsilon": cfg["eps"],
        a + ".rope.freq_base": cfg["base"],
    }
    if "n_rot" in cfg:
        kv[a + ".rope.dimension_count"] = cfg["n_rot"]
    if "linear_scale" in cfg:
        kv[a + ".rope.scaling.type"] = "linear"
        kv[a + ".rope.scaling.factor"] = cfg["linear_scale"]
    if "head_dim" in cfg:
        kv[a + ".attention.key_length"] = cfg["head_dim"]
        kv[a + ".attention.value_length"] = cfg["head_dim"]
    if "window" in cfg:
        kv[a + ".attention.sliding_window"] = cfg["window"]
        kv[a + ".attention.sliding_window_pattern"] = cfg["pattern"]
        kv[a + ".rope.freq_base_swa"] = cfg["base_swa"]
    if "softcap" in cfg:
        kv[a + ".final_logit_softcapping"] = cfg["softcap"]
    if "orig_ctx" in cfg:
        kv[a + ".context_length"] = cfg["ctx"]
        kv[a + ".rope.scaling.original_context_length"] = cfg["orig_ctx"]
        kv[a + ".rope.scaling.attn_factor"] = attn_factor(cfg)
    return kv


def attn_factor(cfg):
    """longrope's magnitude factor as transformers computes it from the two context lengths."""
    scale = cfg["ctx"] / cfg["orig_ctx"]
    return math.sqrt(1 + math.log(scale) / math.log(cfg["orig_ctx"])) if scale > 1 else 1.0


# ---------------------------------------------------------------- float64 forward


def rmsnorm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope(x, pos, cfg, freqs, swa=False, mag=1.0):
    """x: [n, heads, hd]; rotates the first n_rot dims of each head; cos and sin times mag (a
    sliding-window layer's with base_swa and neither scaling, frequency factors nor mag)."""
    hd = x.shape[2]
    n_rot = cfg.get("n_rot", hd)
    half = n_rot // 2
    base = cfg["base_swa"] if swa else cfg["base"]
    theta = base ** (-2.0 * np.arange(half) / n_rot)
    if freqs is not None and not swa:
        theta = theta / freqs
    ang = (pos[:, None] / (1.0 if swa else cfg.get("linear_scale", 1.0))) * theta[None, :]
    mag = 1.0 if swa else mag
    c, s = mag * np.cos(ang)[:, None, :], mag * np.sin(ang)[:, None, :]
    y = x.copy()
    if cfg["arch"] in ("qwen2", "qwen3", "phi3", "gemma3"):  # NEOX: pairs (i, i + half)
        a, b = x[:, :, :half], x[:, :, half:n_rot]
        y[:, :, :half], y[:, :, half:n_rot] = a * c - b * s, a * s + b * c
    else:  # NORM: pairs (2i, 2i + 1)
        a, b = x[:, :, 0:n_rot:2], x[:, :, 1:n_rot:2]
        y[:, :, 0:n_rot:2], y[:, :, 1:n_rot:2] = a * c - b * s, a * s + b * c
    return y


def round_activations(x, wtype):
    """x rounded per block the way a quantized dot product sees it: d = max|x|/127, q = rint(x/d),
    clamped to +-127; q8_0 (blocks of 32) stores d as f16, q8_K (blocks of 256) as f32. q8_K
    follows ggml's quantize_row_q8_K: the scale is -127 / (the block's value of largest
    magnitude), q = min(127, nearest(x * scale)), d = 1 / scale (the same up to the rounding of
    the scale, which decides an element sitting near a half step: one such flip moved phi3_q4_k's
    last logits by 0.11)."""
    block = {"q8_0": 32, "q4_0": 32, "q4_k": 256, "q6_k": 256}.get(wtype)
    if block is None:
        return x
    if block == 256:
        b = x.reshape(-1, block).astype(np.float32)
        big = b[np.arange(len(b)), np.abs(b).argmax(axis=1)]
        with np.errstate(divide="ignore"):
            iscale = np.where(big != 0, np.float32(-127.0) / np.where(big != 0, big, 1), 0)
        iscale = iscale.astype(np.float32)
        q = np.minimum(127, np.rint(b * iscale[:, None]))
        d = np.where(iscale != 0, np.float32(1.0) / np.where(iscale != 0, iscale, 1), 0)
        return (q.astype(np.float64) * d.astype(np.float32).astype(np.float64)[:, None]).reshape(
            x.shape)
    b = x.reshape(-1, block).astype(np.float32)
    d = (np.abs(b).max(axis=1, keepdims=True) / np.float32(127.0)).astype(np.float32)
    inv = np.where(d > 0, np.float32(1.0) / np.where(d > 0, d, 1), 0).astype(np.float32)
    q = np.clip(np.rint(b * inv), -127, 127)
    d = d.astype(np.float16)
    return (q.astype(np.float64) * d.astype(np.float64)).reshape(x.shape)


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def forward(cfg, W, tokens, types=None):
    """float64 forward; with types (tensor name -> type name), matmul inputs are rounded."""
    def mm(h, name):
        if types is not None:
            h = round_activations(h, types[name])
        return h @ W[name].T

    d, nh, nkv = cfg["dim"], cfg["heads"], cfg["kv_heads"]
    hd, n, eps = cfg.get("head_dim", d // nh), len(tokens), cfg["eps"]
    gemma3 = cfg["arch"] == "gemma3"
    pos = np.arange(n, dtype=np.float64)
    freqs = W.get("rope_freqs.weight")
    mag = 1.0
    if "orig_ctx" in cfg:  # longrope: the set the C test's context of TEST_N_CTX cells takes
        freqs = W["rope_factors_long.weight" if TEST_N_CTX > cfg["orig_ctx"]
                  else "rope_factors_short.weight"]
        mag = np.float64(np.float32(attn_factor(cfg)))  # as stored in the file
    x = W["token_embd.weight"][tokens] * (np.sqrt(d) if gemma3 else 1.0)
    mask = np.triu(np.full((n, n), -np.inf), 1)
    # a sliding-window layer also masks the cells window or more positions back
    window_mask = mask + np.tril(np.full((n, n), -np.inf), -cfg.get("window", n))
    for i in range(cfg["layers"]):
        p = "blk.%d." % i
        swa = "window" in cfg and i % cfg["pattern"] < cfg["pattern"] - 1
        h = rmsnorm(x, W[p + "attn_norm.weight"], eps)
        if p + "attn_qkv.weight" in W:  # phi3: Q rows, K rows, V rows of one product
            qkv = mm(h, p + "attn_qkv.weight")
            q, k, v = qkv[:, :nh * hd], qkv[:, nh * hd:(nh + nkv) * hd], qkv[:, (nh + nkv) * hd:]
        else:
            q = mm(h, p + "attn_q.weight") + W.get(p + "attn_q.bias", 0.0)
            k = mm(h, p + "attn_k.weight") + W.get(p + "attn_k.bias", 0.0)
            v = mm(h, p + "attn_v.weight") + W.get(p + "attn_v.bias", 0.0)
        q, k, v = q.reshape(n, nh, hd), k.reshape(n, nkv, hd), v.reshape(n, nkv, hd)
        if p + "attn_q_norm.weight" in W:  # qwen3, gemma3: each head normalized before RoPE
            q = rmsnorm(q, W[p + "attn_q_norm.weight"], eps)
            k = rmsnorm(k, W[p + "attn_k_norm.weight"], eps)
        q = rope(q, pos, cfg, freqs, swa, mag)
        k = rope(k, pos, cfg, freqs, swa, mag)
        out = np.zeros((n, nh, hd))
        for hh in range(nh):
            kh = hh // (nh // nkv)
            s = q[:, hh, :] @ k[:, kh, :].T / np.sqrt(hd) + (window_mask if swa else mask)
            s = np.exp(s - s.max(axis=1, keepdims=True))
            s /= s.sum(axis=1, keepdims=True)
            out[:, hh, :] = s @ v[:, kh, :]
        o = mm(out.reshape(n, nh * hd), p + "attn_output.weight")
        x = x + (rmsnorm(o, W[p + "post_attention_norm.weight"], eps) if gemma3 else o)
        h = rmsnorm(x, W[p + "ffn_norm.weight"], eps)
        if cfg["arch"] == "phi3":  # gate_up: the first half gates the second
            gu = mm(h, p + "ffn_up.weight")
            g, u = gu[:, :cfg["ff"]], gu[:, cfg["ff"]:]
        else:
            g = mm(h, p + "ffn_gate.weight")
            u = mm(h, p + "ffn_up.weight")
        act = gelu_tanh(g) if gemma3 else g / (1.0 + np.exp(-g))
        f = mm(act * u, p + "ffn_down.weight")
        x = x + (rmsnorm(f, W[p + "post_ffw_norm.weight"], eps) if gemma3 else f)
    out_name = "output.weight" if "output.weight" in W else "token_embd.weight"
    logits = mm(rmsnorm(x, W["output_norm.weight"], eps), out_name)
    if "softcap" in cfg:
        logits = cfg["softcap"] * np.tanh(logits / cfg["softcap"])
    return logits


# ---------------------------------------------------------------- configurations

BASE = dict(vocab=300, eps=1e-5, base=10000.0, tied=False)
CONFIGS = {
    # float32, grouped-query attention (2 query heads per KV head), untied output, 2 blocks
    "llama_f32_gqa": dict(BASE, arch="llama", type="f32", dim=64, heads=4, kv_heads=2, layers=2,
                          ff=96),
    # float16, tied output, partial rotary (8 of 16 dims), another eps
    "llama_f16_tied": dict(BASE, arch="llama", type="f16", dim=64, heads=4, kv_heads=4, layers=1,
                           ff=128, tied=True, n_rot=8, eps=1e-6),
    # qwen2: NEOX rope, q/k/v biases, bf16, 4 query heads per KV head, large rope base
    "qwen2_bf16_bias": dict(BASE, arch="qwen2", type="bf16", dim=64, heads=4, kv_heads=1,
                            layers=2, ff=128, tied=True, base=1000000.0),
    # llama3-style rope frequency factors, q8_0 everywhere (embedding too)
    "llama3_q8_0_ropefreqs": dict(BASE, arch="llama", type="q8_0", dim=128, heads=4, kv_heads=2,
                                  layers=1, ff=192, rope_freqs=True, base=500000.0),
    # q4_0 with linear rope scaling (factor 4)
    "llama_q4_0_linear": dict(BASE, arch="llama", type="q4_0", dim=128, heads=8, kv_heads=2,
                              layers=1, ff=160, linear_scale=4.0, embd_type="f16"),
    # q4_k blocks with a q6_k output matrix (what Q4_K_M files do)
    "llama_q4_k": dict(BASE, arch="llama", type="q4_k", dim=256, heads=4, kv_heads=2, layers=1,
                       ff=256, out_type="q6_k"),
    # qwen2 in q6_k, tied to a q6_k embedding
    "qwen2_q6_k": dict(BASE, arch="qwen2", type="q6_k", dim=256, heads=4, kv_heads=2, layers=1,
                       ff=256, tied=True),
    # gemma3: head_dim 32 though dim / heads is 16, one KV head, tied; a window of 3 in layers 0
    # and 1 (pattern 3: layer 2 global) over the 7-token prompt, each kind its own rope base
    "gemma3_f32_swa": dict(BASE, arch="gemma3", type="f32", dim=64, heads=4, kv_heads=1,
                           head_dim=32, layers=3, ff=96, tied=True, eps=1e-6, base=1000000.0,
                           base_swa=10000.0, window=3, pattern=3, seed=2000),
    # gemma3 in q8_0: linear rope scaling (global layers only), a window of 4 every other layer,
    # soft-capped logits
    "gemma3_q8_0_softcap": dict(BASE, arch="gemma3", type="q8_0", dim=128, heads=4, kv_heads=2,
                                head_dim=64, layers=2, ff=160, tied=True, eps=1e-6,
                                base=1000000.0, base_swa=10000.0, window=4, pattern=2,
                                linear_scale=8.0, softcap=6.0, seed=2001),
}

# New architectures, each seeded by its name, so that adding one leaves every other file as it was.
ARCH_CONFIGS = {
    # qwen3: per-head Q/K norms, head_dim 32 while dim / heads is 16, GQA, tied, f32
    "qwen3_f32_headdim": dict(BASE, arch="qwen3", type="f32", dim=64, heads=4, kv_heads=2,
                              head_dim=32, layers=2, ff=96, tied=True, base=1000000.0, eps=1e-6),
    # qwen3 in q4_k with a q6_k tied embedding, head_dim 128 against dim / heads 64
    "qwen3_q4_k": dict(BASE, arch="qwen3", type="q4_k", dim=256, heads=4, kv_heads=2,
                       head_dim=128, layers=1, ff=256, tied=True, embd_type="q6_k", eps=1e-6),
    # phi3: fused qkv and gate_up, f16, GQA; original context 16 < the test's 32: long factors
    "phi3_f16_longrope": dict(BASE, arch="phi3", type="f16", dim=64, heads=4, kv_heads=2,
                              layers=2, ff=96, ctx=256, orig_ctx=16),
    # phi3 in q4_k (a q6_k output): views of row ranges of K-quant super-blocks; long factors
    "phi3_q4_k": dict(BASE, arch="phi3", type="q4_k", dim=256, heads=4, kv_heads=2, layers=1,
                      ff=256, ctx=4096, orig_ctx=16, out_type="q6_k"),
    # phi3 in q8_0 with Phi-3.5's context lengths (131072, 4096): short factors, factor 1.19
    "phi3_q8_0": dict(BASE, arch="phi3", type="q8_0", dim=128, heads=4, kv_heads=4, layers=1,
                      ff=160, ctx=131072, orig_ctx=4096, eps=1e-5),
}

N_PROMPT = 7
TEST_N_CTX = 32  # tests/test_model_golden.c's context


def main():
    # the first models' seeds count them in name order; later ones carry their own, so adding
    # one changes no other file; the new architectures' are their names' CRC-32
    numbered = sorted(name for name, cfg in CONFIGS.items() if "seed" not in cfg)
    runs = [(cfg["seed"] if "seed" in cfg else 1000 + numbered.index(name), name, cfg)
            for name, cfg in sorted(CONFIGS.items())]
    runs += [(zlib.crc32(n.encode()), n, c) for n, c in sorted(ARCH_CONFIGS.items())]
    for seed, name, cfg in runs:
        rng = np.random.default_rng(seed)
        tensors, W = make_model(cfg, rng)
        write_gguf(os.path.join(HERE, name + ".gguf"), metadata(cfg, name), tensors)
        tokens = rng.integers(0, cfg["vocab"], N_PROMPT)
        logits = forward(cfg, W, tokens)
        logits_q = forward(cfg, W, tokens, {t[0]: t[1] for t in tensors})
        with open(os.path.join(HERE, name + ".logits"), "wb") as f:
            f.write(b"ELGL" + struct.pack("<III", 1, N_PROMPT, cfg["vocab"]))
            f.write(tokens.astype("<i4").tobytes())
            f.write(logits.astype("<f4").tobytes())
            f.write(logits_q.astype("<f4").tobytes())
        print("%-24s logits |max| %.3f, activation rounding moves them by %.2e (relative)" %
              (name, np.abs(logits).max(),
               np.abs(logits - logits_q).max() / max(1.0, np.abs(logits).max())))


if __name__ == "__main__":
    main()

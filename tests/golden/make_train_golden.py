#!/usr/bin/python3
"""make_train_golden.py - golden losses, gradients and training steps for tests/test_train_golden.c,
from an independent implementation: PyTorch autograd and torch.optim.AdamW (Debian's python3-torch).

The model is written here from the LLaMA definition (RMSNorm, rotary embeddings on adjacent pairs
as Meta's reference code applies them through complex numbers, causal grouped-query attention,
SwiGLU, tied or untied head), not from the C code.

For each case a file train_<case>.bin is written, little-endian:
  "ELTG", u32 version (1),
  i32 dim, n_layer, n_head, n_head_kv, n_ff, n_vocab, tied, B, T, rank, f32 alpha,
  i32 n_steps, accum, warmup, f32 lr, min_ratio, weight_decay, beta1, beta2, eps, clip,
  i32 tokens[n_steps*accum][B][T], i32 targets[...], f32 mask[...],
  f32 base[n_base]            initial base parameters in the C table's order (see below)
  f32 lora[n_lora]            initial LoRA parameters (A, B per layer and target q..down)
  f32 loss0                   loss of the first micro-batch
  f32 grad[n_trainable]       d loss0 / d trainable parameters (base, or LoRA if rank > 0)
  f32 losses[n_steps]         mean micro-batch loss of each optimizer step
  f32 final[n_trainable]      trainable parameters after n_steps steps
Version 2 (the quantization-aware cases) adds after alpha: i32 int4_weights, i32 n_sites,
f32 scales[n_sites] (the static int8 scale of each linear's input, per layer q..down, then the
output head's; 0: a float input), i32 n_lora, f32 lora_scales[n_lora] (none, or per layer and
target q..down the scales of the adapter term's x, A, A x and B on int8 grids, as under a
quantization profile). There every site's input goes through
torch.fake_quantize_per_tensor_affine(x, scale, 0, -127, 127) and, with int4_weights, every block
weight through torch.fake_quantize_per_channel_affine(w, amax_row / 7, 0, 0, -7, 7); LoRA terms
take the float input. Their files hold no steps (n_steps 0 after the first loss and gradients):
a rounding that lands the other way after a step would make a comparison of steps a lottery.
The scales are chosen from a float forward so that some inputs clip, and the seed so that no
input lies within 3e-4 of a step of a rounding boundary (the two implementations' floats differ
by far less), so the golden's grid values are the C code's. Nor do they hold losses or final
parameters.
Base order: token_embd [V][D]; per layer attn_norm [D], ffn_norm [D], wq [H*hd][D], wk, wv
[KVH*hd][D], wo [D][H*hd], w_gate, w_up [F][D], w_down [D][F]; output_norm [D]; output [V][D]
(untied only). Weights are [out][in]; y = x W^T.

The schedule: lr * (step+1)/warmup during warmup, then a cosine to lr * min_ratio at n_steps.
Weight decay applies to matrices (embeddings included), not to norms; LoRA A/B get none.
Gradients are clipped to a global L2 norm (torch.nn.utils.clip_grad_norm_) before each step.

Run with /usr/bin/python3. Deterministic: the same files every time.
"""
import math
import os
import struct

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
torch.set_num_threads(1)

TARGETS = ["wq", "wk", "wv", "wo", "w_gate", "w_up", "w_down"]


def rms_norm(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rope(x, T, hd, base):
    # x [B, T, heads, hd]: rotate the complex numbers (x[2i], x[2i+1]) by t * base^(-2i/hd)
    freqs = 1.0 / (base ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
    ang = torch.outer(torch.arange(T, dtype=torch.float64), freqs)
    rot = torch.polar(torch.ones_like(ang), ang).to(torch.complex64)  # [T, hd/2]
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], hd // 2, 2))
    out = torch.view_as_real(xc * rot[None, :, None, :]).flatten(3)
    return out.type_as(x)


class Model:
    def __init__(self, cfg, gen):
        D, L, H, KVH, F, V = (cfg[k] for k in ("dim", "n_layer", "n_head", "n_head_kv", "n_ff", "n_vocab"))
        hd = D // H
        self.cfg = cfg
        self.base = []  # (name, tensor) in the C table's order

        def mat(name, o, i, scale=0.3):
            t = (torch.rand(o, i, generator=gen) * 2 - 1) * scale
            self.base.append((name, t))
            return t

        def vec(name, n):
            t = torch.rand(n, generator=gen) + 0.5
            self.base.append((name, t))
            return t

        self.embd = mat("embd", V, D, 1.0)
        self.layers = []
        for il in range(L):
            ly = {}
            ly["attn_norm"] = vec("attn_norm", D)
            ly["ffn_norm"] = vec("ffn_norm", D)
            ly["wq"] = mat("wq", H * hd, D)
            ly["wk"] = mat("wk", KVH * hd, D)
            ly["wv"] = mat("wv", KVH * hd, D)
            ly["wo"] = mat("wo", D, H * hd)
            ly["w_gate"] = mat("w_gate", F, D)
            ly["w_up"] = mat("w_up", F, D)
            ly["w_down"] = mat("w_down", D, F)
            self.layers.append(ly)
        self.out_norm = vec("out_norm", D)
        self.output = self.embd if cfg["tied"] else mat("output", V, D, 0.3)
        self.lora = []  # (layer, target, A [r][in], B [out][r])
        r = cfg["rank"]
        if r:
            for il, ly in enumerate(self.layers):
                for tname in TARGETS:
                    o, i = ly[tname].shape
                    a = (torch.rand(r, i, generator=gen) * 2 - 1) * 0.5
                    b = (torch.rand(o, r, generator=gen) * 2 - 1) * 0.5
                    self.lora.append((il, tname, a, b))

    def trainable(self):
        if self.cfg["rank"]:
            out = []
            for _, _, a, b in self.lora:
                out += [a, b]
            return out
        return [t for _, t in self.base]

    def decays(self):
        if self.cfg["rank"]:
            return [False] * (2 * len(self.lora))
        return [t.dim() == 2 for _, t in self.base]

    def site(self, il, tname):
        return il * len(TARGETS) + TARGETS.index(tname)

    def fq_input(self, site, x):
        scales = self.cfg.get("scales")
        if scales is None or scales[site] == 0:
            return x
        self.seen.append((x.detach(), scales[site]))
        return torch.fake_quantize_per_tensor_affine(x, scales[site], 0, -127, 127)

    def weight(self, il, tname):
        w = self.layers[il][tname]
        if not self.cfg.get("int4"):
            return w
        scale = (w.detach().abs().amax(1) / 7).to(torch.float32)
        return torch.fake_quantize_per_channel_affine(w, scale, torch.zeros(w.shape[0], dtype=torch.int32), 0, -7, 7)

    def fq_lora(self, site, x, a, b):
        """The adapter term on a quantization profile's int8 grids: x, A, A x and B each at the
        slot's scale (lora_scales[site] = x, a, t, b)."""
        xs, as_, ts, bs = self.cfg["lora_scales"][site]
        fq = torch.fake_quantize_per_tensor_affine
        self.seen.append((x.detach(), xs))
        t = fq(x, xs, 0, -127, 127) @ fq(a, as_, 0, -127, 127).T
        self.seen.append((t.detach(), ts))
        return fq(t, ts, 0, -127, 127) @ fq(b, bs, 0, -127, 127).T

    def linear(self, il, tname, x):
        y = self.fq_input(self.site(il, tname), x) @ self.weight(il, tname).T
        for jl, t, a, b in self.lora:
            if jl == il and t == tname:
                if self.cfg.get("lora_scales"):
                    term = self.fq_lora(self.site(il, tname), x, a, b)
                else:
                    t_ = x @ a.T
                    if self.record_lora is not None:
                        self.record_lora(self.site(il, tname), x, t_)
                    term = t_ @ b.T
                y = y + (self.cfg["alpha"] / self.cfg["rank"]) * term
        return y

    def loss(self, tokens, targets, mask):
        c = self.cfg
        D, H, KVH = c["dim"], c["n_head"], c["n_head_kv"]
        hd = D // H
        Bn, T = tokens.shape
        eps = 1e-5
        self.seen = []  # (input, scale) of every fake-quantized input: their margins
        self.record_lora = getattr(self, "record_lora", None)
        x = self.embd[tokens]  # [B, T, D]
        causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
        for il, ly in enumerate(self.layers):
            xn = rms_norm(x, ly["attn_norm"], eps)
            q = rope(self.linear(il, "wq", xn).view(Bn, T, H, hd), T, hd, 10000.0)
            k = rope(self.linear(il, "wk", xn).view(Bn, T, KVH, hd), T, hd, 10000.0)
            v = self.linear(il, "wv", xn).view(Bn, T, KVH, hd)
            k = k.repeat_interleave(H // KVH, dim=2)
            v = v.repeat_interleave(H // KVH, dim=2)
            q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # [B, H, T, hd]
            s = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
            s = s.masked_fill(~causal, float("-inf"))
            o = (torch.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(Bn, T, H * hd)
            x = x + self.linear(il, "wo", o)
            xn = rms_norm(x, ly["ffn_norm"], eps)
            h = torch.nn.functional.silu(self.linear(il, "w_gate", xn)) * self.linear(il, "w_up", xn)
            x = x + self.linear(il, "w_down", h)
        head = self.fq_input(c["n_layer"] * len(TARGETS), rms_norm(x, self.out_norm, eps))
        logits = head @ self.output.T
        self.last_inputs = self.seen
        nll = torch.nn.functional.cross_entropy(logits.view(-1, c["n_vocab"]), targets.view(-1), reduction="none")
        m = mask.view(-1)
        return (nll * m).sum() / m.sum()


def lr_at(step, n_steps, warmup, lr, min_ratio):
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, n_steps - warmup))
    return lr * min_ratio + 0.5 * (lr - lr * min_ratio) * (1 + math.cos(math.pi * progress))


def flat(ts):
    return torch.cat([t.detach().reshape(-1) for t in ts])


def margin(inputs):
    """The least distance, in steps, from any fake-quantized input to a rounding boundary."""
    m = 0.5
    for x, s in inputs:
        v = (x * (1.0 / torch.tensor(s, dtype=torch.float32))).double()
        m = min(m, (v - v.floor() - 0.5).abs().min().item())
    return m


def qat_setup(name, cfg, seed):
    """The seed and scales of a quantization-aware case: scales 0.8 of each input's float amax /
    127 (so that some inputs clip), a seed whose inputs keep clear of rounding boundaries."""
    sites = cfg["n_layer"] * len(TARGETS) + 1
    while True:
        gen = torch.Generator().manual_seed(seed)
        model = Model(dict(cfg, scales=None), gen)
        Bn, T, V = cfg["B"], cfg["T"], cfg["n_vocab"]
        tokens = torch.randint(0, V, (1, Bn, T), generator=gen)
        amax = [0.0] * sites
        orig = model.fq_input

        def record(site, x):
            amax[site] = max(amax[site], x.detach().abs().max().item())
            return x
        lora_amax = [[0.0, 0.0] for _ in range(sites - 1)]  # x, t of each slot's adapter term

        def record_lora(site, x, t):
            lora_amax[site][0] = max(lora_amax[site][0], x.detach().abs().max().item())
            lora_amax[site][1] = max(lora_amax[site][1], t.detach().abs().max().item())
        model.fq_input = record
        lora_scales = None
        if cfg.get("lora_int8"):
            # a float pass measures x and t; A and B are known
            model.record_lora = record_lora
            with torch.no_grad():
                model.loss(tokens[0], tokens[0], torch.ones(Bn, T))
            ab = {(il, tn): (a.abs().max().item(), b.abs().max().item()) for il, tn, a, b in model.lora}
            lora_scales = []
            for il in range(cfg["n_layer"]):
                for tn in TARGETS:
                    site = il * len(TARGETS) + TARGETS.index(tn)
                    am, bm = ab[(il, tn)]
                    v = [0.8 * lora_amax[site][0], 0.8 * am, 0.8 * lora_amax[site][1], 0.8 * bm]
                    lora_scales.append([float(torch.tensor(x / 127, dtype=torch.float32)) for x in v])
            model.record_lora = None
        with torch.no_grad():
            model.loss(tokens[0], tokens[0], torch.ones(Bn, T))
        model.fq_input = orig
        scales = [0.8 * a / 127 if (i < sites - 1 or cfg["head_int8"]) and cfg.get("base_int8", True) else 0.0
                  for i, a in enumerate(amax)]
        scales = [float(torch.tensor(v, dtype=torch.float32)) for v in scales]
        gen = torch.Generator().manual_seed(seed)
        model = Model(dict(cfg, scales=scales, lora_scales=lora_scales), gen)
        tokens = torch.randint(0, V, (1, Bn, T), generator=gen)
        targets = torch.randint(0, V, (1, Bn, T), generator=gen)
        mask = (torch.rand(1, Bn, T, generator=gen) > 0.25).float()
        mask[:, :, 0] = 1.0
        with torch.no_grad():
            model.loss(tokens[0], targets[0], mask[0])
        if margin(model.last_inputs) >= 3e-4:
            print(f"{name}: seed {seed}, least margin {margin(model.last_inputs):.2g} of a step")
            return seed, scales, lora_scales
        seed += 1


def write_case(name, cfg, opt, seed=None):
    gen = torch.Generator().manual_seed(seed if seed is not None else 1234 + len(name))
    model = Model(cfg, gen)
    Bn, T, V = cfg["B"], cfg["T"], cfg["n_vocab"]
    nb = opt["n_steps"] * opt["accum"] or 1
    tokens = torch.randint(0, V, (nb, Bn, T), generator=gen)
    targets = torch.randint(0, V, (nb, Bn, T), generator=gen)
    mask = (torch.rand(nb, Bn, T, generator=gen) > 0.25).float()
    mask[:, :, 0] = 1.0  # never an empty mask
    base0 = flat([t for _, t in model.base])
    lora0 = flat([t for _, _, a, b in model.lora for t in (a, b)]) if model.lora else torch.zeros(0)

    params = model.trainable()
    for p in params:
        p.requires_grad_(True)
    loss0 = model.loss(tokens[0], targets[0], mask[0])
    loss0.backward()
    grad0 = flat([p.grad for p in params])
    for p in params:
        p.grad = None

    dec = model.decays()
    groups = [{"params": [p for p, d in zip(params, dec) if d], "weight_decay": opt["weight_decay"]},
              {"params": [p for p, d in zip(params, dec) if not d], "weight_decay": 0.0}]
    groups = [g for g in groups if g["params"]]
    adam = torch.optim.AdamW(groups, lr=opt["lr"], betas=(opt["beta1"], opt["beta2"]), eps=opt["eps"])
    losses = []
    for step in range(opt["n_steps"]):
        for g in adam.param_groups:
            g["lr"] = lr_at(step, opt["n_steps"], opt["warmup"], opt["lr"], opt["min_ratio"])
        total = 0.0
        for a in range(opt["accum"]):
            i = step * opt["accum"] + a
            loss = model.loss(tokens[i], targets[i], mask[i]) / opt["accum"]
            loss.backward()
            total += loss.item()
        losses.append(total)
        torch.nn.utils.clip_grad_norm_(params, opt["clip"])
        adam.step()
        adam.zero_grad(set_to_none=True)
    final = flat(params)

    with open(os.path.join(HERE, f"train_{name}.bin"), "wb") as f:
        qat = "scales" in cfg
        f.write(b"ELTG" + struct.pack("<I", 2 if qat else 1))
        f.write(struct.pack("<10i", cfg["dim"], cfg["n_layer"], cfg["n_head"], cfg["n_head_kv"], cfg["n_ff"],
                            V, int(cfg["tied"]), Bn, T, cfg["rank"]))
        f.write(struct.pack("<f", cfg["alpha"]))
        if qat:
            f.write(struct.pack("<2i", int(cfg["int4"]), len(cfg["scales"])))
            f.write(struct.pack(f"<{len(cfg['scales'])}f", *cfg["scales"]))
            lora = [v for slot in (cfg.get("lora_scales") or []) for v in slot]
            f.write(struct.pack("<i", len(lora)))
            f.write(struct.pack(f"<{len(lora)}f", *lora))
        f.write(struct.pack("<3i", opt["n_steps"], opt["accum"], opt["warmup"]))
        f.write(struct.pack("<7f", opt["lr"], opt["min_ratio"], opt["weight_decay"], opt["beta1"],
                            opt["beta2"], opt["eps"], opt["clip"]))
        f.write(tokens.to(torch.int32).numpy().tobytes())
        f.write(targets.to(torch.int32).numpy().tobytes())
        f.write(mask.numpy().astype("<f4").tobytes())
        f.write(base0.numpy().astype("<f4").tobytes())
        f.write(lora0.numpy().astype("<f4").tobytes())
        f.write(struct.pack("<f", loss0.item()))
        f.write(grad0.numpy().astype("<f4").tobytes())
        if opt["n_steps"]:
            f.write(struct.pack(f"<{len(losses)}f", *losses))
            f.write(final.numpy().astype("<f4").tobytes())


def main():
    shape = dict(dim=16, n_layer=2, n_head=4, n_head_kv=2, n_ff=24, n_vocab=40, B=2, T=8, alpha=8.0)
    opt = dict(n_steps=5, accum=2, warmup=2, lr=1e-2, min_ratio=0.1, weight_decay=0.1, beta1=0.9,
               beta2=0.95, eps=1e-8, clip=1.0)
    write_case("untied", dict(shape, tied=False, rank=0), opt)
    write_case("tied", dict(shape, tied=True, rank=0), opt)
    write_case("lora", dict(shape, tied=False, rank=4), dict(opt, weight_decay=0.0))
    # quantization-aware: int4 weights and int8 inputs (train --qat w4a8), and int8 inputs under
    # a LoRA adapter with the head's input int8 too (finetune --qat on such a base); shapes with
    # rows of whole 32-value chunks, as the W4 type needs
    qshape = dict(shape, dim=32, n_ff=64, n_head=4, n_head_kv=2)
    qopt = dict(opt, n_steps=0)
    for name, cfg in (("qat", dict(qshape, tied=False, rank=0, int4=True, head_int8=False)),
                      ("qat_lora", dict(qshape, tied=False, rank=4, int4=False, head_int8=True))):
        seed, scales, _ = qat_setup(name, cfg, 1234 + len(name))
        write_case(name, dict(cfg, scales=scales), qopt, seed)
    # an adapter on a float base with its terms on a quantization profile's int8 grids (QUAD's
    # student): x, A, A x and B each clipped at 0.8 of its range
    cfg = dict(qshape, tied=False, rank=4, int4=False, head_int8=False, base_int8=False, lora_int8=True)
    seed, scales, lora_scales = qat_setup("qat_profile", cfg, 1234 + len("qat_profile"))
    write_case("qat_profile", dict(cfg, scales=scales, lora_scales=lora_scales), qopt, seed)


if __name__ == "__main__":
    main()

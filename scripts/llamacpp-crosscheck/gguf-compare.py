#!/usr/bin/env python3
"""gguf-compare.py THEIRS.gguf OURS.gguf: whether two GGUF files hold the same tensors in the
same types and shapes (exit 1 if not), read with llama.cpp's own gguf-py (GGUF_PY, default
/work/llama.cpp/gguf-py), and how many of them have identical bytes. Prints one line:
  types identical; 57/57 tensors byte-identical
  types identical; 40/57 tensors byte-identical (differ: q4_K 12, q6_K 5)
  3 type differences: blk.0.attn_v.weight q6_K / q4_K, ...
The order of the tensors in the files may differ (llama-quantize sorts them by layer)."""
import os
import sys

sys.path.insert(0, os.environ.get("GGUF_PY", "/work/llama.cpp/gguf-py"))
import numpy as np  # noqa: E402
from gguf import GGUFReader  # noqa: E402


def tensors(path):
    return {t.name: t for t in GGUFReader(path).tensors}


def main():
    theirs, ours = tensors(sys.argv[1]), tensors(sys.argv[2])
    diffs = []
    for name in sorted(set(theirs) | set(ours)):
        a, b = theirs.get(name), ours.get(name)
        if a is None or b is None:
            diffs.append(f"{name} {'absent' if a is None else a.tensor_type.name} / "
                         f"{'absent' if b is None else b.tensor_type.name}")
        elif a.tensor_type != b.tensor_type or list(a.shape) != list(b.shape):
            diffs.append(f"{name} {a.tensor_type.name} {list(a.shape)} / "
                         f"{b.tensor_type.name} {list(b.shape)}")
    if diffs:
        print(f"{len(diffs)} type differences: " + ", ".join(diffs[:6]))
        return 1
    differ = {}
    for name, a in theirs.items():
        if not np.array_equal(a.data.view(np.uint8), ours[name].data.view(np.uint8)):
            differ[a.tensor_type.name] = differ.get(a.tensor_type.name, 0) + 1
    same = len(theirs) - sum(differ.values())
    line = f"types identical; {same}/{len(theirs)} tensors byte-identical"
    if differ:
        line += " (differ: " + ", ".join(f"{k} {v}" for k, v in sorted(differ.items())) + ")"
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""json_check.py - `edgelora info --json` and `run --json` read by Python's own JSON parser and
compared with what an independent reader finds in the file (llama.cpp's gguf-py) and with the
text `run` streams. Prints PASS/FAIL/SKIP lines as tests/cli/lib.sh does; exits 1 on a failure.

usage: json_check.py EDGELORA GGUF_PY_DIR FILE...
"""
import json
import struct
import subprocess
import sys

EL, GGUF_PY, FILES = sys.argv[1], sys.argv[2], sys.argv[3:]
failed = 0
TYPE_NAMES = {"UINT8": "u8", "INT8": "i8", "UINT16": "u16", "INT16": "i16", "UINT32": "u32",
              "INT32": "i32", "FLOAT32": "f32", "BOOL": "bool", "STRING": "string",
              "ARRAY": "array", "UINT64": "u64", "INT64": "i64", "FLOAT64": "f64"}


def check(name, ok, *detail):
    global failed
    print(("PASS " if ok else "FAIL ") + name)
    if not ok:
        failed += 1
        for d in detail:
            print("  " + str(d)[:1500])
    return ok


def el(*args, stdin=None):
    return subprocess.run([EL] + list(args), capture_output=True, input=stdin)


def parsed(name, p):
    """stdout as JSON (Python's parser, strict: no NaN, one object, nothing after it)."""
    try:
        return json.loads(p.stdout, parse_constant=lambda c: 1 / 0)
    except (ValueError, ZeroDivisionError) as e:
        check(name + "_parses", False, e, p.stdout[:500], p.stderr[:500])
        return None


def element(field_type, part):
    v = part.tolist()[0] if hasattr(part, "tolist") else part
    if field_type == "STRING":
        return bytes(part).decode("utf-8", "replace")
    if field_type == "BOOL":
        return bool(v)
    return v


def same_value(a, b, field_type):
    """Our JSON's value a against gguf-py's b: a float32 written with 9 digits is that float32
    once rounded to float32 again."""
    if field_type == "FLOAT32" and isinstance(a, (int, float)):
        return struct.unpack("<f", struct.pack("<f", a))[0] == b
    return a == b


def check_info(path):
    sys.path.insert(0, GGUF_PY)
    from gguf import GGUFReader
    name = "info_json_" + path.rsplit("/", 1)[-1].replace(".", "_")
    d = parsed(name, el("info", "--json", path))
    if d is None:
        return
    r = GGUFReader(path)
    problems = []
    fields = {k: f for k, f in r.fields.items() if not k.startswith("GGUF.")}
    if sorted(fields) != sorted(d["metadata"]):
        problems.append("keys differ: %s" % (set(fields) ^ set(d["metadata"])))
    for k, f in fields.items():
        m = d["metadata"].get(k)
        if m is None:
            continue
        t = TYPE_NAMES[f.types[0].name]
        if m["type"] != t:
            problems.append("%s: type %s, gguf-py %s" % (k, m["type"], t))
        elif t == "array":
            et = f.types[1].name
            values = [element(et, f.parts[i]) for i in f.data[:5]]
            if m["element_type"] != TYPE_NAMES[et] or m["n"] != len(f.data) or \
                    not all(same_value(a, b, et) for a, b in zip(m["values"], values)) or \
                    len(m["values"]) != len(values):
                problems.append("%s: %r, gguf-py %s %d %r" % (k, m, et, len(f.data), values))
        else:
            v = element(f.types[0].name, f.parts[f.data[0]])
            if not same_value(m["value"], v, f.types[0].name):
                problems.append("%s: %r, gguf-py %r" % (k, m["value"], v))
    if len(r.tensors) != len(d["tensors"]):
        problems.append("%d tensors, gguf-py %d" % (len(d["tensors"]), len(r.tensors)))
    for t, j in zip(r.tensors, d["tensors"]):
        want = (t.name, t.tensor_type.name.lower(), [int(x) for x in t.shape], int(t.n_bytes))
        got = (j["name"], j["type"].lower(), j["shape"], j["bytes"])
        if want != got:
            problems.append("tensor %r, gguf-py %r" % (got, want))
    total = d["total"]
    if total["tensors"] != len(r.tensors) or \
            total["bytes"] != sum(int(t.n_bytes) for t in r.tensors) or \
            total["parameters"] != sum(int(t.n_elements) for t in r.tensors):
        problems.append("total %r" % total)
    check(name + "_matches_gguf_py", not problems, *problems[:10])


def check_run():
    # the JSON's text is what the streamed run prints after the prompt
    prompt = "Once upon a time"
    streamed = el("run", "-p", prompt, "-n", "12", "--temp", "0", "-t", "1")
    d = parsed("run_json", el("run", "-p", prompt, "-n", "12", "--temp", "0", "-t", "1", "--json"))
    if d is None:
        return
    want = streamed.stdout.decode()[len(prompt):-1]
    check("run_json_text", d["text"] == want, "json %r" % d["text"], "streamed %r" % want)
    check("run_json_fields", d["prompt"] == prompt and d["generated_tokens"] == 12 and
          d["finish_reason"] == "length" and d["seed"] is None and d["adapters"] == [] and
          d["sampling"]["temperature"] == 0 and d["prompt_tokens"] > 0 and
          set(d["timings"]) == {"prompt_ms", "prompt_tokens_per_s", "generation_ms",
                                "generation_tokens_per_s"}, d)
    check("run_json_stdout_only_json", streamed.stderr.startswith(b"prompt:") and
          not el("run", "-p", prompt, "-n", "2", "--temp", "0", "-t", "1", "--json").stderr, "")
    # a stop string inside the text: finish "stop", the text before it
    stop = want[4:9]
    d = parsed("run_json_stop", el("run", "-p", prompt, "-n", "12", "--temp", "0", "-t", "1",
                                   "--stop", stop, "--json"))
    if d is not None:
        check("run_json_stop", d["finish_reason"] == "stop" and d["text"] == want[:want.find(stop)],
              d, "stop %r" % stop)
    # sampling: the seed given; an adapter with its name, path and scale
    d = parsed("run_json_seed", el("run", "-p", prompt, "-n", "3", "--temp", "0.7", "-s", "42",
                                   "--lora-scaled", "models/translate-de.gguf", "0.5", "-t", "1",
                                   "--json"))
    if d is not None:
        check("run_json_seed_adapter", d["seed"] == 42 and
              abs(d["sampling"]["temperature"] - 0.7) < 1e-6 and
              d["adapters"] == [{"name": "translate-de", "path": "models/translate-de.gguf",
                                 "scale": 0.5}], d)
    # escaping: quotes, backslashes, control characters and multi-byte UTF-8 come back as
    # given; a byte of invalid UTF-8 as U+FFFD
    tricky = "say \"hi\" \\ back\ttab\x01\x1f end é ü 日本 🙂"
    d = parsed("run_json_escapes", el("run", "-p", tricky, "-n", "1", "--temp", "0", "-t", "1",
                                      "--json"))
    if d is not None:
        check("run_json_escapes", d["prompt"] == tricky, "%r" % d["prompt"])
    p = subprocess.run([EL, "run", "-p", b"bad \xff byte", "-n", "1", "--temp", "0", "-t", "1",
                        "--json"], capture_output=True)
    d = parsed("run_json_invalid_utf8", p)
    if d is not None:
        check("run_json_invalid_utf8", d["prompt"] == "bad \ufffd byte", "%r" % d["prompt"])
    # --chat: the prompt is the templated text
    d = parsed("run_json_chat", el("run", "--chat", "-p", "Hi", "-n", "2", "--temp", "0", "-t",
                                   "1", "--json"))
    if d is not None:
        check("run_json_chat_prompt", d["prompt"] == "User: Hi\nAssistant:", "%r" % d["prompt"])


try:
    sys.path.insert(0, GGUF_PY)
    import gguf  # noqa: F401
    for f in FILES:
        check_info(f)
except ImportError:
    print("SKIP info_json\n  skipped: no gguf-py (with NumPy) at " + GGUF_PY)
check_run()
sys.exit(1 if failed else 0)

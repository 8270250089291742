#!/usr/bin/env python3
"""chat_check.py - drives `edgelora chat` through a pseudo-terminal (and through a pipe) and
checks every reply against `edgelora run --json` on the whole conversation's text, rendered
here from the chat template's Jinja source by jinja2 (the model's own template read from its
GGUF by the few lines of GGUF reading below, or a ChatML template written below), not by
edgelora's code. Prints PASS/FAIL/SKIP lines as tests/cli/lib.sh does; exits 1 if a check
failed.

usage: chat_check.py EDGELORA MODELS_DIR TMP_DIR
"""
import json
import os
import pty
import re
import select
import subprocess
import sys
import termios
import time

EL, MODELS, TMP = sys.argv[1:4]
failed = 0

# the standard ChatML template (as Hugging Face models ship it)
CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
          "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
          "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")


def check(name, ok, *detail):
    global failed
    print(("PASS " if ok else "FAIL ") + name)
    if not ok:
        failed += 1
        for d in detail:
            print("  " + str(d)[:2000])
    return ok


def skip(name, why):
    print("SKIP " + name + "\n  skipped: " + why)


try:
    import jinja2.sandbox
except ImportError:
    skip("chat", "python3 has no jinja2 to render the chat templates with")
    sys.exit(0)
ENV = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)


def model_template(path):
    """tokenizer.chat_template of a GGUF file (the GGUF specification's layout, version 2 or
    3: header, then key, type, value triples), or None if it has none."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"GGUF":
        return None
    fixed = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    at = 4 + 4 + 8

    def u(n):
        nonlocal at
        at += n
        return int.from_bytes(data[at - n:at], "little")

    def string():
        nonlocal at
        n = u(8)
        at += n
        return data[at - n:at]

    def skip_value(t):
        nonlocal at
        if t == 8:
            string()
        elif t == 9:
            et, n = u(4), u(8)
            for _ in range(n):
                skip_value(et)
        else:
            at += fixed[t]

    n_kv = u(8)
    for _ in range(n_kv):
        key, t = string(), u(4)
        if key == b"tokenizer.chat_template" and t == 8:
            return string().decode()
        skip_value(t)
    return None


def render(tmpl, msgs):
    """The conversation as text; contents are bytes (a reply may be any bytes)."""
    m = [{"role": r, "content": c.decode("utf-8", "surrogateescape")} for r, c in msgs]
    text = ENV.from_string(tmpl).render(messages=m, add_generation_prompt=True, bos_token="",
                                        eos_token="")
    return text.encode("utf-8", "surrogateescape")


def run(prompt, args):
    """`edgelora run --json` on the prompt text: its reply and its prompt's token count."""
    p = subprocess.run([EL, "run", "-p", prompt, "--json"] + args, capture_output=True)
    if p.returncode != 0:
        raise RuntimeError("run failed: " + p.stderr.decode(errors="replace"))
    r = json.loads(p.stdout)
    return r["text"].encode(), r["prompt_tokens"]


def strip(b):
    return b.strip(b" \t\n\r\x0b\x0c")


VERBOSE = re.compile(rb"(\d+) tokens of conversation, (\d+) from the cache, (\d+) decoded; "
                     rb"(\d+) generated \((\w+)\)")


class Chat:
    """edgelora chat with a pseudo-terminal for stdin and stderr, stdout to a file."""

    def __init__(self, args):
        self.out_path = os.path.join(TMP, "chat.out")
        out = os.open(self.out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.dup2(out, 1)
            os.execv(EL, [EL, "chat"] + args)
        os.close(out)
        self.term = b""  # everything the terminal showed
        self.seen_out = 0
        self.status = None

    def _read(self, timeout):
        r, _, _ = select.select([self.fd], [], [], timeout)
        if r:
            try:
                data = os.read(self.fd, 65536)
            except OSError:
                data = b""
            if not data:
                self._reap(True)
            self.term += data
        else:
            self._reap(False)

    def _reap(self, block):
        if self.status is None:
            pid, st = os.waitpid(self.pid, 0 if block else os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(st)

    def stdout(self):
        with open(self.out_path, "rb") as f:
            return f.read()

    def editing(self):
        """Whether libedit has the terminal (not in canonical mode): keys sent before would be
        echoed and line-buffered by the terminal itself."""
        try:
            return not termios.tcgetattr(self.fd)[3] & termios.ICANON
        except termios.error:
            return False

    def wait_prompt(self, since, timeout=120):
        """Until the prompt shows again after the line sent at self.term[since:] and libedit
        reads keys."""
        end = time.time() + timeout
        while time.time() < end and self.status is None:
            t = self.term[since:]
            nl = t.find(b"\n")
            if nl >= 0 and t.find(b"> ", nl) >= 0 and self.editing():
                return True
            self._read(0.02)
        return False

    def say(self, line, interrupt=False):
        """Sends a line; returns (what stdout got, the terminal's new text, prompt back)."""
        since, before = len(self.term), len(self.stdout())
        os.write(self.fd, line + b"\r")
        if interrupt:  # Ctrl-C once the reply has begun
            end = time.time() + 60
            while len(self.stdout()) == before and time.time() < end and self.status is None:
                self._read(0.005)
            os.write(self.fd, b"\x03")
        ok = self.wait_prompt(since)
        return self.stdout()[before:], self.term[since:], ok

    def end(self, keys, timeout=30):
        os.write(self.fd, keys)
        end = time.time() + timeout
        while self.status is None and time.time() < end:
            self._read(0.05)
        if self.status is None:
            os.kill(self.pid, 9)
            self._reap(True)
            return None
        return self.status


def terminal_session(tmpl):
    """Several turns, /lora NAME and /lora none, /reset, an unknown command, EOF."""
    n = ["-n", "10", "--temp", "0", "-t", "1"]
    c = Chat(n + ["-v", "--lora-dir", MODELS])
    check("chat_tty_prompt", c.wait_prompt(0), c.term)
    hist, last_total = [], None

    def turn(name, user, lora=None, reused_min=None):
        nonlocal last_total
        msgs = hist + [("user", user)]
        want, n_prompt = run(render(tmpl, msgs), n + (["--lora", lora] if lora else []))
        got, term, ok = c.say(user)
        check(name + "_prompt_back", ok, term)
        check(name + "_reply", got == want + b"\n", "chat: %r" % got, "run:  %r" % want)
        v = VERBOSE.search(term)
        check(name + "_counts", v is not None and int(v.group(1)) == n_prompt and
              int(v.group(2)) + int(v.group(3)) == n_prompt and
              (reused_min is None or int(v.group(2)) >= reused_min),
              term, "run counts %d prompt tokens; at least %s from the cache"
              % (n_prompt, reused_min))
        hist.extend([("user", user), ("assistant", strip(want))])
        last_total = n_prompt
        return v

    turn("chat_tty_turn1", b"Hello there")
    # the second and third turns decode only what is new: the first turn's tokens come from
    # the cache (the reply's too, unless its text tokenizes otherwise)
    turn("chat_tty_turn2", b"How are you?", reused_min=last_total)
    turn("chat_tty_turn3", b"Tell me more", reused_min=last_total)
    _, term, ok = c.say(b"/lora translate-de")
    check("chat_tty_lora_bound", ok and b"bound translate-de" in term, term)
    # under the new adapter nothing of the cache is kept: the reply is a fresh run's with it
    v = turn("chat_tty_lora_turn", b"Good morning", lora=os.path.join(MODELS, "translate-de.gguf"))
    check("chat_tty_lora_redecoded", v is not None and v.group(2) == b"0", c.term[-400:])
    _, term, ok = c.say(b"/lora none")
    check("chat_tty_lora_none", ok and b"no adapter bound" in term, term)
    turn("chat_tty_unbound_turn", b"Thank you")
    _, term, ok = c.say(b"/lora nosuch")
    check("chat_tty_lora_unknown", ok and b"no adapter 'nosuch'" in term, term)
    _, term, ok = c.say(b"/frobnicate")
    check("chat_tty_unknown_command", ok and b"unknown command '/frobnicate'" in term, term)
    _, term, ok = c.say(b"/reset")
    check("chat_tty_reset", ok and b"forgotten" in term, term)
    hist.clear()
    turn("chat_tty_after_reset", b"Hello there")
    # cursor keys and backspace: "Hlo", two left, "el" ("Hello"), right, backspace ("Helo"),
    # "l" ("Hello"); then the up arrow brings the line back from the history
    turn_text = b"Hlo\x1b[D\x1b[Del\x1b[C\x7fl"
    want, _ = run(render(tmpl, hist + [("user", b"Hello")]), n)
    got, term, ok = c.say(turn_text)
    check("chat_tty_line_editing", ok and got == want + b"\n", "chat: %r" % got, "run: %r" % want)
    hist.extend([("user", b"Hello"), ("assistant", strip(want))])
    want, _ = run(render(tmpl, hist + [("user", b"Hello")]), n)
    got, term, ok = c.say(b"\x1b[A")
    check("chat_tty_history_up", ok and got == want + b"\n", "chat: %r" % got, "run: %r" % want)
    check("chat_tty_eof_exit", c.end(b"\x04") == 0, c.term[-300:])


def interrupt_session(tmpl):
    """Ctrl-C during a reply: the reply stops, what was written stays in the conversation."""
    n = ["-n", "400", "-c", "1024", "--ignore-eos", "--temp", "0", "-t", "1"]
    c = Chat(n + ["-v"])
    check("chat_ctrlc_prompt", c.wait_prompt(0), c.term)
    got, term, ok = c.say(b"Once upon a time", interrupt=True)
    v = VERBOSE.search(term)
    check("chat_ctrlc_reply_stopped", ok and b"reply interrupted" in term and v is not None and
          v.group(5) == b"interrupted" and int(v.group(4)) < 400, term)
    partial = got[:-1] if got.endswith(b"\n") else got
    msgs = [("user", b"Once upon a time"), ("assistant", strip(partial)), ("user", b"And then?")]
    want, _ = run(render(tmpl, msgs), n)
    got, term, ok = c.say(b"And then?")
    check("chat_ctrlc_partial_kept", ok and got == want + b"\n",
          "chat: %r" % got[:300], "run:  %r" % want[:300])
    check("chat_ctrlc_prompt_exit", c.end(b"\x03") == 0, c.term[-300:])


def piped_session():
    """stdin a pipe: plain lines, no prompt; ChatML with a system message; the context's end."""
    n = ["-n", "20", "--temp", "0", "-t", "1"]
    system = b"You are brief."
    users = [b"Hello there, how are you today?", b"What is the weather like?",
             b"Tell me a story about a cat.", b"And what did the dog do then?",
             b"Thank you very much."]
    p = subprocess.run([EL, "chat", "--chat-template", "chatml", "--system", system, "-v"] + n,
                       input=b"\n".join(users) + b"\n/help\n", capture_output=True)
    check("chat_pipe_exit", p.returncode == 0, p.stderr)
    check("chat_pipe_help", b"/reset" in p.stderr and b"> " not in p.stderr, p.stderr)
    # the expected conversation, with the oldest turns dropped as chat says it does: while the
    # conversation's tokens and room for a reply (-n 20, at most half the context) pass the
    # context of 128
    hist, want_all, dropped = [], b"", 0
    for u in users:
        hist.append(("user", u))
        while True:
            want, n_prompt = run(render(CHATML, [("system", system)] + hist), n)
            if n_prompt + 20 <= 128 or len(hist) == 1:
                break
            del hist[:2]
            dropped += 1
        want_all += want + b"\n"
        hist.append(("assistant", strip(want)))
    check("chat_pipe_replies", p.stdout == want_all, "chat: %r" % p.stdout, "run:  %r" % want_all)
    check("chat_pipe_dropped_said", dropped > 0 and
          len(re.findall(rb"dropped the oldest \d+ turn", p.stderr)) > 0, p.stderr,
          "turns dropped by the expected conversation: %d" % dropped)
    # after a drop the text differs from the first dropped turn on: what precedes it (the
    # system message) still comes from the cache, the rest is decoded again
    after_drop = re.findall(rb"dropped the oldest \d+ turns? and decode what remains again\n"
                            rb"(?:.*\n)*?.*?" + VERBOSE.pattern, p.stderr)
    check("chat_pipe_redecode_from_difference", after_drop and
          all(0 < int(v[1]) < int(v[0]) for v in after_drop), p.stderr)
    # a stop string: the reply ends before it, as run's does
    first, _ = run(render(CHATML, [("system", system), ("user", users[0])]), n)
    stop = first[3:7].decode("utf-8", "replace")
    want, _ = run(render(CHATML, [("system", system), ("user", users[0])]), n + ["--stop", stop])
    p = subprocess.run([EL, "chat", "--chat-template", "chatml", "--system", system,
                        "--stop", stop] + n, input=users[0] + b"\n", capture_output=True)
    check("chat_pipe_stop",
          p.returncode == 0 and p.stdout == want + b"\n" and len(want) < len(first),
          "chat: %r" % p.stdout, "run:  %r (stop %r)" % (want, stop))
    # a message too long for the context even alone: refused, the chat goes on
    p = subprocess.run([EL, "chat", "-c", "16"] + n, input=b"word " * 40 + b"\nHi\n",
                       capture_output=True)
    check("chat_pipe_too_long", p.returncode == 0 and b"not sent" in p.stderr, p.stderr)


SPEC = re.compile(rb"(\d+) generated \((\w+)\) in (\d+) speculative steps")


def speculative_session():
    """--tree: the forecast set beside the default model drafts, the replies stay run's (plain
    decoding), greedy and sampled, across turns (a stop string leaves a step's extra tokens in
    the cache, which the next turn must not keep) and past the context's end (turns dropped)."""
    system = b"You are brief."
    users = [b"Hello there, how are you today?", b"Tell me a story about a cat.",
             b"And what did the dog do then?", b"What is the weather like?",
             b"Thank you very much."]
    # greedy with a context that keeps every turn (the replies come from the cache), sampled
    # with one that drops the oldest turns
    for name, n_ctx, n in (("greedy", 512, ["-n", "20", "--temp", "0", "-t", "1", "-c", "512"]),
                           ("sampled", 128, ["-n", "20", "--temp", "0.8", "--seed", "5", "-t",
                                             "1"])):
        first, _ = run(render(CHATML, [("system", system), ("user", users[0])]), n)
        stop = ["--stop", first[6:9].decode("utf-8", "replace")] if name == "greedy" else []
        p = subprocess.run([EL, "chat", "--chat-template", "chatml", "--system", system, "-v",
                            "--tree", "4,2,1"] + n + stop,
                           input=b"\n".join(users) + b"\n", capture_output=True)
        hist, want_all = [], b""
        for u in users:
            hist.append(("user", u))
            while True:
                want, n_prompt = run(render(CHATML, [("system", system)] + hist), n + stop)
                if n_prompt + 20 <= n_ctx or len(hist) == 1:
                    break
                del hist[:2]
            want_all += want + b"\n"
            hist.append(("assistant", strip(want)))
        check("chat_speculative_" + name, p.returncode == 0 and p.stdout == want_all,
              p.stderr, "chat: %r" % p.stdout, "run:  %r" % want_all)
        steps = SPEC.findall(p.stderr)
        check("chat_speculative_" + name + "_steps", len(steps) == len(users) and
              sum(int(s[2]) for s in steps) < sum(int(s[0]) for s in steps), p.stderr)
        # the cache holds what plain decoding's would: each turn takes as many tokens from it
        plain = subprocess.run([EL, "chat", "--chat-template", "chatml", "--system", system,
                                "-v"] + n + stop, input=b"\n".join(users) + b"\n",
                               capture_output=True)
        check("chat_speculative_" + name + "_cache",
              VERBOSE.findall(p.stderr) == VERBOSE.findall(plain.stderr) != [],
              "speculative: %r" % VERBOSE.findall(p.stderr),
              "plain:       %r" % VERBOSE.findall(plain.stderr))


base = os.path.join(MODELS, "base.gguf")
own = model_template(base)
if check("chat_model_template", own is not None, base + " has no tokenizer.chat_template"):
    terminal_session(own)
    interrupt_session(own)
piped_session()
speculative_session()
sys.exit(1 if failed else 0)

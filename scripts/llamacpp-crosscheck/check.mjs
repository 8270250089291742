// Runs a GGUF model (and LoRA adapters) in llama.cpp, through node-llama-cpp's prebuilt CPU
// libraries, and in edgelora, and compares what they make of the same text: the token ids of
// the text, its perplexity (chunked as `edgelora perplexity` and llama.cpp's perplexity tool
// chunk it) and a greedy continuation of a prompt. The two share no code, so agreement checks
// our GGUF writers, tokenizer metadata, LoRA adapter files and forward pass against llama.cpp's.
// Usage (after npm ci):
//   node check.mjs EDGELORA MODEL TEXT [--lora FILE]... [--ctx N] [--chunks N] [--gen N]
//                  [--prompt P] [--threads N] [--ppl-tol X] [--tie X]
// Exit status 1 if the token ids differ, the perplexities differ by more than --ppl-tol
// (relative, default 0.01), adapters given change nothing, or the greedy continuations part
// where llama.cpp's own logits are not a near tie (within --tie).
import { getLlama } from "node-llama-cpp";
import { execFileSync } from "child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "fs";
import { tmpdir } from "os";
import { join } from "path";

function parseArgs(argv) {
  const o = { lora: [], ctx: 128, chunks: 12, gen: 32, prompt: null, threads: 2, pplTol: 0.01,
              tie: 0.05 };
  const pos = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--lora") o.lora.push(argv[++i]);
    else if (a === "--ctx") o.ctx = +argv[++i];
    else if (a === "--chunks") o.chunks = +argv[++i];
    else if (a === "--gen") o.gen = +argv[++i];
    else if (a === "--prompt") o.prompt = argv[++i];
    else if (a === "--threads") o.threads = +argv[++i];
    else if (a === "--ppl-tol") o.pplTol = +argv[++i];
    else if (a === "--tie") o.tie = +argv[++i];
    else pos.push(a);
  }
  if (pos.length !== 3) {
    console.error("usage: node check.mjs EDGELORA MODEL TEXT [--lora FILE]... [--ctx N] " +
                  "[--chunks N] [--gen N] [--prompt P] [--threads N] [--ppl-tol X] [--tie X]");
    process.exit(2);
  }
  [o.edgelora, o.model, o.text] = pos;
  return o;
}

function edgelora(o, args, withAdapters = true, encoding = "utf8") {
  const lora = withAdapters ? o.lora.flatMap((f) => ["--lora", f]) : [];
  return execFileSync(o.edgelora, [...args, "-m", o.model, ...lora],
                      { encoding, maxBuffer: 1 << 28, stdio: ["ignore", "pipe", "pipe"] });
}

// -log p(target) from a map of all logits.
function nll(logits, target) {
  let max = -Infinity;
  for (const v of logits.values()) if (v > max) max = v;
  let sum = 0;
  for (const v of logits.values()) sum += Math.exp(v - max);
  return Math.log(sum) + max - logits.get(target);
}

// llama.cpp's perplexity tool over ids (the text's tokens, BOS first if the vocabulary adds one):
// windows of exactly ctx tokens, each window's first token overwritten by BOS (if the vocabulary
// adds one), the tokens after the logits of positions ctx/2 .. ctx-2 scored; what
// cli/perplexity.c does too.
async function perplexity(seq, ids, bos, o) {
  let sum = 0, count = 0;
  for (let c = 0; c < o.chunks && (c + 1) * o.ctx <= ids.length; c++) {
    const chunk = ids.slice(c * o.ctx, (c + 1) * o.ctx);
    if (bos != null) chunk[0] = bos;
    await seq.clearHistory();
    const first = o.ctx >> 1;
    const items = chunk.map((t, i) =>
      i >= first && i + 1 < chunk.length ? [t, { generateNext: { logits: true } }] : t);
    const out = await seq.controlledEvaluate(items);
    for (let i = first; i + 1 < chunk.length; i++) {
      sum += nll(out[i].next.logits, chunk[i + 1]);
      count++;
    }
  }
  return { ppl: Math.exp(sum / count), count };
}

async function greedy(seq, input, n) {
  await seq.clearHistory();
  const got = [];
  // past end-of-text tokens too, as `run --ignore-eos` goes on
  for await (const t of seq.evaluate(input, { temperature: 0, yieldEogToken: true })) {
    got.push(t);
    if (got.length >= n) break;
  }
  return got;
}

const o = parseArgs(process.argv.slice(2));
const text = readFileSync(o.text, "utf8");
const llama = await getLlama({ gpu: false, build: "never", logLevel: "error" });
const model = await llama.loadModel({ modelPath: o.model, gpuLayers: 0 });
const lora = o.lora.length ? { adapters: o.lora.map((filePath) => ({ filePath })) } : undefined;
const context = await model.createContext({ contextSize: Math.max(o.ctx, 256) + o.gen,
                                            threads: o.threads, sequences: 1, lora });
const seq = context.getSequence();
let failed = 0;
const report = (ok, what) => { console.log(`${ok ? "ok  " : "FAIL"} ${what}`); if (!ok) failed++; };

// 1. Token ids of the text (no BOS).
const theirs = model.tokenize(text, false);
const ours = edgelora(o, ["tokenize", "-f", o.text], false)
  .trim().split(/\s+/).filter(Boolean).map(Number);
let k = 0;
while (k < theirs.length && k < ours.length && theirs[k] === ours[k]) k++;
report(k === theirs.length && k === ours.length,
       `tokens: ${ours.length} ours, ${theirs.length} llama.cpp` +
       (k < Math.max(theirs.length, ours.length)
          ? `, first difference at ${k}: ours ${ours.slice(k, k + 4)} ` +
            `llama.cpp ${theirs.slice(k, k + 4)}` +
            ` (text ${JSON.stringify(model.detokenize(theirs.slice(Math.max(0, k - 3), k + 3)))})`
          : ", identical"));

// 2. Perplexity on the same tokens (ours are cut to the chunks llama.cpp scores).
const bos = model.tokens.shouldPrependBosToken ? model.tokens.bos : null; /* its add_bos */
const dir = mkdtempSync(join(tmpdir(), "llamacpp-crosscheck-"));
try {
  const withBos = (bos == null ? [] : [bos]).concat(theirs);
  const theirPpl = await perplexity(seq, withBos, bos, o);
  // Our perplexity reads text: give it a prefix of the text half a window longer than the windows
  // scored, so it scores the same windows (ids identical above; the cut moves only tokens after).
  const prefix = join(dir, "prefix.txt");
  const keep = o.chunks * o.ctx + (o.ctx >> 1) - (bos == null ? 0 : 1);
  const cut = model.detokenize(theirs.slice(0, keep)).length;
  writeFileSync(prefix, text.slice(0, cut));
  const line = edgelora(o, ["perplexity", "-f", prefix, "-c", String(o.ctx),
                            "-t", String(o.threads)]);
  const m = /perplexity: ([0-9.]+) .* over (\d+) tokens/.exec(line);
  const ourPpl = m ? +m[1] : NaN;
  const rel = Math.abs(ourPpl - theirPpl.ppl) / theirPpl.ppl;
  report(m && +m[2] === theirPpl.count && rel <= o.pplTol,
         `perplexity over ${theirPpl.count} tokens: ours ${ourPpl.toFixed(4)}, llama.cpp ` +
         `${theirPpl.ppl.toFixed(4)} (relative difference ${rel.toExponential(2)}` +
         `${m && +m[2] !== theirPpl.count ? `; ours scored ${m[2]} tokens` : ""})`);
  if (lora) {
    // The adapters must matter, or agreeing with them would show nothing.
    const plain = await model.createContext({ contextSize: Math.max(o.ctx, 256), threads: o.threads,
                                              sequences: 1 });
    const base = await perplexity(plain.getSequence(), withBos, bos, o);
    await plain.dispose();
    report(Math.abs(base.ppl - theirPpl.ppl) / base.ppl > 1e-3,
           `the adapters change llama.cpp's perplexity: ${base.ppl.toFixed(4)} without them`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

// 3. Greedy continuation of a prompt (the text's first line unless --prompt). Where the two
// part, llama.cpp's logits there say whether it was a near tie (the two candidates within
// --tie logits, default 0.05, as rounding in two implementations can flip) or a real difference.
const prompt = o.prompt ?? text.split("\n")[0].slice(0, 200);
const promptIds = (bos == null ? [] : [bos]).concat(model.tokenize(prompt, false));
const theirIds = await greedy(seq, promptIds, o.gen);
const theirGen = model.detokenize(theirIds, false, promptIds); /* as text after the prompt */
// Our text as bytes (less the newline `run` ends with), decoded as llama.cpp's is, so bytes
// that are not whole UTF-8 characters turn into the same replacement characters on both sides.
const ourBytes = edgelora(o, ["run", "-p", prompt, "-n", String(o.gen), "--temp", "0",
                              "--ignore-eos", "-t", String(o.threads)], true, "buffer");
const ourOut = new TextDecoder().decode(ourBytes.subarray(0, ourBytes.length - 1));
const ourGen = ourOut.startsWith(prompt) ? ourOut.slice(prompt.length) : ourOut;
// llama.cpp's tokens whose text ours starts with (a text cut inside a character ends in
// replacement characters, which are left out of the comparison)
const textOf = (n) =>
  model.detokenize(theirIds.slice(0, n), false, promptIds).replace(/\uFFFD+$/, "");
let same = 0;
while (same < theirIds.length && ourGen.startsWith(textOf(same + 1))) same++;
if (same === theirIds.length && ourGen === theirGen) {
  report(true, `greedy ${o.gen} tokens after ${JSON.stringify(prompt.slice(0, 40))}: identical`);
} else if (same === theirIds.length) {
  report(false, `greedy ${o.gen} tokens after ${JSON.stringify(prompt.slice(0, 40))}: the ` +
         `tokens agree but the texts end differently (ours ${JSON.stringify(ourGen.slice(-24))}, ` +
         `llama.cpp ${JSON.stringify(theirGen.slice(-24))})`);
} else {
  const agreed = textOf(same);
  const ourTok = model.tokenize(ourGen.slice(agreed.length), false)[0];
  await seq.clearHistory();
  const items = promptIds.concat(theirIds.slice(0, same));
  const last = items.length - 1;
  const filter = { tokens: [theirIds[same], ourTok] };
  items[last] = [items[last], { generateNext: { logits: { filter } } }];
  const logits = (await seq.controlledEvaluate(items))[last].next.logits;
  const gap = logits.get(theirIds[same]) - logits.get(ourTok);
  report(gap <= o.tie,
         `greedy ${o.gen} tokens after ${JSON.stringify(prompt.slice(0, 40))}: part after ` +
         `${same} tokens (ours ${JSON.stringify(ourGen.slice(agreed.length, agreed.length + 24))}` +
         `, ` +
         `llama.cpp ${JSON.stringify(theirGen.slice(agreed.length, agreed.length + 24))}); ` +
         `llama.cpp's logits there differ by ${gap.toFixed(4)}` +
         (gap <= o.tie ? ", a near tie" : ""));
}
console.log(failed ? `${failed} check(s) failed` : "all agree");
process.exit(failed ? 1 : 0);

// serve_load.mjs - a load generator for OpenAI-style servers on this machine: C concurrent
// streaming clients, each sending R completion requests one after another, client i with
// adapter i mod A. Prints one JSON line: aggregate generated tokens/s (over the wall time of
// the whole load), inter-token times (p50/p99, ms, between successive streamed tokens of a
// request), time to first token (p50/p99), errors.
//   node bench/serve_load.mjs --url URL --clients C --requests R --max-tokens N
//        [--adapters a,b,...] [--style edgelora|llama] [--prompt TEXT]
// --style edgelora names the adapter in "model"; llama sends llama-server's "lora":
// [{"id": i, "scale": 1}] (adapter i of its --lora list) and counts one token a chunk.
const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith("--")) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const url = args.url, clients = +(args.clients ?? 1), requests = +(args.requests ?? 1);
const maxTokens = +(args["max-tokens"] ?? 64), style = args.style ?? "edgelora";
const adapters = args.adapters ? args.adapters.split(",") : [];
const prompt = args.prompt ?? "Once upon a time, in a small village by the sea, there lived";

function body(client) {
  const b = { prompt, max_tokens: maxTokens, temperature: 0, stream: true };
  if (adapters.length) {
    const k = client % adapters.length;
    if (style === "llama") b.lora = adapters.map((_, j) => ({ id: j, scale: j === k ? 1 : 0 }));
    else b.model = adapters[k];
  }
  if (style === "edgelora") b.stream_options = { include_usage: true };
  return JSON.stringify(b);
}

const gaps = [], firsts = [];
let tokens = 0, errors = 0;

async function one(client) {
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/completions`, { method: "POST", body: body(client),
    headers: { "Content-Type": "application/json" } });
  if (!res.ok || !res.body) {
    errors++;
    await res.text().catch(() => {});
    return;
  }
  const dec = new TextDecoder();
  let buf = "", last = null, got = 0, usage = null;
  for await (const part of res.body) {
    buf += dec.decode(part, { stream: true });
    let at;
    while ((at = buf.indexOf("\n\n")) >= 0) {
      const ev = buf.slice(0, at);
      buf = buf.slice(at + 2);
      if (!ev.startsWith("data: ") || ev === "data: [DONE]") continue;
      const j = JSON.parse(ev.slice(6));
      if (j.error) errors++;
      if (j.usage) usage = j.usage;
      if (j.choices?.[0]?.text) {
        const now = performance.now();
        if (last === null) firsts.push(now - t0);
        else gaps.push(now - last);
        last = now;
        got++;
      }
    }
  }
  tokens += usage ? usage.completion_tokens : got;
}

function pct(v, p) {
  if (!v.length) return null;
  const s = [...v].sort((a, b) => a - b);
  return +s[Math.min(s.length - 1, Math.floor(p / 100 * s.length))].toFixed(2);
}

const start = performance.now();
await Promise.all(Array.from({ length: clients }, async (_, c) => {
  for (let r = 0; r < requests; r++) {
    try { await one(c); } catch { errors++; }
  }
}));
const seconds = (performance.now() - start) / 1e3;
console.log(JSON.stringify({ style, clients, requests, max_tokens: maxTokens,
  adapters: adapters.length, tokens, seconds: +seconds.toFixed(2),
  tokens_per_s: +(tokens / seconds).toFixed(2), itl_p50_ms: pct(gaps, 50),
  itl_p99_ms: pct(gaps, 99), ttft_p50_ms: pct(firsts, 50), ttft_p99_ms: pct(firsts, 99), errors }));

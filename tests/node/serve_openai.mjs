// serve_openai.mjs - the official OpenAI client (npm "openai") against `edgelora serve`.
//   node serve_openai.mjs BASE_URL API_KEY EXPECTED.json
// EXPECTED.json holds what `edgelora run` printed for the same prompts and adapters (greedy):
// {"completions": [{"prompt", "model", "max_tokens", "text"}], "chat": {"model", "content",
// "max_tokens", "text"}, "models": [ids]}. Prints one "PASS name" or "FAIL name" line a check.
import { readFileSync } from "node:fs";
import OpenAI from "openai";

const [baseURL, apiKey, expectedPath] = process.argv.slice(2);
const want = JSON.parse(readFileSync(expectedPath, "utf8"));
const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey, maxRetries: 0 });
let failed = 0;

function check(name, ok, detail) {
  if (ok) {
    console.log(`PASS ${name}`);
  } else {
    failed++;
    console.log(`FAIL ${name}`);
    if (detail !== undefined) console.log(`  ${JSON.stringify(detail).slice(0, 600)}`);
  }
}

async function attempt(name, fn) {
  try {
    await fn();
  } catch (e) {
    check(name, false, String(e));
  }
}

async function expectStatus(name, status, fn) {
  try {
    await fn();
    check(name, false, "no error");
  } catch (e) {
    check(name, e instanceof OpenAI.APIError && e.status === status && e.error?.message, {
      status: e.status, error: e.error, message: String(e) });
  }
}

await attempt("openai_models", async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  check("openai_models", JSON.stringify(ids) === JSON.stringify(want.models), ids);
});

await attempt("openai_completions", async () => {
  let ok = true;
  const got = [];
  for (const c of want.completions) {
    const r = await client.completions.create({ model: c.model, prompt: c.prompt,
      max_tokens: c.max_tokens, temperature: 0 });
    got.push(r.choices[0].text);
    ok &&= r.choices[0].text === c.text && r.usage.completion_tokens > 0;
  }
  check("openai_completions", ok, got);
});

await attempt("openai_completions_concurrent", async () => {
  const all = [...want.completions, ...want.completions, ...want.completions];
  const rs = await Promise.all(all.map((c) => client.completions.create({ model: c.model,
    prompt: c.prompt, max_tokens: c.max_tokens, temperature: 0 })));
  const bad = rs.filter((r, i) => r.choices[0].text !== all[i].text).map((r) => r.choices[0].text);
  check("openai_completions_concurrent", bad.length === 0, bad);
});

await attempt("openai_completions_stream", async () => {
  const c = want.completions[1];
  const stream = await client.completions.create({ model: c.model, prompt: c.prompt,
    max_tokens: c.max_tokens, temperature: 0, stream: true,
    stream_options: { include_usage: true } });
  let text = "", finish = null, usage = null;
  for await (const chunk of stream) {
    if (chunk.choices.length) {
      text += chunk.choices[0].text;
      finish = chunk.choices[0].finish_reason ?? finish;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  check("openai_completions_stream", text === c.text && finish === "length" &&
    usage?.completion_tokens === c.max_tokens, { text, finish, usage });
});

await attempt("openai_chat", async () => {
  const c = want.chat;
  const r = await client.chat.completions.create({ model: c.model, max_tokens: c.max_tokens,
    temperature: 0, messages: [{ role: "user", content: c.content }] });
  check("openai_chat", r.choices[0].message.content === c.text &&
    r.choices[0].message.role === "assistant", r.choices[0]);
});

await attempt("openai_chat_stream", async () => {
  const c = want.chat;
  const stream = await client.chat.completions.create({ model: c.model,
    max_tokens: c.max_tokens, temperature: 0, stream: true,
    messages: [{ role: "user", content: c.content }] });
  let text = "", role = null;
  for await (const chunk of stream) {
    role ??= chunk.choices[0]?.delta?.role;
    text += chunk.choices[0]?.delta?.content ?? "";
  }
  check("openai_chat_stream", text === c.text && role === "assistant", { text, role });
});

await attempt("openai_n", async () => {
  const r = await client.completions.create({ model: want.models[0], prompt: "Once upon a time",
    max_tokens: 10, n: 3, temperature: 0.8, seed: 3 });
  const firsts = new Set(r.choices.map((c) => c.text.slice(0, 3)));
  check("openai_n", r.choices.length === 3 && firsts.size === 3, r.choices);
});

await expectStatus("openai_error_unknown_model", 404, () =>
  client.completions.create({ model: "nosuch", prompt: "Hi", max_tokens: 3 }));
await expectStatus("openai_error_bad_value", 400, () =>
  client.completions.create({ model: want.models[0], prompt: "Hi", max_tokens: 3,
    temperature: 9 }));
await expectStatus("openai_error_api_key", 401, () =>
  new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: "wrong", maxRetries: 0 }).models.list());

process.exit(failed ? 1 : 0);

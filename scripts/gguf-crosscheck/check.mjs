// Reads GGUF files with Hugging Face's parser (@huggingface/gguf), which shares no code with
// ours, and checks the layout against its own table of ggml types: the header, metadata and
// tensor infos must parse, and every tensor's data must lie inside the file, aligned, without
// overlap, in a type ggml knows, with a whole number of bytes. Files in edgelora's own types
// (w4, w8, w8a16, ...: docs/formats.md) are reported as types ggml does not know, as llama.cpp
// would refuse them. Usage: npm ci && node check.mjs FILE.gguf ...; exit status 1 if any is bad.
import { gguf } from "@huggingface/gguf";
import { readdirSync, readFileSync, statSync } from "fs";
import { dirname, join } from "path";
import { createRequire } from "module";

// The package keeps its table of bits per weight (GGML_QUANT_SIZES) in an internal module
// whose file name is a build hash: find it rather than name it.
async function quantSizes() {
  const entry = createRequire(import.meta.url).resolve("@huggingface/gguf");
  const dist = dirname(entry);
  for (const f of readdirSync(dist).filter((f) => f.endsWith(".mjs"))) {
    if (/var GGML_QUANT_SIZES\b/.test(readFileSync(join(dist, f), "utf8"))) {
      const m = await import(join(dist, f));
      if (m.GGML_QUANT_SIZES) return m.GGML_QUANT_SIZES;
    }
  }
  throw new Error(`no GGML_QUANT_SIZES in ${dist}`);
}

function problemsOf(parsed, fileSize, bitsPerWeight) {
  const align = BigInt(parsed.metadata["general.alignment"] ?? 32);
  const problems = [];
  if (parsed.tensorDataOffset % align) problems.push("tensor data does not start aligned");
  const spans = [];
  for (const t of parsed.tensorInfos) {
    const bpw = bitsPerWeight[t.dtype];
    if (!bpw) {
      problems.push(`${t.name}: type ${t.dtype} is not one of ggml's`);
      continue;
    }
    const n = t.shape.reduce((a, b) => a * b, 1n);
    const bytes = (Number(n) * bpw) / 8;
    if (!Number.isInteger(bytes)) problems.push(`${t.name}: ${n} elements make no whole block`);
    if (t.offset % align) problems.push(`${t.name}: offset ${t.offset} not aligned`);
    const start = parsed.tensorDataOffset + t.offset;
    spans.push({ name: t.name, start, end: start + BigInt(Math.ceil(bytes)) });
  }
  spans.sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
  spans.forEach((s, i) => {
    if (s.end > fileSize) problems.push(`${s.name}: ends past the end of the file`);
    if (i > 0 && s.start < spans[i - 1].end) problems.push(`${s.name}: overlaps ${spans[i - 1].name}`);
  });
  return problems;
}

const bitsPerWeight = await quantSizes();
let bad = 0;
for (const path of process.argv.slice(2)) {
  let parsed;
  try {
    parsed = await gguf(path, { allowLocalFile: true });
  } catch (e) {
    console.log(`BAD ${path}: does not parse: ${e.message}`);
    bad++;
    continue;
  }
  const problems = problemsOf(parsed, BigInt(statSync(path).size), bitsPerWeight);
  const types = {};
  for (const t of parsed.tensorInfos) types[t.dtype] = (types[t.dtype] ?? 0) + 1;
  const md = parsed.metadata;
  console.log(`${problems.length ? "BAD" : "ok "} ${path}: GGUF v${md.version}, ${md.kv_count} keys, ` +
              `${parsed.tensorInfos.length} tensors, types ${JSON.stringify(types)}`);
  for (const p of problems.slice(0, 5)) console.log(`    ${p}`);
  if (problems.length > 5) console.log(`    and ${problems.length - 5} more`);
  if (problems.length) bad++;
}
process.exit(bad ? 1 : 0);

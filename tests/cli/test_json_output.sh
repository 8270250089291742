#!/usr/bin/env bash
# `info --json` and `run --json`: parsed by Python's JSON parser, compared with llama.cpp's GGUF
# reader (gguf-py) and with the text run streams (tests/cli/json_check.py); and info --json's
# errors.
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh

# gguf-py needs NumPy: the first python3 that has it
PY=python3
for py in python3 /usr/bin/python3; do
    if $py -c "import numpy" 2>/dev/null; then PY=$py; break; fi
done
files="models/base.gguf models/translate-de.gguf models/tokenizer.gguf"
[ -f "$DATA/models/llama-2-tiny-random.gguf" ] && files="$files $DATA/models/llama-2-tiny-random.gguf"
$PY tests/cli/json_check.py "$EL" "${GGUF_PY:-/work/llama.cpp/gguf-py}" $files || n_fail=$((n_fail + 1))

# llama2.c files: valid JSON with their shapes (as info prints them)
M="$DATA/models"
if [ -f "$M/stories260K.bin" ]; then
    expect_exit info_json_llama2c 0 "$EL" info --json "$M/stories260K.bin"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["format"] == "llama2c" and d["dim"] == 64 and d["n_layers"] == 5 and d["total"]["parameters"] == 260032' "$TMP/out" &&
        pass info_json_llama2c_fields || fail info_json_llama2c_fields "$(cat "$TMP/out")"
    expect_exit info_json_tokenizer 0 "$EL" info --json "$M/tok512.bin"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["tokens"] == 512 and d["first_tokens"][0]["text"] == "<unk>"' "$TMP/out" &&
        pass info_json_tokenizer_fields || fail info_json_tokenizer_fields "$(cat "$TMP/out")"
else
    skip info_json_llama2c "$M/stories260K.bin is absent"
fi
printf 'not a model at all' > "$TMP/junk.gguf"
expect_exit info_json_junk 1 "$EL" info --json "$TMP/junk.gguf"
grep -q "junk.gguf: unknown format" "$TMP/err" && [ ! -s "$TMP/out" ] && pass info_json_junk_message ||
    fail info_json_junk_message "$(cat "$TMP/err")" "$(head -c 200 "$TMP/out")"
# -m FILE, as every other command takes its model: the same output as FILE alone
"$EL" info --json models/base.gguf > "$TMP/plain.json" 2>/dev/null
expect_exit info_dash_m 0 "$EL" info -m models/base.gguf --json
cmp -s "$TMP/out" "$TMP/plain.json" && pass info_dash_m_same ||
    fail info_dash_m_same "$(head -c 200 "$TMP/out")"
expect_exit info_dash_m_missing 2 "$EL" info --json -m
grep -q "\-m needs a file" "$TMP/err" && pass info_dash_m_missing_message ||
    fail info_dash_m_missing_message "$(cat "$TMP/err")"
head -c 1000 models/translate-de.gguf > "$TMP/cut.gguf"
expect_exit info_json_truncated 1 "$EL" info --json "$TMP/cut.gguf"
[ ! -s "$TMP/out" ] && grep -q "cut.gguf" "$TMP/err" && pass info_json_truncated_nothing_out ||
    fail info_json_truncated_nothing_out "$(cat "$TMP/err")"
finish

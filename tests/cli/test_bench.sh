#!/usr/bin/env bash
# `edgelora bench` on a tiny model, for sanity, not speed: the --json object has every field,
# the numbers are positive and consistent with each other, and the table form prints too.
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh

G=tests/golden/llama_q4_0_linear.gguf
for t in 1 2; do
    expect_exit "bench_json_t$t" 0 "$EL" bench -m "$G" -t $t -p 32 -n 8 -r 2 --json
    j=$(cat "$TMP/out")
    num() { printf '%s' "$j" | sed -n "s/.*\"$1\": \([-0-9.e+]*\).*/\1/p"; }
    missing=""
    for k in pp_tokens_per_s tg_tokens_per_s ttft_ms load_ms peak_rss_bytes bandwidth_gb_s \
             bound_tokens_per_s fraction_of_bound bytes_per_token file_bytes kv_bytes \
             pp_tokens_per_s_min tg_tokens_per_s_max bandwidth_gb_s_min load_ms_max; do
        v=$(num $k)
        [ -n "$v" ] && awk -v v="$v" 'BEGIN { exit !(v > 0) }' || missing="$missing $k=$v"
    done
    [ -z "$missing" ] && pass "bench_fields_t$t" || fail "bench_fields_t$t" "missing or not positive:$missing" "$j"
    # bytes in 2 MB pages: a count of whole 2 MB pages (0 for this small file is fine), never
    # more than the file
    h=$(num huge_mapped_bytes)
    [ -n "$h" ] && awk -v h="$h" -v f="$(num file_bytes)" 'BEGIN { exit !(h >= 0 && h <= f && h % 2097152 == 0) }' &&
        pass "bench_huge_t$t" || fail "bench_huge_t$t" "huge_mapped_bytes '$h'" "$j"
    # generations whose bandwidth moved by more than 25% between the reads around them: a count
    # of repetitions
    mv=$(printf '%s' "$j" | sed -n 's/.*"bandwidth_moved_reps": \([0-9]*\),.*/\1/p')
    [ -n "$mv" ] && [ "$mv" -ge 0 ] && [ "$mv" -le 2 ] && pass "bench_moved_t$t" ||
        fail "bench_moved_t$t" "bandwidth_moved_reps '$mv'" "$j"
    printf '%s' "$j" | grep -q "\"threads\": $t," && printf '%s' "$j" | grep -q '"type": "q4_0"' &&
        printf '%s' "$j" | grep -q '"reps": 2,' && pass "bench_echo_t$t" || fail "bench_echo_t$t" "$j"
    # the bound is the median bandwidth over the bytes per token; the fraction, the median of
    # each generation over the bound of its bandwidth (the higher of the reads before and after
    # it), lies between the slowest generation over the highest bound and the fastest over the
    # lowest
    if awk -v bw="$(num bandwidth_gb_s)" -v b="$(num bytes_per_token)" -v bound="$(num bound_tokens_per_s)" \
           -v bwlo="$(num bandwidth_gb_s_min)" -v bwhi="$(num bandwidth_gb_s_max)" \
           -v tg="$(num tg_tokens_per_s)" -v f="$(num fraction_of_bound)" -v lo="$(num tg_tokens_per_s_min)" \
           -v hi="$(num tg_tokens_per_s_max)" -v ttft="$(num ttft_ms)" -v pp="$(num pp_tokens_per_s)" \
           'BEGIN { r = bw * 1e9 / b / bound; flo = lo / (bwhi * 1e9 / b); fhi = hi / (bwlo * 1e9 / b);
                    exit !(r > 0.999 && r < 1.001 && f >= flo * 0.999 && f <= fhi * 1.001 &&
                           f > 0 && f < 1.5 && lo <= tg && tg <= hi && ttft >= 32 / pp * 1000 * 0.999) }'; then
        pass "bench_consistent_t$t"; else fail "bench_consistent_t$t" "$j"; fi
done
# bytes per token: every 2-D weight but the embedding table (the golden model has an output head)
want=$("$EL" info "$G" | awk '/^  [a-z_.0-9]*: [a-z0-9_]* \[[0-9]*, [0-9]*\]/ && $1 != "token_embd.weight:" { s += $(NF-1) } END { print s }')
[ "$(num bytes_per_token)" = "$want" ] && pass bench_bytes_per_token || fail bench_bytes_per_token "bench $(num bytes_per_token), info $want"

# the KV cache's element type, echoed, and its bytes: this model has 1 layer of 2 kv heads of 16
# dims (128 / 8 heads), so a cell holds 2 x 2 x 16 = 64 elements of K and V; -p 32 -n 8 is 40
# cells: 5120 bytes of fp16 (the default), 10240 of float32
expect_exit bench_kv_default 0 "$EL" bench -m "$G" -t 1 -p 32 -n 8 -r 1 --json
grep -q '"kv_type": "f16"' "$TMP/out" && grep -q '"kv_bytes": 5120,' "$TMP/out" &&
    pass bench_kv_f16_bytes || fail bench_kv_f16_bytes "$(cat "$TMP/out")"
expect_exit bench_kv_f32 0 "$EL" bench -m "$G" -t 1 -p 32 -n 8 -r 1 --kv-type f32 --json
grep -q '"kv_type": "f32"' "$TMP/out" && grep -q '"kv_bytes": 10240,' "$TMP/out" &&
    pass bench_kv_f32_bytes || fail bench_kv_f32_bytes "$(cat "$TMP/out")"
expect_exit bench_kv_table 0 "$EL" bench -m "$G" -t 1 -p 16 -n 4 -r 1 --kv-type f32
grep -q 'KV cache 0.0 MB of f32' "$TMP/out" && pass bench_kv_table_row || fail bench_kv_table_row "$(cat "$TMP/out")"
expect_exit bench_bad_kv_type 2 "$EL" bench -m "$G" --kv-type q8_0
grep -q "kv-type: 'q8_0' is not f16 or f32" "$TMP/err" && pass bench_bad_kv_type_message ||
    fail bench_bad_kv_type_message "$(cat "$TMP/err")"
expect_exit bench_kv_type_no_value 2 "$EL" bench -m "$G" --kv-type

# chunks of 8 rows: same run, the chunk size echoed; 0 is not a size
expect_exit bench_ubatch 0 "$EL" bench -m "$G" -t 1 -p 32 -n 4 -u 8 -r 1 --json
grep -q '"n_batch": 32, "n_ubatch": 8,' "$TMP/out" && pass bench_ubatch_echo || fail bench_ubatch_echo "$(cat "$TMP/out")"
expect_exit bench_bad_ubatch 2 "$EL" bench -m "$G" -u 0
expect_exit bench_table 0 "$EL" bench -m "$G" -t 1 -p 16 -n 4 -r 1
grep -q '^fraction ' "$TMP/out" && grep -q '^bandwidth ' "$TMP/out" && grep -q '^2 MB pages ' "$TMP/out" && pass bench_table_rows || fail bench_table_rows "$(cat "$TMP/out")"
# the page-size hint: never for a small model (it decodes from cache); for a 116 MB one exactly
# when under half of it is in 2 MB pages. A `cp` leaves the copy in 4 KB pages (Linux 6.18/ext4):
# with --keep-page-cache the load keeps them; without, it reads the file again into 2 MB pages
# (where the kernel gives files any: transparent huge pages not off), and there is no hint
grep -q '^pages ' "$TMP/out" && fail bench_pages_hint_small "$(cat "$TMP/out")" || pass bench_pages_hint_small
huge_of() { sed -n 's/.*"huge_mapped_bytes": \([0-9]*\).*/\1/p' "$1"; }
if "$EL" synth --shape stories110m --type q8_0 -o "$TMP/s110.gguf" 2>/dev/null && cp "$TMP/s110.gguf" "$TMP/s110copy.gguf" &&
    "$EL" bench -m "$TMP/s110copy.gguf" -t 1 -p 8 -n 2 -r 1 --keep-page-cache --json > "$TMP/s110.json" 2>/dev/null &&
    "$EL" bench -m "$TMP/s110copy.gguf" -t 1 -p 8 -n 2 -r 1 --keep-page-cache > "$TMP/s110.txt" 2>/dev/null &&
    "$EL" bench -m "$TMP/s110copy.gguf" -t 1 -p 8 -n 2 -r 1 --json > "$TMP/s110r.json" 2>/dev/null &&
    "$EL" bench -m "$TMP/s110copy.gguf" -t 1 -p 8 -n 2 -r 1 > "$TMP/s110r.txt" 2>/dev/null; then
    h=$(huge_of "$TMP/s110.json")
    f=$(sed -n 's/.*"file_bytes": \([0-9]*\).*/\1/p' "$TMP/s110.json")
    want=0; [ -n "$h" ] && [ -n "$f" ] && [ $((h * 2)) -lt "$f" ] && want=1
    got=0; grep -q "^pages .*4 KB pages" "$TMP/s110.txt" && grep -q "dd if=$TMP/s110copy.gguf" "$TMP/s110.txt" && got=1
    [ -n "$h" ] && [ "$want" = "$got" ] && pass bench_pages_hint || fail bench_pages_hint "huge $h of $f" "$(cat "$TMP/s110.txt")"
    h=$(huge_of "$TMP/s110r.json")
    if grep -q '\[never\]' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null; then
        skip bench_pages_reload "transparent huge pages are off"
    else
        [ -n "$h" ] && [ $((h * 2)) -ge "$f" ] && ! grep -q '^pages ' "$TMP/s110r.txt" && pass bench_pages_reload ||
            fail bench_pages_reload "huge $h of $f" "$(cat "$TMP/s110r.txt")"
    fi
else
    fail bench_pages_hint "synth or bench failed"
fi

# without -m, the default model as every command takes it; none there: a usage error
expect_exit bench_default_model 0 "$EL" bench -t 1 -p 16 -n 4 -r 1 --json
grep -q '"model": "[^"]*models/base.gguf"' "$TMP/out" && pass bench_default_model_echo ||
    fail bench_default_model_echo "$(cat "$TMP/out")"
EDGELORA_MODEL= expect_exit bench_no_model 2 "$EL_NODEFAULT" bench -p 16
grep -q "no model given" "$TMP/err" && pass bench_no_model_message || fail bench_no_model_message "$(cat "$TMP/err")"
expect_exit bench_bad_reps 2 "$EL" bench -m "$G" -r 0
expect_exit bench_bad_option 2 "$EL" bench -m "$G" --fast
expect_exit bench_missing_file 1 "$EL" bench -m /nonexistent.gguf
# --lora binds adapters to the measured sequence, as run does: echoed in both forms; an adapter
# that does not fit the base, or none at the path, fails naming it; with --variants, variant i
# binds adapter i mod N
LB=tests/golden/lora_llama_base.gguf
expect_exit bench_lora_json 0 "$EL" bench -m "$LB" --lora tests/golden/lora_llama_peft -t 1 -p 16 -n 4 -r 1 --json
grep -q '"adapters": 1,' "$TMP/out" && pass bench_lora_json_echo || fail bench_lora_json_echo "$(cat "$TMP/out")"
# the adapter's bytes (its A and B, as `adapters` lists its memory) count in the bound: the bound is
# the bandwidth over the weights' and the adapter's bytes
jl=$(cat "$TMP/out")
lnum() { printf '%s' "$jl" | sed -n "s/.*\"$1\": \([-0-9.e+]*\).*/\1/p"; }
ab=$(lnum adapter_bytes_per_token)
if awk -v ab="$ab" -v b="$(lnum bytes_per_token)" -v bw="$(lnum bandwidth_gb_s)" -v bound="$(lnum bound_tokens_per_s)" \
       'BEGIN { r = bw * 1e9 / (b + ab) / bound; exit !(ab > 0 && r > 0.999 && r < 1.001) }'; then
    pass bench_lora_bound; else fail bench_lora_bound "$jl"; fi
[ "$(num adapter_bytes_per_token)" = 0 ] && pass bench_no_adapter_bytes || fail bench_no_adapter_bytes "$j"
expect_exit bench_lora_table 0 "$EL" bench -m "$LB" --lora-scaled tests/golden/lora_llama_peft 0.5 -t 1 -p 16 -n 4 -r 1
grep -q '^adapter    tests/golden/lora_llama_peft, scale 0.5$' "$TMP/out" && pass bench_lora_table_row ||
    fail bench_lora_table_row "$(cat "$TMP/out")"
expect_exit bench_lora_mismatch 1 "$EL" bench -m "$LB" --lora tests/golden/lora_stories.gguf -p 16 -n 4 -r 1
grep -q "lora_stories.gguf: .*only 2 blocks" "$TMP/err" && pass bench_lora_mismatch_message ||
    fail bench_lora_mismatch_message "$(cat "$TMP/err")"
expect_exit bench_lora_missing 1 "$EL" bench -m "$LB" --lora "$TMP/none.gguf" -p 16 -n 4 -r 1
grep -q "none.gguf" "$TMP/err" && pass bench_lora_missing_message || fail bench_lora_missing_message "$(cat "$TMP/err")"
expect_exit bench_lora_variants 0 "$EL" bench -m "$LB" --lora tests/golden/lora_llama_peft \
    --lora-scaled tests/golden/lora_llama_peft 2 --variants 3 -p 8 -n 3 -r 1
grep -q '^adapter    tests/golden/lora_llama_peft, scale 1: variants 0 2$' "$TMP/out" &&
    grep -q '^adapter    tests/golden/lora_llama_peft, scale 2: variants 1$' "$TMP/out" &&
    pass bench_lora_variants_rows || fail bench_lora_variants_rows "$(cat "$TMP/out")"
expect_exit bench_lora_variants_json 0 "$EL" bench -m "$LB" --lora tests/golden/lora_llama_peft --variants 2 \
    -p 8 -n 3 -r 1 --json
grep -q '"adapters": 1' "$TMP/out" && pass bench_lora_variants_json_echo || fail bench_lora_variants_json_echo "$(cat "$TMP/out")"
expect_exit bench_lora_variants_mismatch 1 "$EL" bench -m "$LB" --lora tests/golden/lora_stories.gguf --variants 2 -p 8 -n 3 -r 1
grep -q "lora_stories.gguf" "$TMP/err" && pass bench_lora_variants_mismatch_message ||
    fail bench_lora_variants_mismatch_message "$(cat "$TMP/err")"
# --variants K: K greedy variants against one, for sanity (not speed). Each variant of -n 6 tokens
# decodes 5 of them (its first comes from the prompt's logits), so K = 3 after 10 prompt tokens
# leaves 10 + 3 x 5 cells; a cell of this model (1 layer, 2 kv heads of 16 dims, K and V) is
# 2 x 2 x 16 elements: 128 bytes of fp16, 256 of float32.
for kv in f16 f32; do
    expect_exit "bench_variants_$kv" 0 "$EL" bench -m "$G" -t 2 --variants 3 -p 10 -n 6 -r 1 --kv-type $kv --json
    j=$(cat "$TMP/out")
    cell=$([ $kv = f16 ] && echo 128 || echo 256)
    missing=""
    for k in one_ms all_ms one_prompt_ms all_prompt_ms one_step_ms all_step_ms wall_ratio \
             generation_ratio cpu_ratio load_ms peak_rss_bytes file_bytes; do
        v=$(num $k)
        [ -n "$v" ] && awk -v v="$v" 'BEGIN { exit !(v > 0) }' || missing="$missing $k=$v"
    done
    [ -z "$missing" ] && pass "bench_variants_fields_$kv" || fail "bench_variants_fields_$kv" "missing or not positive:$missing" "$j"
    [ "$(num kv_cell_bytes)" = $cell ] && [ "$(num kv_cells_used)" = 25 ] &&
        [ "$(num prompt_kv_bytes)" = $((10 * cell)) ] && [ "$(num extra_variant_cells)" = 5 ] &&
        [ "$(num extra_variant_bytes)" = $((5 * cell)) ] && printf '%s' "$j" | grep -q '"variants": 3,' &&
        pass "bench_variants_kv_$kv" || fail "bench_variants_kv_$kv" "$j"
    # one repetition: the ratio is the two wall times' quotient, each wall time at least its
    # prompt plus its 5 steps
    awk -v r="$(num wall_ratio)" -v a="$(num all_ms)" -v o="$(num one_ms)" -v op="$(num one_prompt_ms)" \
        -v os="$(num one_step_ms)" -v ap="$(num all_prompt_ms)" -v as="$(num all_step_ms)" \
        'BEGIN { exit !(r > 0.999 * a / o && r < 1.001 * a / o && o >= 0.999 * (op + 5 * os) &&
                        a >= 0.999 * (ap + 5 * as)) }' &&
        pass "bench_variants_consistent_$kv" || fail "bench_variants_consistent_$kv" "$j"
done
expect_exit bench_variants_table 0 "$EL" bench -m "$G" -t 1 --variants 2 -p 8 -n 4 -r 2
grep -q '^K = 1 ' "$TMP/out" && grep -q '^K = 2 ' "$TMP/out" && grep -q '^ratio ' "$TMP/out" &&
    grep -q '^KV cache   128 bytes a cell (f16); the prompt stored once: 8 cells = 1024 bytes; each extra variant 3 cells = 384 bytes' "$TMP/out" &&
    pass bench_variants_table_rows || fail bench_variants_table_rows "$(cat "$TMP/out")"
expect_exit bench_variants_zero 2 "$EL" bench -m "$G" --variants 0
expect_exit bench_variants_no_value 2 "$EL" bench -m "$G" --variants
expect_exit bench_variants_too_many 2 "$EL" bench -m "$G" --variants 257
expect_exit bench_variants_one_token 2 "$EL" bench -m "$G" --variants 2 -n 1
grep -q -- "--variants needs -n 2 or more" "$TMP/err" && pass bench_variants_one_token_message ||
    fail bench_variants_one_token_message "$(cat "$TMP/err")"
# --rows: one entry per count, in order, each fraction the larger floor over the median step;
# the memory floor the step's bytes over its bandwidth, the compute floor R x a row's
# multiply-adds over the int8 peak (the same peak for every R)
expect_exit bench_rows_json 0 "$EL" bench -m "$G" -t 2 --rows 1,3,2 -p 16 -n 4 -r 2 --json
j=$(cat "$TMP/out")
# (the object split at each row's start: the first line holds the run's figures)
if printf '%s' "$j" | sed 's/{"rows": /\n/g' | awk '
    function get(k,   m) {
        if (!match($0, "\"" k "\": [-0-9.e+]+")) { bad = 1; return 0 }
        m = substr($0, RSTART, RLENGTH); sub(/.*: /, "", m); return m + 0
    }
    function near(a, b) { return b > 0 && a / b > 0.9999 && a / b < 1.0001 }
    NR == 1 { peak = get("int8_peak_gmacs_per_s"); macs = get("multiply_adds_per_row")
              step = get("step_bytes"); bad = bad || !(peak > 0 && macs > 0 && step > 0)
              bad = bad || $0 !~ /"instruction": "[a-z]/; next }
    { r = $1 + 0; order = order " " r
      mem = step / (get("bandwidth_gb_s") * 1e9) * 1e3; comp = r * macs / (peak * 1e9) * 1e3
      fl = mem > comp ? mem : comp
      bad = bad || !near(get("memory_floor_ms"), mem) || !near(get("compute_floor_ms"), comp) ||
            !near(get("fraction") * get("step_ms"), fl) ||
            !(0 < get("step_ms_min") && get("step_ms_min") <= get("step_ms") && get("step_ms") <= get("step_ms_max")) }
    END { exit bad || order != " 1 3 2" }'; then pass bench_rows_consistent; else fail bench_rows_consistent "$j"; fi
expect_exit bench_rows_table 0 "$EL" bench -m "$G" -t 1 --rows 2 -p 8 -n 2 -r 1
grep -q '^int8 peak ' "$TMP/out" && grep -Eq '^ +2 +[0-9.]+ ' "$TMP/out" &&
    pass bench_rows_table_rows || fail bench_rows_table_rows "$(cat "$TMP/out")"
# the reference kernels have no probe: no compute floor, said so
EL_FORCE_REFERENCE=1 expect_exit bench_rows_reference 0 "$EL" bench -m "$G" -t 1 --rows 1 -p 8 -n 2 -r 1
grep -q 'int8 peak  none: the reference kernels have no probe' "$TMP/out" &&
    pass bench_rows_reference_says || fail bench_rows_reference_says "$(cat "$TMP/out")"
for bad in 0 65 1,,2 1,x 2, ""; do
    expect_exit "bench_rows_bad_'$bad'" 2 "$EL" bench -m "$G" --rows "$bad"
    grep -q -- "--rows takes up to 32 comma-separated counts" "$TMP/err" &&
        pass "bench_rows_bad_message_'$bad'" || fail "bench_rows_bad_message_'$bad'" "$(cat "$TMP/err")"
done
expect_exit bench_rows_and_variants 2 "$EL" bench -m "$G" --rows 2 --variants 2
finish

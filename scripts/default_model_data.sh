#!/usr/bin/env bash
# default_model_data.sh - the data of the default model (scripts/train_default_model.sh), from
# ../shared/data/corpus into $WORK/data: each corpus file split into training and held-out lines
# (the last 2%), and the JSONL examples of every adapter task made from those splits. Also run by
# the scripts that score the committed model again (scripts/profile_default_model.sh).
#
# Environment: CORPUS, WORK, SEED (of the typo task's noise).
set -euo pipefail
cd "$(dirname "$0")/.."
CORPUS=${CORPUS:-../shared/data/corpus}
WORK=${WORK:-build/default-model}
SEED=${SEED:-1}
LANGS="en de fr es it pt pl ru nl"
mkdir -p "$WORK/data"

# ---- 1. data: the last 2% of the lines of each file are our held-out split (the corpus's own
# held-out slice is not in these files)
split_file() { # in train_out eval_out
    local n; n=$(wc -l < "$1")
    local keep=$((n - n / 50))
    head -n "$keep" "$1" > "$2"
    tail -n +"$((keep + 1))" "$1" > "$3"
}
for l in $LANGS; do
    split_file "$CORPUS/$l.txt" "$WORK/data/$l.train.txt" "$WORK/data/$l.eval.txt"
done
for l in $LANGS; do
    [ "$l" = en ] && continue
    split_file "$CORPUS/en-$l.tsv" "$WORK/data/en-$l.train.tsv" "$WORK/data/en-$l.eval.tsv"
done
# the translations are text in their languages too
cut -f1,2 "$WORK"/data/en-*.train.tsv | tr '\t' '\n' > "$WORK/data/parallel.train.txt"

# ---- 2. adapter data as JSONL ({"prompt": ..., "response": ...})
# awk helpers: JSON string escaping, and seeded noise for the typo task
# (lines with a backslash or a control character are skipped: awks disagree on escaping them)
AWK_JSON='/\\/ { next } { for (i = 1; i <= NF; i++) if ($i ~ /[[:cntrl:]]/) next }
    function js(s) { gsub(/"/, "\\\"", s)
    gsub(/\n/, "\\n", s); gsub(/\t/, "\\t", s); gsub(/\r/, "\\r", s); return "\"" s "\"" }'
tsv_to_jsonl() { # tsv prompt_prefix lang > jsonl: translate English into the second column's
    # language (lang: its code, for `edgelora eval`; finetune ignores it)
    awk -F'\t' -v pre="$2" -v lang="$3" "$AWK_JSON"' length($1) < 120 && length($2) < 160 {
        print "{\"prompt\": " js(pre $1 "\n") ", \"response\": " js($2) ", \"lang\": " js(lang) "}" }' "$1"
}
typo_jsonl() { # text utf8 lang > jsonl: a sentence with dropped, doubled and swapped letters -> the
    # sentence. utf8=0 (typo-en as it was trained): letters are the ASCII a-z and lengths count
    # bytes; utf8=1 (typo, every language): a UTF-8 character of two or more bytes is a letter too
    # (the corpus's accented and Cyrillic letters, and also its few typographic quotes and
    # dashes, which get the same noise) and lengths count characters.
    LC_ALL=C awk -v seed="$SEED" -v utf8="$2" -v lang="$3" "$AWK_JSON"' BEGIN { srand(seed) }
    function chars(t, c,   n, j, k) { n = 0
        for (j = 1; j <= length(t); j = k) { k = j + 1
            if (utf8 && substr(t, j, 1) >= "\300")
                while (k <= length(t) && substr(t, k, 1) >= "\200" && substr(t, k, 1) < "\300") k++
            c[++n] = substr(t, j, k - j) }
        return n }
    function letter(c) { return c ~ /^[a-z]$/ || (utf8 && c >= "\300") }
    { n = split($0, s, /[.!?] /); for (i = 1; i <= n; i++) {
        t = s[i]; m = chars(t, c); if (m < 20 || m > 120) continue
        out = ""; for (j = 1; j <= m; j++) { r = letter(c[j]) ? rand() : 1
            if (r < 0.03) continue; else if (r < 0.06) out = out c[j] c[j]
            else if (r < 0.09 && j < m && letter(c[j + 1])) { out = out c[j + 1] c[j]; j++ }
            else out = out c[j] }
        print "{\"prompt\": " js("Fix: " out "\n") ", \"response\": " js(t) ", \"lang\": " js(lang) "}" } }' "$1"
}
continue_jsonl() { # text lang > jsonl: the first words of a paragraph -> the next ones (and
    # "lang", the language `edgelora eval --metric lang` expects; finetune ignores it)
    awk -v lang="$2" "$AWK_JSON"' { n = split($0, w, " "); if (n < 24) next
        p = w[1]; for (i = 2; i <= 12; i++) p = p " " w[i]; r = ""; for (i = 13; i <= 24; i++) r = r " " w[i]
        print "{\"prompt\": " js("[" lang "] " p) ", \"response\": " js(r) ", \"lang\": " js(lang) "}" }' "$1"
}
upper_jsonl() { # text > jsonl: a sentence -> the same in capitals (a style adapter)
    awk "$AWK_JSON"' { n = split($0, s, /[.!?] /); for (i = 1; i <= n; i++) if (length(s[i]) > 20 && length(s[i]) < 100)
        print "{\"prompt\": " js("Shout: " s[i] "\n") ", \"response\": " js(toupper(s[i])) "}" }' "$1"
}
for split in train eval; do
    d="$WORK/data"
    tsv_to_jsonl "$d/en-de.$split.tsv" "German: " de > "$d/translate-de.$split.jsonl"
    tsv_to_jsonl "$d/en-fr.$split.tsv" "French: " fr > "$d/translate-fr.$split.jsonl"
    tsv_to_jsonl "$d/en-es.$split.tsv" "Spanish: " es > "$d/translate-es.$split.jsonl"
    tsv_to_jsonl "$d/en-it.$split.tsv" "Italian: " it > "$d/translate-it.$split.jsonl"
    tsv_to_jsonl "$d/en-pt.$split.tsv" "Portuguese: " pt > "$d/translate-pt.$split.jsonl"
    tsv_to_jsonl "$d/en-pl.$split.tsv" "Polish: " pl > "$d/translate-pl.$split.jsonl"
    tsv_to_jsonl "$d/en-ru.$split.tsv" "Russian: " ru > "$d/translate-ru.$split.jsonl"
    tsv_to_jsonl "$d/en-nl.$split.tsv" "Dutch: " nl > "$d/translate-nl.$split.jsonl"
    typo_jsonl "$d/en.$split.txt" 0 en > "$d/typo-en.$split.jsonl"
    : > "$d/typo.$split.jsonl"
    for l in $LANGS; do typo_jsonl "$d/$l.$split.txt" 1 "$l" >> "$d/typo.$split.jsonl"; done
    : > "$d/continue.$split.jsonl"
    for l in $LANGS; do continue_jsonl "$d/$l.$split.txt" "$l" >> "$d/continue.$split.jsonl"; done
    upper_jsonl "$d/en.$split.txt" > "$d/shout-en.$split.jsonl"
done
# held-out examples whose prompt or response also occurs in training (UI catalogs repeat strings
# such as "Cancel" across packages) would score memory, not skill: drop them
drop_seen() { # train.jsonl eval.jsonl: rewrites eval.jsonl
    awk 'function key(s, part,   i) { i = index(s, ", \"response\": ")
            return part == 1 ? substr(s, 1, i) : substr(s, i) }
        NR == FNR { seen[key($0, 1)]; seen[key($0, 2)]; next }
        !(key($0, 1) in seen) && !(key($0, 2) in seen)' "$1" "$2" > "$2.tmp"
    mv "$2.tmp" "$2"
}
TASKS_ALL="translate-de translate-fr translate-es translate-it translate-pt translate-pl
    translate-ru translate-nl typo-en typo continue shout-en"
for task in $TASKS_ALL; do
    drop_seen "$WORK/data/$task.train.jsonl" "$WORK/data/$task.eval.jsonl"
done

# the tasks over every language also held out language by language: <task>.<lang>.eval.jsonl
for task in typo continue; do
    for l in $LANGS; do
        grep -F "\"lang\": \"$l\"}" "$WORK/data/$task.eval.jsonl" > "$WORK/data/$task.$l.eval.jsonl" || true
    done
done

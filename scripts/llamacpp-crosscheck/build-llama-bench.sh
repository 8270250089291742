#!/usr/bin/env bash
# Builds llama.cpp's own llama-bench, llama-perplexity, llama-quantize, the draft-free speculative
# decoders llama-lookup and llama-lookahead (docs/speculative.md), and the greedy
# generators llama-simple and llama-completion, natively for this CPU, from the llama.cpp
# source node-llama-cpp ships (node_modules/node-llama-cpp/llama/gitRelease.bundle, after npm
# install), into DIR (default /tmp/llama.cpp). References outside our tree: `edgelora bench`
# and `DIR/build/bin/llama-bench -m MODEL -t N -p 512 -n 128` on the same model, alternated (a
# shared machine's memory changes speed between runs); perplexity-check.sh and
# quantize-check.sh (llama-simple -m MODEL -n N PROMPT is greedy; so is llama-completion
# -m MODEL -p PROMPT -n N --temp 0 -no-cnv).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-/tmp/llama.cpp}
bundle="$here/node_modules/node-llama-cpp/llama/gitRelease.bundle"
if [ ! -d "$dir/.git" ]; then # the bundle is needed only to clone
    [ -f "$bundle" ] || { echo "build-llama-bench: $bundle is absent (run npm install in $here)" >&2; exit 1; }
    git clone -q "$bundle" "$dir"
fi
cmake -S "$dir" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
      -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF >/dev/null
tools=(llama-bench llama-perplexity llama-quantize llama-simple llama-completion llama-lookup llama-lookahead)
cmake --build "$dir/build" --target "${tools[@]}" -j"${JOBS:-$(nproc)}"
echo "built ${tools[*]} in $dir/build/bin ($(git -C "$dir" log -1 --format=%cd --date=short))"

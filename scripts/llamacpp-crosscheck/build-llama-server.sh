#!/usr/bin/env bash
# Builds llama.cpp's llama-server natively for this CPU into DIR/build/bin (DIR default
# /tmp/llama.cpp, cloned from the bundle node-llama-cpp ships as build-llama-bench.sh does), for
# bench/serve_compare.sh: the same load against `edgelora serve` and `llama-server` (its --lora
# files, its per-request "lora" field of {id, scale}).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-/tmp/llama.cpp}
bundle="$here/node_modules/node-llama-cpp/llama/gitRelease.bundle"
if [ ! -d "$dir/.git" ]; then
    [ -f "$bundle" ] || { echo "build-llama-server: $bundle is absent (run npm install in $here)" >&2; exit 1; }
    git clone -q "$bundle" "$dir"
fi
cmake -S "$dir" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
      -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=ON >/dev/null
cmake --build "$dir/build" --target llama-server -j"${JOBS:-$(nproc)}"
echo "built llama-server in $dir/build/bin ($(git -C "$dir" log -1 --format=%cd --date=short))"

#!/usr/bin/env bash
# Builds llama.cpp's own llama-bench and llama-perplexity, natively for this CPU, from the
# llama.cpp source node-llama-cpp ships (node_modules/node-llama-cpp/llama/gitRelease.bundle,
# after npm install), into DIR (default /tmp/llama.cpp). A reference to measure against, outside our
# tree: `edgelora bench` and `DIR/build/bin/llama-bench -m MODEL -t N -p 512 -n 128` on the same
# model, alternated (a shared machine's memory changes speed between runs).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-/tmp/llama.cpp}
bundle="$here/node_modules/node-llama-cpp/llama/gitRelease.bundle"
[ -f "$bundle" ] || { echo "build-llama-bench: $bundle is absent (run npm install in $here)" >&2; exit 1; }
[ -d "$dir/.git" ] || git clone -q "$bundle" "$dir"
cmake -S "$dir" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
      -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF >/dev/null
cmake --build "$dir/build" --target llama-bench llama-perplexity -j"$(nproc)"
echo "built $dir/build/bin/llama-bench and llama-perplexity ($(git -C "$dir" log -1 --format=%cd --date=short))"

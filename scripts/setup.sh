#!/bin/sh
# Installs the Debian packages edgelora needs to build and test, then builds it.
# Run as root (or with sudo) on Debian 12.
set -e
cd "$(dirname "$0")/.."
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q || true
    # build: compiler, make, OpenBLAS/LAPACKE (training and compression tools only), libedit
    # (line editing in `edgelora chat`), libpng and zlib (the image model's PNGs and MNIST
    # files: tools only), libmicrohttpd (HTTP of `edgelora serve`);
    # tests: clang with libFuzzer, the ARM cross compiler, qemu-user, jinja2 (chat templates
    # rendered independently of edgelora's code), curl and jq (the server's tests), numpy
    # (GPTQ's reference, tests/golden/gptq_golden.py)
    apt-get install -y -q --no-install-recommends \
        build-essential pkg-config clang libclang-rt-14-dev qemu-user gcc-aarch64-linux-gnu \
        libc6-dev-arm64-cross libopenblas-dev liblapacke-dev libedit-dev libpng-dev zlib1g-dev \
        libmicrohttpd-dev python3-jinja2 curl jq python3-numpy
    # the OpenAI client the server's tests drive it with runs on Node (Debian 12's is 18)
    command -v node >/dev/null || apt-get install -y -q --no-install-recommends nodejs npm
fi
# the official OpenAI client, at the version tests/node/package-lock.json pins
if command -v npm >/dev/null; then
    (cd tests/node && npm ci --no-audit --no-fund --loglevel=error)
fi
make -j"$(nproc)"

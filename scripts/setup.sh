#!/bin/sh
# Installs the Debian packages edgelora needs to build and test, then builds it.
# Run as root (or with sudo) on Debian 12.
set -e
cd "$(dirname "$0")/.."
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q || true
    # build: compiler, make, OpenBLAS/LAPACKE (training and compression tools only), libedit
    # (line editing in `edgelora chat`);
    # tests: clang with libFuzzer, the ARM cross compiler, qemu-user, jinja2 (chat templates
    # rendered independently of edgelora's code), numpy (GPTQ's reference, tests/golden/gptq_golden.py)
    apt-get install -y -q --no-install-recommends \
        build-essential pkg-config clang libclang-rt-14-dev qemu-user gcc-aarch64-linux-gnu \
        libc6-dev-arm64-cross libopenblas-dev liblapacke-dev libedit-dev python3-jinja2 \
        python3-numpy
fi
make -j"$(nproc)"

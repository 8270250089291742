#!/bin/sh
# Trains the committed inpainting adapter models/digits-inpaint.gguf (docs/vision.md) on the
# frozen models/digits-unet.gguf, with the same 9000 MNIST images (the last 1000 held out).
# About 5 minutes on one core of the development machine; -t sets threads.
set -eu
cd "$(dirname "$0")/.."
data=${EL_DATA_DIR:-../shared/data}/images
exec "${EL_BIN:-build/edgelora}" finetune-diffusion -m models/digits-unet.gguf --task inpaint \
    --images "$data/t10k-images-idx3-ubyte.gz" --labels "$data/t10k-labels-idx1-ubyte.gz" \
    --heldout 1000 --rank 4 --alpha 4 --steps 600 --batch 32 --lr 2e-3 --warmup 50 \
    --eval-every 100 --eval-batches 4 --seed 1 -t "${THREADS:-1}" \
    -o models/digits-inpaint.gguf "$@"

#!/bin/sh
# Trains the committed digit classifier models/digits-classifier.gguf (docs/vision.md), whose
# features FID-MNIST compares, on the same 9000 MNIST images as the image model (the last 1000
# held out, where its accuracy is measured). About a minute on one core.
set -eu
cd "$(dirname "$0")/.."
data=${EL_DATA_DIR:-../shared/data}/images
exec "${EL_BIN:-build/edgelora}" train-classifier \
    --images "$data/t10k-images-idx3-ubyte.gz" --labels "$data/t10k-labels-idx1-ubyte.gz" \
    --heldout 1000 --channels 16,32 --features 64 --shift 2 --steps 1500 --batch 64 --lr 2e-3 \
    --warmup 50 --eval-every 100 --seed 1 -t "${THREADS:-1}" \
    -o models/digits-classifier.gguf "$@"

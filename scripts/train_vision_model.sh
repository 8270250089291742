#!/bin/sh
# Trains the committed image model models/digits-unet.gguf (docs/vision.md) on the MNIST set
# beside the project (../shared/data/images, or $EL_DATA_DIR/images): the first 9000 images, the
# last 1000 held out. About 35 minutes on one core of the development machine; -t sets threads.
set -eu
cd "$(dirname "$0")/.."
data=${EL_DATA_DIR:-../shared/data}/images
mkdir -p build/vision
exec build/edgelora train-diffusion \
    --images "$data/t10k-images-idx3-ubyte.gz" --labels "$data/t10k-labels-idx1-ubyte.gz" \
    --heldout 1000 --channels 16 --groups 4 --steps 4000 --batch 64 --lr 2e-3 --warmup 100 \
    --ema 0.995 --eval-every 100 --eval-batches 4 --seed 1 -t "${THREADS:-1}" \
    --checkpoint build/vision/digits-unet.ckpt --checkpoint-every 100 --resume \
    -o models/digits-unet.gguf "$@"

#!/bin/sh
# Trains a committed task adapter models/digits-TASK.gguf (docs/vision.md; TASK is inpaint, bold,
# upscale or guide) on the frozen models/digits-unet.gguf, with the same 9000 MNIST images (the
# last 1000 held out): 1,500 steps for inpaint, 600 for the others (STEPS sets them). 5 to 12
# minutes a task on one core of the development machine; THREADS sets threads.
# Usage: scripts/train_vision_task.sh TASK [more finetune-diffusion options]
set -eu
cd "$(dirname "$0")/.."
task=${1:?usage: $0 inpaint|bold|upscale|guide [options]}
shift
case $task in inpaint) steps=1500 ;; *) steps=600 ;; esac
data=${EL_DATA_DIR:-../shared/data}/images
exec "${EL_BIN:-build/edgelora}" finetune-diffusion -m models/digits-unet.gguf --task "$task" \
    --images "$data/t10k-images-idx3-ubyte.gz" --labels "$data/t10k-labels-idx1-ubyte.gz" \
    --heldout 1000 --rank 4 --alpha 4 --steps ${STEPS:-$steps} --batch 32 --lr 2e-3 --warmup 50 \
    --eval-every 100 --eval-batches 4 --seed 1 -t "${THREADS:-1}" \
    -o "${OUT:-models/digits-$task.gguf}" "$@"

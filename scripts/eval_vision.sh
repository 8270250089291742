#!/bin/sh
# Scores the committed image model and its task adapters (docs/vision.md) and writes
# models/vision_eval.md: FID-MNIST and PSNR/SSIM per precision (float, W8A16 and W8A8, each
# adapter under its own calibrated profile), the time per image per precision and thread count,
# adapter switch (load) times, storage; and the sample grids docs/images/digits-*.png.
# About 15 minutes on the development machine (two cores, nothing else running).
set -eu
cd "$(dirname "$0")/.."
EL=${EL_BIN:-build/edgelora}
data=${EL_DATA_DIR:-../shared/data}/images
mnist="--images $data/t10k-images-idx3-ubyte.gz --labels $data/t10k-labels-idx1-ubyte.gz --heldout 1000"
m=models/digits-unet.gguf
tasks="models/digits-inpaint.gguf models/digits-bold.gguf models/digits-upscale.gguf"
guide=models/digits-guide.gguf
out=models/vision_eval.md
{
    echo "# The image model and its task adapters, by precision"
    echo
    echo "\`scripts/eval_vision.sh\`: the held-out images are the last 1000 of the MNIST set; 1000"
    echo "drawings per FID (DDIM 20 steps; by class: 100 each, guidance 3); each task on 200 held-out"
    echo "examples. Integer forms: each adapter (and the base) under its own profile, calibrated on"
    echo "64 training images. Two threads."
    for prec in float w8a16 w8a8; do
        echo
        echo "## $prec"
        echo
        "$EL" eval-image -m "$m" --classifier models/digits-classifier.gguf $mnist --precision "$prec" \
            --lora "$guide" $(for t in $tasks; do printf -- '--lora %s ' "$t"; done) -t 2 \
            ${GRIDS:+--grids docs/images/digits-$prec}
    done
    echo
    echo "## Time per image by threads (DDIM 20 steps, a grid of 16 drawings, load included)"
    echo
    echo "| precision | 1 thread, s | 2 threads, s |"
    echo "| --- | --- | --- |"
    for prec in float w8a16 w8a8; do
        profile=""
        if [ "$prec" != float ]; then
            "$EL" image-profile -m "$m" --precision "$prec" $mnist -o "build/vision-$prec.profile.gguf" 2>/dev/null
            profile="--profile build/vision-$prec.profile.gguf"
        fi
        row="| $prec"
        for t in 1 2; do
            start=$(date +%s.%N)
            "$EL" image -m "$m" $profile --grid 4,4 -t $t -o build/vision-time.png 2>/dev/null
            row="$row | $(python3 -c "print('%.4f' % (($(date +%s.%N) - $start) / 16))")"
        done
        echo "$row |"
    done
    echo
    echo "## Storage"
    echo
    echo "| file | bytes |"
    echo "| --- | --- |"
    for f in "$m" $tasks "$guide"; do echo "| $f | $(stat -c %s "$f") |"; done
} > "$out.new"
mv "$out.new" "$out"
cat "$out"

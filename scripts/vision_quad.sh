#!/bin/sh
# QUAD over the image model's task adapters (docs/vision.md), at one precision (w8a8 by
# default; PRECISION=w8a16), and the report models/vision_quad-PRECISION.md:
#  1. each adapter's own profile, calibrated on its task's training examples;
#  2. its sensitivity: PSNR on held-out examples in float, and under its own profile;
#  3. the most sensitive adapter's profile becomes the one profile of all
#     (models/digits-quad-PRECISION.profile.gguf);
#  4. every other adapter is distilled into it (finetune-diffusion --distill) and scored again
#     under it; the distilled adapter is kept (models/digits-TASK.quad-PRECISION.gguf) only if it
#     scores higher there than the adapter it came from.
# About 10 minutes on the two cores of the development machine.
set -eu
cd "$(dirname "$0")/.."
EL=${EL_BIN:-build/edgelora}
prec=${PRECISION:-w8a8}
data=${EL_DATA_DIR:-../shared/data}/images
mnist="--images $data/t10k-images-idx3-ubyte.gz --labels $data/t10k-labels-idx1-ubyte.gz --heldout 1000"
tasks=${TASKS:-inpaint bold upscale}
n=${TASK_IMAGES:-200}
steps=${DISTILL_STEPS:-300}
work=build/vision/quad-$prec
mkdir -p "$work"
out=models/vision_quad-$prec.md

# PSNR of an adapter on n held-out examples, in float or under a profile
psnr() {
    "$EL" eval-image -m models/digits-unet.gguf $mnist --no-generation --lora "$1" --task-images "$n" \
        ${2:+--profile "$2"} --json |
        python3 -c 'import json,sys; t=json.load(sys.stdin)["tasks"][0]; print("%.3f %.4f" % (t["psnr"], t["ssim"]))'
}

echo "== own profiles and sensitivity ($prec)" >&2
worst="" worst_drop=-1000
for t in $tasks; do
    "$EL" image-profile -m models/digits-unet.gguf --lora "models/digits-$t.gguf" --precision "$prec" \
        $mnist -o "$work/$t.profile.gguf"
    set -- $(psnr "models/digits-$t.gguf") $(psnr "models/digits-$t.gguf" "$work/$t.profile.gguf")
    drop=$(python3 -c "print('%.3f' % ($1 - $3))")
    echo "$t $1 $2 $3 $4 $drop" >> "$work/sensitivity.txt.new"
    if python3 -c "import sys; sys.exit(0 if $drop > $worst_drop else 1)"; then worst=$t worst_drop=$drop; fi
done
mv "$work/sensitivity.txt.new" "$work/sensitivity.txt"
shared=models/digits-quad-$prec.profile.gguf
cp "$work/$worst.profile.gguf" "$shared"
echo "== the shared profile: $worst's (PSNR drop $worst_drop dB)" >&2

{
    echo "# QUAD over the image adapters, $prec"
    echo
    echo "\`scripts/vision_quad.sh\` (PRECISION=$prec): each adapter's own profile and its PSNR on $n"
    echo "held-out examples (DDIM 20 steps), float and under the profile; the most sensitive one's"
    echo "profile ($worst) shared by all; the others distilled into it ($steps steps) and scored"
    echo "again under it. PSNR in dB over the whole image, SSIM in brackets."
    echo
    echo "| task | float | own profile | drop | shared profile, before | shared, after distillation | kept |"
    echo "| --- | --- | --- | --- | --- | --- | --- |"
} > "$out.new"
while read -r t f fs o os drop; do
    if [ "$t" = "$worst" ]; then
        echo "| $t | $f ($fs) | $o ($os) | $drop | (its own) | (its own) | the adapter |" >> "$out.new"
        continue
    fi
    set -- $(psnr "models/digits-$t.gguf" "$shared")
    before="$1 ($2)" before_psnr=$1
    echo "== distilling $t into $worst's profile" >&2
    "$EL" finetune-diffusion -m models/digits-unet.gguf --distill "models/digits-$t.gguf" \
        --profile "$shared" $mnist --steps "$steps" --batch 32 --lr 1e-3 --warmup 20 \
        --eval-every 100 --seed 1 -t "${THREADS:-2}" -q --no-plot -o "models/digits-$t.quad-$prec.gguf"
    set -- $(psnr "models/digits-$t.quad-$prec.gguf" "$shared")
    kept="distilled"
    if ! python3 -c "import sys; sys.exit(0 if $1 > $before_psnr else 1)"; then
        rm "models/digits-$t.quad-$prec.gguf"
        kept="the adapter"
    fi
    echo "| $t | $f ($fs) | $o ($os) | $drop | $before | $1 ($2) | $kept |" >> "$out.new"
done < "$work/sensitivity.txt"
mv "$out.new" "$out"
cat "$out"

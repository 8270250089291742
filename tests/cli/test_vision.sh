#!/usr/bin/env bash
# The image model end to end on a tiny shape: train-diffusion, image (one, a grid, a class),
# finetune-diffusion and inpainting with the adapter (the known pixels kept), and bad input:
# an unknown class, a language model or its adapter, PNGs of the wrong size or depth, a mask
# with nothing to fill. Needs the MNIST files beside the project.
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh
PNG="python3 tests/cli/png_tool.py"
IMG=$DATA/images/t10k-images-idx3-ubyte.gz LAB=$DATA/images/t10k-labels-idx1-ubyte.gz

for cmd in train-diffusion finetune-diffusion image; do
    expect_exit "help_$cmd" 0 "$EL" "$cmd" --help
    grep -q "^usage: edgelora $cmd" "$TMP/out" && pass "help_text_$cmd" || fail "help_text_$cmd"
    expect_exit "unknown_flag_$cmd" 2 "$EL" "$cmd" --no-such-flag
done
if [ ! -f "$IMG" ] || [ ! -f "$LAB" ]; then
    skip vision_end_to_end "no MNIST files in $DATA/images"
    finish
fi

tiny="--heldout 64 --batch 4 --eval-every 2 --eval-batches 1 -t 1 -q"
expect_exit train 0 "$EL" train-diffusion --images "$IMG" --labels "$LAB" --channels 4 \
    --groups 2 --timesteps 50 --steps 4 $tiny -o "$TMP/m.gguf"
[ -s "$TMP/m.loss.svg" ] && pass train_plot || fail train_plot
expect_exit train_labels_swapped 1 "$EL" train-diffusion --images "$LAB" --labels "$IMG" \
    --steps 1 $tiny -o "$TMP/x.gguf"
grep -q "not an IDX images file" "$TMP/err" && pass train_labels_swapped_message || fail train_labels_swapped_message "$(cat "$TMP/err")"

expect_exit image_grid 0 "$EL" image -m "$TMP/m.gguf" --grid 2,3 --steps 3 -t 1 -o "$TMP/g.png"
[ "$($PNG size "$TMP/g.png")" = "88 58 0 8" ] && pass image_grid_size || fail image_grid_size "$($PNG size "$TMP/g.png")"
expect_exit image_ddpm_class 0 "$EL" image -m "$TMP/m.gguf" --sampler ddpm --class 3 -t 1 -o "$TMP/one.png"
[ "$($PNG size "$TMP/one.png")" = "28 28 0 8" ] && pass image_one_size || fail image_one_size
expect_exit image_unknown_class 1 "$EL" image -m "$TMP/m.gguf" --class 10 -o "$TMP/bad.png"
grep -q "draws classes 0 to 9" "$TMP/err" && pass image_unknown_class_message || fail image_unknown_class_message "$(cat "$TMP/err")"
expect_exit image_llm 1 "$EL" image -m tests/golden/llama_f32_gqa.gguf -o "$TMP/bad.png"
grep -q "not an image model" "$TMP/err" && pass image_llm_message || fail image_llm_message "$(cat "$TMP/err")"
expect_exit image_llm_adapter 1 "$EL" image -m "$TMP/m.gguf" --lora tests/golden/lora_stories.gguf -o "$TMP/bad.png"
grep -q "not for the image model" "$TMP/err" && pass image_llm_adapter_message || fail image_llm_adapter_message "$(cat "$TMP/err")"
expect_exit image_steps 1 "$EL" image -m "$TMP/m.gguf" --steps 51 -o "$TMP/bad.png"
[ ! -e "$TMP/bad.png" ] && pass image_failures_write_nothing || fail image_failures_write_nothing

expect_exit finetune 0 "$EL" finetune-diffusion -m "$TMP/m.gguf" --task inpaint --images "$IMG" \
    --labels "$LAB" --steps 3 --rank 2 $tiny -o "$TMP/inpaint.gguf"
expect_exit finetune_unknown_task 2 "$EL" finetune-diffusion -m "$TMP/m.gguf" --task paint \
    --images "$IMG" --labels "$LAB" -o "$TMP/x.gguf"
$PNG mnist "$IMG" 9999 "$TMP/digit.png"
$PNG write "$TMP/mask.png" 28 28 0 255 6 8 20 18
expect_exit inpaint 0 "$EL" image -m "$TMP/m.gguf" --lora "$TMP/inpaint.gguf" --input "$TMP/digit.png" \
    --mask "$TMP/mask.png" --steps 4 -t 1 -o "$TMP/filled.png"
# outside the mask the output is the input
python3 - "$TMP" <<'PY' && pass inpaint_keeps_known_pixels || fail inpaint_keeps_known_pixels
import subprocess, sys
t = sys.argv[1]
def px(f):
    out = subprocess.run(["python3", "tests/cli/png_tool.py", "pixels", f], capture_output=True, text=True).stdout
    return [list(map(int, l.split())) for l in out.splitlines()]
a, b, m = px(t + "/digit.png"), px(t + "/filled.png"), px(t + "/mask.png")
sys.exit(0 if all(a[y][x] == b[y][x] for y in range(28) for x in range(28) if not m[y][x]) else 1)
PY
$PNG write "$TMP/rgb.png" 28 28 2 255
$PNG write "$TMP/zero.png" 28 28 0 0
expect_exit inpaint_grid_as_input 1 "$EL" image -m "$TMP/m.gguf" --lora "$TMP/inpaint.gguf" \
    --input "$TMP/g.png" --mask "$TMP/mask.png" -o "$TMP/bad.png"
grep -q "88x58 pixels" "$TMP/err" && pass inpaint_size_message || fail inpaint_size_message "$(cat "$TMP/err")"
expect_exit inpaint_rgb_mask 1 "$EL" image -m "$TMP/m.gguf" --lora "$TMP/inpaint.gguf" \
    --input "$TMP/digit.png" --mask "$TMP/rgb.png" -o "$TMP/bad.png"
grep -q "colour type 2" "$TMP/err" && pass inpaint_depth_message || fail inpaint_depth_message "$(cat "$TMP/err")"
expect_exit inpaint_empty_mask 1 "$EL" image -m "$TMP/m.gguf" --lora "$TMP/inpaint.gguf" \
    --input "$TMP/digit.png" --mask "$TMP/zero.png" -o "$TMP/bad.png"
grep -q "no pixel to fill" "$TMP/err" && pass inpaint_empty_mask_message || fail inpaint_empty_mask_message "$(cat "$TMP/err")"
expect_exit inpaint_mask_alone 2 "$EL" image -m "$TMP/m.gguf" --mask "$TMP/mask.png" -o "$TMP/bad.png"
[ ! -e "$TMP/bad.png" ] && pass inpaint_failures_write_nothing || fail inpaint_failures_write_nothing
finish

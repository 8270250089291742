#!/usr/bin/env bash
# The image model end to end on a tiny shape: train-diffusion, image (one, a grid, a class),
# finetune-diffusion and the tasks with their adapters (inpaint, bold, upscale; the known pixels
# kept), and bad input:
# an unknown class, a language model or its adapter, PNGs of the wrong size or depth, a mask
# with nothing to fill. Needs the MNIST files beside the project.
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh
PNG="python3 tests/cli/png_tool.py"
IMG=$DATA/images/t10k-images-idx3-ubyte.gz LAB=$DATA/images/t10k-labels-idx1-ubyte.gz

for cmd in train-diffusion finetune-diffusion image train-classifier eval-image image-profile; do
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
# same_outside_mask SOURCE RESULT MASK: every pixel the mask leaves out is the source's
same_outside_mask() {
    python3 - "$1" "$2" "$3" <<'PY'
import subprocess, sys
def px(f):
    out = subprocess.run(["python3", "tests/cli/png_tool.py", "pixels", f], capture_output=True, text=True).stdout
    return [list(map(int, l.split())) for l in out.splitlines()]
a, b, m = px(sys.argv[1]), px(sys.argv[2]), px(sys.argv[3])
sys.exit(0 if all(a[y][x] == b[y][x] for y in range(28) for x in range(28) if not m[y][x]) else 1)
PY
}
same_outside_mask "$TMP/digit.png" "$TMP/filled.png" "$TMP/mask.png" &&
    pass inpaint_keeps_known_pixels || fail inpaint_keeps_known_pixels
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
grep -q "no pixel to draw" "$TMP/err" && pass inpaint_empty_mask_message || fail inpaint_empty_mask_message "$(cat "$TMP/err")"
expect_exit inpaint_mask_alone 2 "$EL" image -m "$TMP/m.gguf" --mask "$TMP/mask.png" -o "$TMP/bad.png"
expect_exit inpaint_without_mask 1 "$EL" image -m "$TMP/m.gguf" --lora "$TMP/inpaint.gguf" \
    --input "$TMP/digit.png" -o "$TMP/bad.png"
grep -q "inpaints: it needs --mask" "$TMP/err" && pass inpaint_without_mask_message || fail inpaint_without_mask_message "$(cat "$TMP/err")"
expect_exit input_without_adapter 1 "$EL" image -m "$TMP/m.gguf" --input "$TMP/digit.png" -o "$TMP/bad.png"
grep -q "needs a task adapter" "$TMP/err" && pass input_without_adapter_message || fail input_without_adapter_message "$(cat "$TMP/err")"
[ ! -e "$TMP/bad.png" ] && pass inpaint_failures_write_nothing || fail inpaint_failures_write_nothing

# the editing tasks: the whole source redrawn without a mask; upscale takes a 14x14 PNG too
for task in bold upscale; do
    expect_exit "finetune_$task" 0 "$EL" finetune-diffusion -m "$TMP/m.gguf" --task $task \
        --images "$IMG" --labels "$LAB" --steps 2 --rank 2 $tiny -o "$TMP/$task.gguf"
done
expect_exit bold 0 "$EL" image -m "$TMP/m.gguf" --lora "$TMP/bold.gguf" --input "$TMP/digit.png" \
    --steps 3 -t 1 -o "$TMP/bold.png"
[ "$($PNG size "$TMP/bold.png")" = "28 28 0 8" ] && pass bold_size || fail bold_size
$PNG write "$TMP/small.png" 14 14 0 255 3 3 10 10
expect_exit upscale_14 0 "$EL" image -m "$TMP/m.gguf" --lora "$TMP/upscale.gguf" \
    --input "$TMP/small.png" --steps 3 -t 1 -o "$TMP/up.png"
[ "$($PNG size "$TMP/up.png")" = "28 28 0 8" ] && pass upscale_size || fail upscale_size
expect_exit bold_14 1 "$EL" image -m "$TMP/m.gguf" --lora "$TMP/bold.gguf" \
    --input "$TMP/small.png" -o "$TMP/bad.png"
grep -q "14x14 pixels" "$TMP/err" && pass bold_size_message || fail bold_size_message "$(cat "$TMP/err")"
# a bold edit of a region keeps the rest of the source
expect_exit bold_region 0 "$EL" image -m "$TMP/m.gguf" --lora "$TMP/bold.gguf" \
    --input "$TMP/digit.png" --mask "$TMP/mask.png" --steps 3 -t 1 -o "$TMP/boldr.png"
same_outside_mask "$TMP/digit.png" "$TMP/boldr.png" "$TMP/mask.png" &&
    pass bold_region_keeps_the_rest || fail bold_region_keeps_the_rest
# eval-image: FID-MNIST with a classifier trained in a few steps, and the tasks' scores, which
# are recomputed here from the grids it writes (NumPy, tests/golden/make_vision_metrics_golden.py)
expect_exit train_classifier 0 "$EL" train-classifier --images "$IMG" --labels "$LAB" --heldout 64 \
    --channels 4,4 --features 8 --steps 20 --batch 16 -t 1 -q -o "$TMP/cls.gguf"
grep -q "held-out accuracy" "$TMP/out" && pass train_classifier_accuracy_line || fail train_classifier_accuracy_line
expect_exit eval_image 0 "$EL" eval-image -m "$TMP/m.gguf" --classifier "$TMP/cls.gguf" \
    --images "$IMG" --labels "$LAB" --heldout 64 -n 20 --task-images 5 --steps 2 -t 1 \
    --lora "$TMP/inpaint.gguf" --lora "$TMP/bold.gguf" --grids "$TMP/ev" --grid-cols 5 --json
PY=python3 # the first python3 that has NumPy
for py in python3 /usr/bin/python3; do
    if $py -c "import numpy" 2>/dev/null; then PY=$py; break; fi
done
$PY - "$TMP" <<'PY' && pass eval_image_scores_recomputed || fail eval_image_scores_recomputed
import json, subprocess, sys
sys.path.insert(0, "tests/golden")
import numpy as np
import make_vision_metrics_golden as ref
t = sys.argv[1]
r = json.load(open(t + "/out"))
assert 0 <= r["class_accuracy"] <= 1 and r["fid_mnist_any"] > 0 and r["fid_mnist_real"] > 0
def px(f):
    out = subprocess.run(["python3", "tests/cli/png_tool.py", "pixels", f], capture_output=True, text=True).stdout
    return np.array([list(map(int, l.split())) for l in out.splitlines()], np.uint8)
assert px(t + "/ev-classes.png").shape == (10 * 30 - 2, 2 * 30 - 2)  # 20 images: 2 a class
for task in r["tasks"]:
    g = px(t + "/ev-%s.png" % task["task"])
    cell = lambda row, k: g[row * 30: row * 30 + 28, k * 30: k * 30 + 28]
    psnr = np.mean([min(ref.psnr(cell(1, k), cell(2, k)), 100) for k in range(5)])
    ssim = np.mean([ref.ssim(cell(1, k), cell(2, k)) for k in range(5)])
    assert abs(psnr - task["psnr"]) < 1e-3 and abs(ssim - task["ssim"]) < 1e-3, (task, psnr, ssim)
PY
expect_exit eval_image_llm 1 "$EL" eval-image -m tests/golden/llama_f32_gqa.gguf --classifier "$TMP/cls.gguf" \
    --images "$IMG" --labels "$LAB"
grep -q "not an image model" "$TMP/err" && pass eval_image_llm_message || fail eval_image_llm_message "$(cat "$TMP/err")"
expect_exit eval_image_bad_classifier 1 "$EL" eval-image -m "$TMP/m.gguf" --classifier "$TMP/m.gguf" \
    --images "$IMG" --labels "$LAB"
grep -q "not a digit classifier" "$TMP/err" && pass eval_image_bad_classifier_message || fail eval_image_bad_classifier_message "$(cat "$TMP/err")"
expect_exit eval_image_too_many 1 "$EL" eval-image -m "$TMP/m.gguf" --no-generation --lora "$TMP/bold.gguf" \
    --images "$IMG" --labels "$LAB" --heldout 10 --task-images 11
grep -q "1 to the held-out ones, 10" "$TMP/err" && pass eval_image_too_many_message || fail eval_image_too_many_message "$(cat "$TMP/err")"
# integer forms: a profile per precision, drawn with, scored with; bad profiles refused
for prec in w8a16 w8a8; do
    expect_exit "profile_$prec" 0 "$EL" image-profile -m "$TMP/m.gguf" --precision $prec \
        --images "$IMG" --labels "$LAB" --heldout 64 --calib 4 --steps 2 -t 1 -o "$TMP/$prec.gguf"
    expect_exit "image_$prec" 0 "$EL" image -m "$TMP/m.gguf" --profile "$TMP/$prec.gguf" \
        --grid 1,2 --steps 2 -t 1 -o "$TMP/$prec.png"
    [ "$($PNG size "$TMP/$prec.png")" = "58 28 0 8" ] && pass "image_${prec}_size" || fail "image_${prec}_size"
done
expect_exit profile_task 0 "$EL" image-profile -m "$TMP/m.gguf" --precision w8a8 --lora "$TMP/bold.gguf" \
    --images "$IMG" --labels "$LAB" --heldout 64 --calib 4 --steps 2 -t 1 -o "$TMP/bold-w8a8.gguf"
expect_exit eval_image_precision 0 "$EL" eval-image -m "$TMP/m.gguf" --no-generation --lora "$TMP/bold.gguf" \
    --images "$IMG" --labels "$LAB" --heldout 64 --task-images 3 --steps 2 --precision w8a16 --calib 4 -t 1 --json
grep -q '"precision": "w8a16"' "$TMP/out" && pass eval_image_precision_json || fail eval_image_precision_json "$(cat "$TMP/out")"
expect_exit eval_image_profile 0 "$EL" eval-image -m "$TMP/m.gguf" --no-generation --lora "$TMP/inpaint.gguf" \
    --images "$IMG" --labels "$LAB" --heldout 64 --task-images 3 --steps 2 --profile "$TMP/bold-w8a8.gguf" -t 1
grep -q "| inpaint | w8a8 |" "$TMP/out" && pass eval_image_shared_profile || fail eval_image_shared_profile "$(cat "$TMP/out")"
expect_exit profile_float 2 "$EL" image-profile -m "$TMP/m.gguf" --precision w4 --images "$IMG" \
    --labels "$LAB" -o "$TMP/bad.gguf"
grep -q "float, w8a16 or w8a8" "$TMP/err" && pass profile_precision_message || fail profile_precision_message "$(cat "$TMP/err")"
expect_exit image_profile_not_profile 1 "$EL" image -m "$TMP/m.gguf" --profile "$TMP/m.gguf" -o "$TMP/bad.png"
grep -q "not an image model's profile" "$TMP/err" && pass image_profile_kind_message || fail image_profile_kind_message "$(cat "$TMP/err")"
expect_exit train_wide 0 "$EL" train-diffusion --images "$IMG" --labels "$LAB" --channels 6 \
    --groups 2 --timesteps 50 --steps 1 $tiny -o "$TMP/wide.gguf"
expect_exit image_profile_other_model 1 "$EL" image -m "$TMP/wide.gguf" --profile "$TMP/w8a8.gguf" -o "$TMP/bad.png"
grep -q "made for another image model" "$TMP/err" && pass image_profile_model_message || fail image_profile_model_message "$(cat "$TMP/err")"
[ ! -e "$TMP/bad.png" ] && [ ! -e "$TMP/bad.gguf" ] && pass profile_failures_write_nothing || fail profile_failures_write_nothing
# QUAD's distillation of an adapter into another adapter's profile
expect_exit distill 0 "$EL" finetune-diffusion -m "$TMP/m.gguf" --distill "$TMP/inpaint.gguf" \
    --profile "$TMP/bold-w8a8.gguf" --images "$IMG" --labels "$LAB" --steps 2 $tiny -o "$TMP/inpaint-q.gguf"
expect_exit distilled_runs 0 "$EL" image -m "$TMP/m.gguf" --lora "$TMP/inpaint-q.gguf" --profile "$TMP/bold-w8a8.gguf" \
    --input "$TMP/digit.png" --mask "$TMP/mask.png" --steps 2 -t 1 -o "$TMP/inpaint-q.png"
expect_exit distill_without_profile 2 "$EL" finetune-diffusion -m "$TMP/m.gguf" --distill "$TMP/inpaint.gguf" \
    --images "$IMG" --labels "$LAB" -o "$TMP/bad.gguf"
grep -q "go together" "$TMP/err" && pass distill_without_profile_message || fail distill_without_profile_message "$(cat "$TMP/err")"
expect_exit distill_llm_adapter 1 "$EL" finetune-diffusion -m "$TMP/m.gguf" --distill tests/golden/lora_stories.gguf \
    --profile "$TMP/w8a8.gguf" --images "$IMG" --labels "$LAB" --steps 1 $tiny -o "$TMP/bad.gguf"
grep -q "not for the image model" "$TMP/err" && pass distill_llm_adapter_message || fail distill_llm_adapter_message "$(cat "$TMP/err")"
[ ! -e "$TMP/bad.gguf" ] && pass distill_failures_write_nothing || fail distill_failures_write_nothing
# the guide adapter: class-guided drawing in one forward, scored by FID-MNIST
expect_exit finetune_guide 0 "$EL" finetune-diffusion -m "$TMP/m.gguf" --task guide --guidance 2 \
    --images "$IMG" --labels "$LAB" --steps 2 --rank 2 $tiny -o "$TMP/guide.gguf"
expect_exit guide_class 0 "$EL" image -m "$TMP/m.gguf" --lora "$TMP/guide.gguf" --class 5 --steps 2 -t 1 -o "$TMP/g5.png"
[ -s "$TMP/g5.png" ] && ! grep -q warning "$TMP/err" && pass guide_no_source_warning || fail guide_no_source_warning "$(cat "$TMP/err")"
expect_exit guide_with_input 1 "$EL" image -m "$TMP/m.gguf" --lora "$TMP/guide.gguf" --input "$TMP/digit.png" -o "$TMP/bad.png"
grep -q "takes no --input" "$TMP/err" && pass guide_with_input_message || fail guide_with_input_message "$(cat "$TMP/err")"
expect_exit eval_guide 0 "$EL" eval-image -m "$TMP/m.gguf" --classifier "$TMP/cls.gguf" --no-generation \
    --lora "$TMP/guide.gguf" --lora "$TMP/bold.gguf" --images "$IMG" --labels "$LAB" --heldout 64 -n 20 \
    --task-images 2 --steps 2 -t 1
grep -q "drawn by class with .*guide.gguf (guide)" "$TMP/out" && grep -q "| bold |" "$TMP/out" &&
    pass eval_guide_rows || fail eval_guide_rows "$(cat "$TMP/out")"
expect_exit eval_guide_no_classifier 1 "$EL" eval-image -m "$TMP/m.gguf" --no-generation \
    --lora "$TMP/guide.gguf" --images "$IMG" --labels "$LAB" --heldout 64
grep -q "it needs --classifier" "$TMP/err" && pass eval_guide_no_classifier_message || fail eval_guide_no_classifier_message "$(cat "$TMP/err")"
finish

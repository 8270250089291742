/* export.h - a training model to and from GGUF: the pretrained model (arch llama, F32, with the
 * tokenizer's keys), the LoRA adapter (llama.cpp's layout), and the float32 copy of a loaded base
 * model that LoRA training runs on. */
#ifndef EL_TRAIN_EXPORT_H
#define EL_TRAIN_EXPORT_H

#include "train/tmodel.h"

/* Writes m's base block as a llama GGUF; the tokenizer.* keys are copied from tokenizer_gguf. */
el_status el_export_model(const el_tmodel *m, const char *tokenizer_gguf, const char *name,
                          const char *out_path);

/* Writes m's LoRA block as a GGUF adapter for a model of architecture arch: general.type
 * "adapter", adapter.type "lora", adapter.lora.alpha; tensors "<base weight>.lora_a" with
 * ne = {n_in, rank} and "<base weight>.lora_b" with ne = {rank, n_out}, F32. A profile_id other
 * than 0 is written as adapter.profile: an adapter tuned for that quantization profile, which
 * the loader refuses without it; a uniql_basis other than 0, as adapter.uniql.basis: an adapter
 * of a UniQL-sorted model (el_model's uniql_basis), refused on any other. */
el_status el_export_lora(const el_tmodel *m, const char *arch, uint64_t profile_id,
                         uint64_t uniql_basis, const char *out_path);

/* Writes m's LoRA block as a Hugging Face PEFT folder (adapter_config.json and
 * adapter_model.safetensors). Rows of q and k are permuted back from GGUF's rotary layout to
 * Hugging Face's. */
el_status el_export_peft(const el_tmodel *m, const char *base_name, const char *dir);

/* A float32 training model holding the weights of a loaded llama model (dequantized), with
 * context n_ctx. */
el_status el_tmodel_from_model(el_tmodel *m, const el_model *model, int32_t n_ctx);

/* The same at the model's context, with the FFN widened to n_ff channels (at least the
 * model's): the new channels' gate and up rows random (seed), their down columns zero, so the
 * widened model computes the model's function. */
el_status el_tmodel_widen_from_model(el_tmodel *m, const el_model *model, int32_t n_ff,
                                     uint64_t seed);

/* Quantization-aware fine-tuning on a loaded model (after el_tmodel_from_model and
 * el_tmodel_add_lora): every site whose weight takes int8 inputs at a static scale fake-quantizes
 * its input at that scale, the others stay float; under the model's quantization profile the
 * adapter terms go on the profile's int8 grids: as the run time computes (a block type's
 * activation blocks hold the profile's scale too). Refuses a model whose inputs are quantized at
 * scales of their own as it runs (block types without a profile, per-token scales, int16), a
 * profile without scales for a slot the adapter targets, and a model with no int8 input. */
el_status el_tmodel_qat_from_model(el_tmodel *m, const el_model *model);

/* Adds a loaded adapter's terms to m as its LoRA block (frozen, or to train on): every target of
 * one rank and one scale (alpha / rank or rsLoRA's), missing layers of a target as zero terms.
 * path names the adapter in errors. */
el_status el_tmodel_add_adapter(el_tmodel *m, const el_adapter *ad, const char *path);

#endif

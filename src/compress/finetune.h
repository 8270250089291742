/* finetune.h - UniQL's masked LoRA fine-tuning (docs/uniql.md): before GPTQ, a LoRA adapter on
 * every linear of the sorted float model is trained while each step draws one of the plan's
 * rates and masks the channels that rate drops, so that one set of weights serves every rate;
 * the adapter is then merged into the weights. The loss is distillation from the original
 * model (KL(original || sorted, masked)), so the target at every rate is the uncompressed
 * model's own distribution. */
#ifndef EL_COMPRESS_FINETUNE_H
#define EL_COMPRESS_FINETUNE_H

#include "compress/sort.h"
#include "compress/uniql.h"
#include "edgelora-tools.h"
#include "model/model.h"

/* Trains on the text p->finetune_path (NULL: p->calib_path; p checked by
 * el_masked_finetune_check before the long work) and merges the adapter into w ([n_layer] the
 * sorted float weights).
 * m is the original model (shape, norms, embeddings, the teacher); plan the sorted model's
 * rates and RoPE pair index; basis the sorted basis (compress.c), which the adapter kept with
 * p->finetune_adapter_path is tagged with. Reports stage "finetune" (done/total steps, loss) through p. */
/* Refuses bad fine-tuning parameters and a text that cannot be opened, before the long work. */
el_status el_masked_finetune_check(const el_compress_params *p);

el_status el_masked_finetune(const el_model *m, el_flayer *w, const el_uniql_plan *plan,
                             uint64_t basis, const el_compress_params *p);

#endif

/* choices.c - a request's "n" choices as concurrent variants, as `batch` and `serve` run them:
 * choice c samples with the request's settings and seed + c, every choice and the shared
 * prompt with the request's adapters, first tokens drawn from the sampler among those not taken
 * (like n independent samples, but distinct from the first token on). */
#include "cli.h"

void cli_choices_params(const cli_choices *ch, el_variant_params *vp, el_variants_params *gp) {
    for (int32_t c = 0; c < ch->n; c++) {
        vp[c] = el_variant_default_params();
        vp[c].sampler = ch->sp;
        vp[c].sampler.seed = ch->sp.seed + (uint64_t)c;
        vp[c].bindings = ch->bind;
        vp[c].n_bindings = ch->n_bind;
        vp[c].max_tokens = ch->max_tokens;
        vp[c].ignore_eos = ch->ignore_eos;
        vp[c].stop = ch->stops;
        vp[c].n_stop = ch->n_stops;
    }
    *gp = el_variants_default_params();
    gp->n_variants = ch->n;
    gp->variants = vp;
    gp->seq_id = ch->seq_id;
    gp->first = EL_FIRST_SAMPLE;
    gp->prompt_bindings = ch->bind;
    gp->n_prompt_bindings = ch->n_bind;
}

/* forecast.h - a loaded forecast set (the vectors self-speculative decoding appends after a
 * token) and the identity of what it was trained for. */
#ifndef EL_RUNTIME_FORECAST_H
#define EL_RUNTIME_FORECAST_H

#include <stdbool.h>
#include <stdint.h>

#include "edgelora.h"
#include "model/model.h"

struct el_forecast {
    const el_model *model;
    int32_t n_slots;
    float *vectors;          /* [n_slots][n_embd] */
    bool for_adapter;        /* trained with an adapter bound: only for sequences bound to it */
    uint64_t adapter_fingerprint;
    char *adapter_name;      /* for messages */
};

/* The GGUF keys and tensor of a forecast file (docs/formats.md). */
#define EL_FORECAST_TENSOR "forecast.embd"

#endif

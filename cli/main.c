/* main.c - the edgelora program: dispatches to one subcommand per file. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} commands[] = {
    {"run", cmd_run, "generate text from a prompt"},
    {"chat", cmd_chat, "a conversation, kept in the KV cache between turns"},
    {"tokenize", cmd_tokenize, "print the token ids of a text"},
    {"detokenize", cmd_detokenize, "print the text of token ids"},
    {"perplexity", cmd_perplexity, "measure a model's perplexity over a text file"},
    {"convert", cmd_convert, "convert a Hugging Face folder or llama2.c checkpoint to GGUF"},
    {"synth", cmd_synth, "write a model of a real shape with random weights"},
    {"info", cmd_info, "describe a model, vocabulary or adapter file"},
    {"quantize", cmd_quantize, "convert a GGUF model's weights to another type"},
    {"compress", cmd_compress, "sort, prune-ready and 4-bit GPTQ a model in one shot (UniQL)"},
    {"bench", cmd_bench, "measure load, prompt and generation speed against memory bandwidth"},
    {"train-tokenizer", cmd_train_tokenizer, "train a byte-level BPE vocabulary on text"},
    {"train", cmd_train, "pretrain a base model of a chosen shape"},
    {"finetune", cmd_finetune, "train a LoRA adapter on prompt/response pairs"},
    {"train-forecast", cmd_train_forecast, "train forecast vectors for self-speculative decoding"},
    {"train-diffusion", cmd_train_diffusion, "train the image model (a diffusion UNet) on MNIST"},
    {"finetune-diffusion", cmd_finetune_diffusion, "train a task adapter of the image model"},
    {"image", cmd_image, "draw digits with the image model, as a PNG"},
    {"train-classifier", cmd_train_classifier, "train the digit classifier of FID-MNIST"},
    {"image-profile", cmd_image_profile, "calibrate the image model's integer form (W8A16, W8A8)"},
    {"eval-image", cmd_eval_image, "score the image model (FID-MNIST) and its task adapters"},
    {"merge", cmd_merge, "merge LoRA adapters into a model's weights"},
    {"profile", cmd_profile, "calibrate one quantization profile for a base and its adapters"},
    {"quad", cmd_quad, "one quantization profile for every adapter, each tuned to it (QUAD)"},
    {"batch", cmd_batch, "run many requests (JSONL), each with its own adapters, together"},
    {"serve", cmd_serve, "an OpenAI-compatible HTTP server, each request with its own adapters"},
    {"eval", cmd_eval, "score a model or adapter on held-out prompt/response pairs"},
    {"plot", cmd_plot, "plot columns of a tab-separated table as an SVG line plot"},
    {"uniql-layout", cmd_uniql_layout, "write a model in the UniQL layout with a uniform plan"},
    {"adapters", cmd_adapters, "list the adapters of a folder and whether they fit a model"},
};

static void usage(FILE *out) {
    fprintf(out, "usage: edgelora COMMAND [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-16s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n'edgelora COMMAND --help' lists a command's options.\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return CLI_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("edgelora %s\n", EL_VERSION_STRING);
        return CLI_OK;
    }
    el_log_set(cli_log, NULL);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "edgelora: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return CLI_USAGE;
}

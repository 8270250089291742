/* test_chat.c - chat templates (el_chat_apply): every family's text for fixed conversations
 * against what llama.cpp's template code wrote for them (tests/golden/chat/templates.txt, made
 * by scripts/llamacpp-crosscheck/chat-check.sh --golden); our own template against its
 * definition in docs/formats.md; recognition of templates by their markers; the model's own
 * template; and the errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgelora.h"
#include "testutil.h"

typedef struct conversation {
    const char *label;
    size_t n;
    el_chat_message m[6];
} conversation;

/* The conversations of scripts/llamacpp-crosscheck/chat-check.c, which made the goldens. */
static const conversation convs[] = {
    {"single", 1, {{"user", "Hello"}}},
    {"system", 2, {{"system", "You are a helpful assistant."}, {"user", "Hello"}}},
    {"multi", 4, {{"system", "  Be brief.  "}, {"user", "Hello"}, {"assistant", "  Hi there!  "},
                  {"user", "What is 2+2?\nAnswer with a number."}}},
    {"no-system", 3, {{"user", "One"}, {"assistant", "Two"}, {"user", "Three"}}},
};

static const conversation *find_conv(const char *label) {
    for (size_t i = 0; i < sizeof convs / sizeof convs[0]; i++)
        if (strcmp(convs[i].label, label) == 0) return &convs[i];
    return NULL;
}

/* Undoes chat-check.c's escapes (\n, \t, \\) in place. */
static void unescape(char *s) {
    char *w = s;
    for (; *s; s++) {
        if (*s == '\\' && s[1]) {
            s++;
            *w++ = *s == 'n' ? '\n' : *s == 't' ? '\t' : *s;
        } else {
            *w++ = *s;
        }
    }
    *w = '\0';
}

static int test_against_llama_cpp(void) {
    FILE *f = fopen("tests/golden/chat/templates.txt", "r");
    CHECK(f != NULL);
    char line[4096];
    int cases = 0;
    bool seen[16] = {0};
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *name = strtok(line, "\t"), *label = strtok(NULL, "\t"), *add = strtok(NULL, "\t");
        char *want = strtok(NULL, "");
        CHECK(name && label && add && want);
        unescape(want);
        const conversation *c = find_conv(label);
        CHECK(c != NULL);
        char *got = NULL;
        CHECK(el_chat_apply(NULL, name, c->m, c->n, add[0] == '1', &got) == EL_OK);
        if (strcmp(got, want) != 0) test_note("%s %s add=%s:\n got [%s]\nwant [%s]", name, label, add, got, want);
        CHECK(strcmp(got, want) == 0);
        free(got);
        for (size_t i = 0; el_chat_template_name(i); i++)
            if (strcmp(el_chat_template_name(i), name) == 0) seen[i] = true;
        cases++;
    }
    fclose(f);
    /* every family but our own is in the goldens */
    for (size_t i = 0; el_chat_template_name(i); i++)
        if (strcmp(el_chat_template_name(i), "edgelora") != 0 && !seen[i]) {
            test_note("%s has no golden", el_chat_template_name(i));
            CHECK(seen[i]);
        }
    test_note("%d conversations", cases);
    return TEST_PASS;
}

/* Ours, by its definition: a system message as its own line, "User: " and "Assistant: " lines,
 * and "Assistant:" where the reply starts. */
static int test_edgelora_template(void) {
    char *got = NULL;
    CHECK(el_chat_apply(NULL, "edgelora", find_conv("multi")->m, 4, true, &got) == EL_OK);
    CHECK(strcmp(got, "  Be brief.  \nUser: Hello\nAssistant:   Hi there!  \n"
                      "User: What is 2+2?\nAnswer with a number.\nAssistant:") == 0);
    free(got);
    CHECK(el_chat_apply(NULL, "edgelora", NULL, 0, false, &got) == EL_OK && strcmp(got, "") == 0);
    free(got);
    return TEST_PASS;
}

/* Jinja texts are recognized by their markers (short stand-ins for the real templates, which
 * chat-check.sh runs on), the more specific family first. */
static int test_recognition(void) {
    static const struct {
        const char *text, *family;
    } cases[] = {
        {"{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>{% endfor %}", "chatml"},
        {"{{ '<|start_header_id|>' + m['role'] + '<|end_header_id|>\n\n' }}", "llama3"},
        {"{{ '<start_of_turn>' + role + '\n' }}", "gemma"},
        {"{{ '<|user|>\n' + m['content'] + '<|end|>\n<|assistant|>\n' }}", "phi3"},
        {"{{ '[SYSTEM_PROMPT]' + s + '[/SYSTEM_PROMPT]' }}{{ '[INST]' }}", "mistral-v7"},
        {"{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}", "llama2-sys-strip"},
        {"{{ '<<SYS>>\n' + system + '\n<</SYS>>\n\n' }}[INST]", "llama2-sys"},
        {"[INST] {{ m }} [/INST]", "llama2"},
        {"{# edgelora-default #}", "edgelora"},
        {"chatml", "chatml"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *name = NULL;
        CHECK(el_chat_template_family(NULL, cases[i].text, &name) == EL_OK);
        if (strcmp(name, cases[i].family) != 0) test_note("[%s]: %s, want %s", cases[i].text, name, cases[i].family);
        CHECK(strcmp(name, cases[i].family) == 0);
    }
    /* phi4's and SmolVLM's reuse of ChatML markers is not ChatML */
    const char *name;
    CHECK(el_chat_template_family(NULL, "<|im_start|>x<|im_sep|>", &name) == EL_ERR_INVALID_ARG);
    return TEST_PASS;
}

/* Unknown names and texts, a model without a template, bad messages: clear errors. */
static int test_errors(void) {
    char *got = (char *)"x";
    el_chat_message m = {"user", "hi"};
    CHECK(el_chat_apply(NULL, "vicuna", &m, 1, true, &got) == EL_ERR_INVALID_ARG && got == NULL);
    CHECK(strstr(el_last_error(), "unknown chat template 'vicuna'") &&
          strstr(el_last_error(), "--chat-template"));
    CHECK(el_chat_apply(NULL, "{{ 'USER: ' + m }}", &m, 1, true, &got) == EL_ERR_INVALID_ARG);
    CHECK(strstr(el_last_error(), "not one edgelora knows") && strstr(el_last_error(), "--chat-template"));
    el_model *model;
    CHECK(el_model_load("tests/golden/llama_q4_0_linear.gguf", NULL, &model) == EL_OK);
    el_status st = el_chat_apply(model, NULL, &m, 1, true, &got); /* it has no template */
    el_model_free(model);
    CHECK(st == EL_ERR_INVALID_ARG && strstr(el_last_error(), "has no chat template") &&
          strstr(el_last_error(), "--chat-template NAME"));
    el_chat_message bad = {"user", NULL};
    CHECK(el_chat_apply(NULL, "chatml", &bad, 1, true, &got) == EL_ERR_INVALID_ARG);
    CHECK(el_chat_apply(NULL, "chatml", &m, 1, true, NULL) == EL_ERR_INVALID_ARG);
    return TEST_PASS;
}

/* The default model carries ours (train-tokenizer writes it; the base copies it). */
static int test_default_model(void) {
    el_model *model;
    el_model_params p = el_model_default_params();
    p.vocab_only = true;
    const char *name = NULL;
    CHECK(el_model_load("models/base.gguf", &p, &model) == EL_OK);
    el_status st = el_chat_template_family(model, NULL, &name);
    el_chat_message m[2] = {{"system", "Translate."}, {"user", "Hello"}};
    char *got = NULL;
    if (st == EL_OK) st = el_chat_apply(model, NULL, m, 2, true, &got);
    el_model_free(model);
    CHECK(st == EL_OK && strcmp(name, "edgelora") == 0);
    CHECK(strcmp(got, "Translate.\nUser: Hello\nAssistant:") == 0);
    free(got);
    return TEST_PASS;
}

int main(void) {
    run_test("against_llama_cpp", test_against_llama_cpp);
    run_test("edgelora_template", test_edgelora_template);
    run_test("recognition", test_recognition);
    run_test("errors", test_errors);
    run_test("default_model", test_default_model);
    return tests_exit_code();
}

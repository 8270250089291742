/* chat.c - chat templates: a conversation (role, content pairs) as the text an instruct model
 * was trained on.
 *
 * Models carry their template as Jinja text (tokenizer.chat_template). We do not run Jinja: as
 * llama.cpp's own built-in path does, each family's template is recognized by the markers its
 * text contains and written by code of ours for that family. The formats follow llama.cpp's
 * definitions exactly (the text and the token ids are checked against its template code by
 * scripts/llamacpp-crosscheck/chat-check.sh, and tests/golden/chat holds what it produced), so a
 * model answers here as it answers there. The text carries no BOS: tokenizing it with the
 * model's special tokens adds that. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/chat.h"

#include "core/error.h"
#include "formats/gguf.h"
#include "model/model.h"

/* Ours (CHAT_EDGELORA, docs/formats.md) as Jinja: its marker is the comment at the start. */
const char el_chat_edgelora_jinja[] =
    "{#- edgelora-default: a system message as its own line, then 'User: ' and 'Assistant: ' "
    "lines -#}\n"
    "{%- for message in messages -%}\n"
    "{%- if message['role'] == 'user' -%}{{ 'User: ' }}"
    "{%- elif message['role'] == 'assistant' -%}{{ 'Assistant: ' }}{%- endif -%}\n"
    "{{ message['content'] + '\\n' }}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}{{ 'Assistant:' }}{%- endif -%}\n";

typedef enum chat_family {
    CHAT_UNKNOWN = 0,
    CHAT_CHATML,
    CHAT_LLAMA3,
    CHAT_GEMMA,
    CHAT_PHI3,
    CHAT_MISTRAL_V1,
    CHAT_MISTRAL_V3,
    CHAT_MISTRAL_V3_TEKKEN,
    CHAT_MISTRAL_V7,
    CHAT_LLAMA2,
    CHAT_LLAMA2_SYS,
    CHAT_LLAMA2_SYS_BOS,
    CHAT_LLAMA2_SYS_STRIP,
    CHAT_EDGELORA,
    CHAT_FAMILIES
} chat_family;

/* The names a template can be chosen by (--chat-template NAME), llama.cpp's where it has one. */
static const char *const family_names[CHAT_FAMILIES] = {
    [CHAT_CHATML] = "chatml",           [CHAT_LLAMA3] = "llama3",
    [CHAT_GEMMA] = "gemma",             [CHAT_PHI3] = "phi3",
    [CHAT_MISTRAL_V1] = "mistral-v1",   [CHAT_MISTRAL_V3] = "mistral-v3",
    [CHAT_MISTRAL_V3_TEKKEN] = "mistral-v3-tekken",
    [CHAT_MISTRAL_V7] = "mistral-v7",   [CHAT_LLAMA2] = "llama2",
    [CHAT_LLAMA2_SYS] = "llama2-sys",   [CHAT_LLAMA2_SYS_BOS] = "llama2-sys-bos",
    [CHAT_LLAMA2_SYS_STRIP] = "llama2-sys-strip",
    [CHAT_EDGELORA] = "edgelora",
};

const char *el_chat_template_name(size_t i) {
    return i + 1 < CHAT_FAMILIES ? family_names[i + 1] : NULL;
}

static bool has(const char *text, const char *marker) { return strstr(text, marker) != NULL; }

/* The family of a template given by name or by its Jinja text. The order of the checks matters:
 * the markers of one family can appear in another's text (llama.cpp checks in this order). */
static chat_family detect(const char *t) {
    for (int f = 1; f < CHAT_FAMILIES; f++)
        if (strcmp(t, family_names[f]) == 0) return (chat_family)f;
    if (has(t, "<|im_start|>"))
        /* phi4 (<|im_sep|>) and SmolVLM (<end_of_utterance>) reuse ChatML's markers */
        return has(t, "<|im_sep|>") || has(t, "<end_of_utterance>") ? CHAT_UNKNOWN : CHAT_CHATML;
    if (strncmp(t, "mistral", 7) == 0 || has(t, "[INST]")) {
        if (has(t, "[SYSTEM_PROMPT]")) return CHAT_MISTRAL_V7;
        if (has(t, "' [INST] ' + system_message") || has(t, "[AVAILABLE_TOOLS]")) {
            if (has(t, " [INST]")) return CHAT_MISTRAL_V1;
            if (has(t, "\"[INST]\"")) return CHAT_MISTRAL_V3_TEKKEN;
            return CHAT_MISTRAL_V3;
        }
        if (has(t, "content.strip()")) return CHAT_LLAMA2_SYS_STRIP;
        if (has(t, "bos_token + '[INST]")) return CHAT_LLAMA2_SYS_BOS;
        return has(t, "<<SYS>>") ? CHAT_LLAMA2_SYS : CHAT_LLAMA2;
    }
    if (has(t, "<|assistant|>") && has(t, "<|end|>")) return CHAT_PHI3;
    if (has(t, "<start_of_turn>")) return CHAT_GEMMA;
    if (has(t, "<|start_header_id|>") && has(t, "<|end_header_id|>")) return CHAT_LLAMA3;
    if (has(t, "edgelora-default")) return CHAT_EDGELORA;
    return CHAT_UNKNOWN;
}

/* A growing string; a failed append leaves ok false and the text as it was. */
typedef struct text_buf {
    char *s;
    size_t n, cap;
    bool ok;
} text_buf;

static void put_n(text_buf *b, const char *s, size_t n) {
    if (!b->ok) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = (b->n + n + 1) * 2;
        char *p = realloc(b->s, cap);
        if (!p) {
            b->ok = false;
            return;
        }
        b->s = p, b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
}

static void put(text_buf *b, const char *s) { put_n(b, s, strlen(s)); }

static bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* s without leading and trailing white space (the C locale's isspace set), as llama.cpp trims. */
static void put_trimmed(text_buf *b, const char *s) {
    size_t n = strlen(s);
    while (n > 0 && is_space(*s)) s++, n--;
    while (n > 0 && is_space(s[n - 1])) n--;
    put_n(b, s, n);
}

static bool is_role(const el_chat_message *m, const char *role) {
    return strcmp(m->role, role) == 0;
}

static void write_mistral(text_buf *b, chat_family f, const el_chat_message *msg, size_t n) {
    if (f == CHAT_MISTRAL_V7) {
        for (size_t i = 0; i < n; i++) {
            if (is_role(&msg[i], "system")) {
                put(b, "[SYSTEM_PROMPT] "), put(b, msg[i].content), put(b, "[/SYSTEM_PROMPT]");
            } else if (is_role(&msg[i], "user")) {
                put(b, "[INST] "), put(b, msg[i].content), put(b, "[/INST]");
            } else {
                put(b, " "), put(b, msg[i].content), put(b, "</s>");
            }
        }
        return;
    }
    const char *lead = f == CHAT_MISTRAL_V1 ? " " : "";
    const char *trail = f == CHAT_MISTRAL_V3_TEKKEN ? "" : " ";
    bool in_turn = false;
    for (size_t i = 0; i < n; i++) {
        if (!in_turn) {
            put(b, lead), put(b, "[INST]"), put(b, trail);
            in_turn = true;
        }
        if (is_role(&msg[i], "system")) {
            put(b, msg[i].content), put(b, "\n\n");
        } else if (is_role(&msg[i], "user")) {
            put(b, msg[i].content), put(b, lead), put(b, "[/INST]");
        } else {
            put(b, trail);
            if (f == CHAT_MISTRAL_V3) put_trimmed(b, msg[i].content);
            else put(b, msg[i].content);
            put(b, "</s>");
            in_turn = false;
        }
    }
}

static void write_llama2(text_buf *b, chat_family f, const el_chat_message *msg, size_t n) {
    bool in_turn = true; /* the first [INST] has no BOS of its own: tokenizing adds it */
    put(b, "[INST] ");
    for (size_t i = 0; i < n; i++) {
        if (!in_turn) {
            put(b, f == CHAT_LLAMA2_SYS_BOS ? "<s>[INST] " : "[INST] ");
            in_turn = true;
        }
        text_buf c = {.ok = true};
        if (f == CHAT_LLAMA2_SYS_STRIP) put_trimmed(&c, msg[i].content);
        else put(&c, msg[i].content);
        const char *content = c.s ? c.s : "";
        if (!c.ok) b->ok = false;
        if (is_role(&msg[i], "system")) {
            if (f == CHAT_LLAMA2) put(b, content), put(b, "\n");
            else put(b, "<<SYS>>\n"), put(b, content), put(b, "\n<</SYS>>\n\n");
        } else if (is_role(&msg[i], "user")) {
            put(b, content), put(b, " [/INST]");
        } else {
            put(b, content), put(b, "</s>");
            in_turn = false;
        }
        free(c.s);
    }
}

/* Gemma has no system turn: a system message opens the next user turn, trimmed. */
static void write_gemma(text_buf *b, const el_chat_message *msg, size_t n, bool add_assistant) {
    text_buf sys = {.ok = true};
    for (size_t i = 0; i < n; i++) {
        if (is_role(&msg[i], "system")) {
            put_trimmed(&sys, msg[i].content);
            continue;
        }
        bool model = is_role(&msg[i], "assistant");
        put(b, "<start_of_turn>"), put(b, model ? "model" : msg[i].role), put(b, "\n");
        if (sys.n > 0 && !model) {
            put(b, sys.s), put(b, "\n\n");
            sys.n = 0;
        }
        put_trimmed(b, msg[i].content), put(b, "<end_of_turn>\n");
    }
    if (!sys.ok) b->ok = false;
    free(sys.s);
    if (add_assistant) put(b, "<start_of_turn>model\n");
}

static void write_chat(text_buf *b, chat_family f, const el_chat_message *msg, size_t n,
                       bool add_assistant) {
    switch (f) {
    case CHAT_CHATML:
        for (size_t i = 0; i < n; i++)
            put(b, "<|im_start|>"), put(b, msg[i].role), put(b, "\n"), put(b, msg[i].content),
                put(b, "<|im_end|>\n");
        if (add_assistant) put(b, "<|im_start|>assistant\n");
        break;
    case CHAT_LLAMA3:
        for (size_t i = 0; i < n; i++)
            put(b, "<|start_header_id|>"), put(b, msg[i].role), put(b, "<|end_header_id|>\n\n"),
                put_trimmed(b, msg[i].content), put(b, "<|eot_id|>");
        if (add_assistant) put(b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
        break;
    case CHAT_PHI3:
        for (size_t i = 0; i < n; i++)
            put(b, "<|"), put(b, msg[i].role), put(b, "|>\n"), put(b, msg[i].content),
                put(b, "<|end|>\n");
        if (add_assistant) put(b, "<|assistant|>\n");
        break;
    case CHAT_GEMMA: write_gemma(b, msg, n, add_assistant); break;
    case CHAT_MISTRAL_V1:
    case CHAT_MISTRAL_V3:
    case CHAT_MISTRAL_V3_TEKKEN:
    case CHAT_MISTRAL_V7: write_mistral(b, f, msg, n); break;
    case CHAT_LLAMA2:
    case CHAT_LLAMA2_SYS:
    case CHAT_LLAMA2_SYS_BOS:
    case CHAT_LLAMA2_SYS_STRIP: write_llama2(b, f, msg, n); break;
    case CHAT_EDGELORA: /* ours (docs/formats.md): plain labelled lines */
        for (size_t i = 0; i < n; i++) {
            if (is_role(&msg[i], "user")) put(b, "User: ");
            else if (is_role(&msg[i], "assistant")) put(b, "Assistant: ");
            put(b, msg[i].content), put(b, "\n");
        }
        if (add_assistant) put(b, "Assistant:");
        break;
    default: break;
    }
}

/* The template text of m (tokenizer.chat_template), malloc'd, or NULL if it has none. */
static char *model_template(const el_model *m) {
    gguf_str s;
    if (!m || !m->gguf || gguf_get_str(m->gguf, "tokenizer.chat_template", &s) != EL_OK)
        return NULL;
    return strndup(s.ptr, (size_t)s.len);
}

el_status el_chat_template_family(const el_model *model, const char *tmpl, const char **name) {
    if (!name) return el_error(EL_ERR_INVALID_ARG, "el_chat_template_family: NULL argument");
    *name = NULL;
    char *own = tmpl ? NULL : model_template(model);
    const char *t = tmpl ? tmpl : own;
    if (!t) {
        return el_error(EL_ERR_INVALID_ARG,
                        "%s has no chat template (tokenizer.chat_template): choose one with "
                        "--chat-template NAME (chatml, llama3, gemma, phi3, mistral-v7, llama2, "
                        "edgelora, ...)", model && model->path ? model->path : "the model");
    }
    chat_family f = detect(t);
    free(own);
    if (f == CHAT_UNKNOWN) {
        if (tmpl && strlen(tmpl) < 40 && !strchr(tmpl, '{'))
            return el_error(EL_ERR_INVALID_ARG, "unknown chat template '%s': choose one of "
                            "chatml, llama3, gemma, phi3, mistral-v1, mistral-v3, "
                            "mistral-v3-tekken, mistral-v7, llama2, llama2-sys, llama2-sys-bos, "
                            "llama2-sys-strip, edgelora (--chat-template NAME)", tmpl);
        return el_error(EL_ERR_INVALID_ARG, "%s: the chat template is not one edgelora knows: "
                        "choose one with --chat-template NAME (chatml, llama3, gemma, phi3, "
                        "mistral-v7, llama2, edgelora, ...)",
                        tmpl ? "the given text" : model && model->path ? model->path : "the model");
    }
    *name = family_names[f];
    return EL_OK;
}

el_status el_chat_apply(const el_model *model, const char *tmpl, const el_chat_message *msgs,
                        size_t n, bool add_assistant, char **out) {
    if (!out || (n > 0 && !msgs)) return el_error(EL_ERR_INVALID_ARG, "el_chat_apply: NULL argument");
    *out = NULL;
    for (size_t i = 0; i < n; i++)
        if (!msgs[i].role || !msgs[i].content)
            return el_error(EL_ERR_INVALID_ARG, "chat message %zu has no %s", i,
                            msgs[i].role ? "content" : "role");
    const char *name;
    el_status st = el_chat_template_family(model, tmpl, &name);
    if (st) return st;
    text_buf b = {.ok = true};
    put(&b, ""); /* an empty conversation is an empty string, not NULL */
    write_chat(&b, detect(name), msgs, n, add_assistant);
    if (!b.ok) {
        free(b.s);
        return el_error(EL_ERR_NOMEM, "chat template: out of memory");
    }
    *out = b.s;
    return EL_OK;
}

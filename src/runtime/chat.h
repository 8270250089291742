/* chat.h - what the tools need of the chat templates (chat.c): our own template's Jinja text,
 * which the tokenizers we train carry as tokenizer.chat_template (so the default model has it,
 * and llama.cpp's Jinja path renders it as we write it). */
#ifndef EL_RUNTIME_CHAT_H
#define EL_RUNTIME_CHAT_H

extern const char el_chat_edgelora_jinja[];

#endif

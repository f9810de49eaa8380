/* A small JSON reader (DOM in one arena) and writer, enough for scenarios and results.
 * The reader keeps line/column for error messages and limits nesting depth so that
 * hostile input cannot exhaust the stack (the parser is a fuzz target). */
#ifndef VMSIM_JSON_H
#define VMSIM_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

typedef enum { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } json_type;

typedef struct json_value {
    json_type type;
    bool boolean;
    double number;
    bool is_integer;        /* literal had no fraction or exponent */
    int64_t integer;        /* valid when is_integer and it fit */
    const char *str;        /* NUL-terminated, decoded; for JSON_STRING */
    size_t str_len;
    const char *key;        /* member name when inside an object */
    struct json_value *first_child;
    struct json_value *next;
    size_t count;           /* number of children */
} json_value;

typedef struct json_doc {
    json_value *root;
    char *arena;            /* one block holding nodes and strings */
    char error[256];
} json_doc;

/* Parses text (need not be NUL-terminated). Returns false with doc->error set. */
bool json_parse(const char *text, size_t len, json_doc *doc);
void json_free(json_doc *doc);

const json_value *json_get(const json_value *obj, const char *key);
const char *json_type_name(json_type t);

/* Growable output buffer. */
typedef struct strbuf {
    char *data;
    size_t len, cap;
    bool oom;
} strbuf;

void sb_init(strbuf *sb);
void sb_free(strbuf *sb);
void sb_putc(strbuf *sb, char c);
void sb_puts(strbuf *sb, const char *s);
void sb_printf(strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_json_string(strbuf *sb, const char *s);
void sb_hex(strbuf *sb, uint64_t v);            /* "0x1f" as a JSON string */
char *sb_take(strbuf *sb);                      /* NUL-terminated, caller frees */

#endif

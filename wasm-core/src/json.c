#include "json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#define JSON_MAX_DEPTH 64

typedef struct parser {
    const char *p, *end, *start;
    char *arena;
    size_t arena_used, arena_cap;
    json_doc *doc;
    int depth;
} parser;

static void where(const parser *ps, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (const char *q = ps->start; q < ps->p && q < ps->end; q++) {
        if (*q == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

static bool fail(parser *ps, const char *what)
{
    int line, col;
    where(ps, &line, &col);
    snprintf(ps->doc->error, sizeof ps->doc->error,
             "scenario is not valid JSON: line %d column %d: %s", line, col, what);
    return false;
}

/* Everything the parse can allocate is bounded by the input size: each node needs at
 * least one input byte and each decoded string is no longer than its literal. */
static void *arena_alloc(parser *ps, size_t n)
{
    n = (n + 7) & ~(size_t)7;
    if (ps->arena_used + n > ps->arena_cap)
        return NULL;
    void *r = ps->arena + ps->arena_used;
    ps->arena_used += n;
    return r;
}

static void skip_ws(parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static json_value *new_node(parser *ps, json_type t)
{
    json_value *v = arena_alloc(ps, sizeof *v);
    if (!v)
        return NULL;
    memset(v, 0, sizeof *v);
    v->type = t;
    return v;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static bool read_u16(parser *ps, unsigned *out)
{
    if (ps->end - ps->p < 4)
        return fail(ps, "truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(ps->p[i]);
        if (h < 0)
            return fail(ps, "bad \\u escape");
        v = v * 16 + (unsigned)h;
    }
    ps->p += 4;
    *out = v;
    return true;
}

static size_t put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | (cp >> 6)); o[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12)); o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F)); return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18)); o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[3] = (char)(0x80 | (cp & 0x3F)); return 4;
}

static bool parse_string_raw(parser *ps, const char **out, size_t *out_len)
{
    ps->p++; /* opening quote */
    const char *s = ps->p;
    size_t max = 0;
    while (s < ps->end && *s != '"') {
        if (*s == '\\')
            s++;
        s++;
        max++;
    }
    /* A \uXXXX (6 bytes) decodes to at most 4 bytes, so the literal length bounds it. */
    char *buf = arena_alloc(ps, (size_t)(s - ps->p) + 1);
    if (!buf)
        return fail(ps, "out of memory");
    size_t n = 0;
    while (1) {
        if (ps->p >= ps->end)
            return fail(ps, "unterminated string");
        unsigned char c = (unsigned char)*ps->p;
        if (c == '"') {
            ps->p++;
            break;
        }
        if (c < 0x20)
            return fail(ps, "control character in string");
        if (c != '\\') {
            buf[n++] = (char)c;
            ps->p++;
            continue;
        }
        ps->p++;
        if (ps->p >= ps->end)
            return fail(ps, "unterminated escape");
        char e = *ps->p++;
        switch (e) {
        case '"': buf[n++] = '"'; break;
        case '\\': buf[n++] = '\\'; break;
        case '/': buf[n++] = '/'; break;
        case 'b': buf[n++] = '\b'; break;
        case 'f': buf[n++] = '\f'; break;
        case 'n': buf[n++] = '\n'; break;
        case 'r': buf[n++] = '\r'; break;
        case 't': buf[n++] = '\t'; break;
        case 'u': {
            unsigned cp;
            if (!read_u16(ps, &cp))
                return false;
            if (cp >= 0xD800 && cp < 0xDC00) {
                unsigned lo;
                if (ps->end - ps->p < 6 || ps->p[0] != '\\' || ps->p[1] != 'u')
                    return fail(ps, "unpaired surrogate in \\u escape");
                ps->p += 2;
                if (!read_u16(ps, &lo))
                    return false;
                if (lo < 0xDC00 || lo >= 0xE000)
                    return fail(ps, "unpaired surrogate in \\u escape");
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp < 0xE000) {
                return fail(ps, "unpaired surrogate in \\u escape");
            }
            if (cp == 0)
                return fail(ps, "\\u0000 is not allowed in strings");
            n += put_utf8(buf + n, cp);
            break;
        }
        default:
            return fail(ps, "bad escape in string");
        }
    }
    buf[n] = 0;
    (void)max;
    *out = buf;
    *out_len = n;
    return true;
}

static json_value *parse_value(parser *ps);

static json_value *parse_number(parser *ps)
{
    const char *s = ps->p;
    if (ps->p < ps->end && *ps->p == '-')
        ps->p++;
    if (ps->p >= ps->end || !(*ps->p >= '0' && *ps->p <= '9')) {
        fail(ps, "bad number");
        return NULL;
    }
    if (*ps->p == '0') {
        ps->p++;
    } else {
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
            ps->p++;
    }
    bool integer = true;
    if (ps->p < ps->end && *ps->p == '.') {
        integer = false;
        ps->p++;
        if (ps->p >= ps->end || !(*ps->p >= '0' && *ps->p <= '9')) {
            fail(ps, "bad number");
            return NULL;
        }
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
            ps->p++;
    }
    if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
        integer = false;
        ps->p++;
        if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
            ps->p++;
        if (ps->p >= ps->end || !(*ps->p >= '0' && *ps->p <= '9')) {
            fail(ps, "bad number");
            return NULL;
        }
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
            ps->p++;
    }
    char tmp[64];
    size_t len = (size_t)(ps->p - s);
    json_value *v = new_node(ps, JSON_NUMBER);
    if (!v) {
        fail(ps, "out of memory");
        return NULL;
    }
    if (len >= sizeof tmp) {
        /* Too long to matter for any field here; keep it as a non-integer. */
        v->number = NAN;
        return v;
    }
    memcpy(tmp, s, len);
    tmp[len] = 0;
    v->number = strtod(tmp, NULL);
    if (integer && len <= 18) {
        v->is_integer = true;
        v->integer = strtoll(tmp, NULL, 10);
    }
    return v;
}

static bool expect_word(parser *ps, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, w, n) != 0)
        return fail(ps, "unexpected character");
    ps->p += n;
    return true;
}

static json_value *parse_container(parser *ps, bool object)
{
    json_value *v = new_node(ps, object ? JSON_OBJECT : JSON_ARRAY);
    if (!v) {
        fail(ps, "out of memory");
        return NULL;
    }
    if (++ps->depth > JSON_MAX_DEPTH) {
        fail(ps, "nested too deeply");
        return NULL;
    }
    ps->p++;
    skip_ws(ps);
    json_value **tail = &v->first_child;
    char close = object ? '}' : ']';
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        ps->depth--;
        return v;
    }
    while (1) {
        const char *key = NULL;
        skip_ws(ps);
        if (object) {
            size_t klen;
            if (ps->p >= ps->end || *ps->p != '"') {
                fail(ps, "expected a quoted member name");
                return NULL;
            }
            if (!parse_string_raw(ps, &key, &klen))
                return NULL;
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') {
                fail(ps, "expected ':' after member name");
                return NULL;
            }
            ps->p++;
            for (json_value *c = v->first_child; c; c = c->next) {
                if (strcmp(c->key, key) == 0) {
                    fail(ps, "duplicate member name");
                    return NULL;
                }
            }
        }
        json_value *child = parse_value(ps);
        if (!child)
            return NULL;
        child->key = key;
        *tail = child;
        tail = &child->next;
        v->count++;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
            break;
        }
        fail(ps, object ? "expected ',' or '}'" : "expected ',' or ']'");
        return NULL;
    }
    ps->depth--;
    return v;
}

static json_value *parse_value(parser *ps)
{
    skip_ws(ps);
    if (ps->p >= ps->end) {
        fail(ps, "unexpected end of input");
        return NULL;
    }
    json_value *v;
    switch (*ps->p) {
    case '{':
        return parse_container(ps, true);
    case '[':
        return parse_container(ps, false);
    case '"':
        v = new_node(ps, JSON_STRING);
        if (!v) {
            fail(ps, "out of memory");
            return NULL;
        }
        if (!parse_string_raw(ps, &v->str, &v->str_len))
            return NULL;
        return v;
    case 't':
    case 'f':
        v = new_node(ps, JSON_BOOL);
        if (!v) {
            fail(ps, "out of memory");
            return NULL;
        }
        v->boolean = *ps->p == 't';
        if (!expect_word(ps, v->boolean ? "true" : "false"))
            return NULL;
        return v;
    case 'n':
        v = new_node(ps, JSON_NULL);
        if (!v) {
            fail(ps, "out of memory");
            return NULL;
        }
        if (!expect_word(ps, "null"))
            return NULL;
        return v;
    default:
        if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9'))
            return parse_number(ps);
        fail(ps, "unexpected character");
        return NULL;
    }
}

bool json_parse(const char *text, size_t len, json_doc *doc)
{
    memset(doc, 0, sizeof *doc);
    parser ps = {.p = text, .end = text + len, .start = text, .doc = doc};
    /* Every node consumes at least one byte of input; strings need at most len+1. */
    ps.arena_cap = (len + 1) * (sizeof(json_value) + 8) + 64;
    ps.arena = malloc(ps.arena_cap);
    if (!ps.arena) {
        snprintf(doc->error, sizeof doc->error, "scenario too large: out of memory");
        return false;
    }
    doc->arena = ps.arena;
    json_value *root = parse_value(&ps);
    if (root) {
        skip_ws(&ps);
        if (ps.p != ps.end) {
            fail(&ps, "unexpected text after the end of the document");
            root = NULL;
        }
    }
    if (!root) {
        free(ps.arena);
        doc->arena = NULL;
        return false;
    }
    doc->root = root;
    return true;
}

void json_free(json_doc *doc)
{
    free(doc->arena);
    doc->arena = NULL;
    doc->root = NULL;
}

const json_value *json_get(const json_value *obj, const char *key)
{
    if (!obj || obj->type != JSON_OBJECT)
        return NULL;
    for (const json_value *c = obj->first_child; c; c = c->next)
        if (strcmp(c->key, key) == 0)
            return c;
    return NULL;
}

const char *json_type_name(json_type t)
{
    static const char *names[] = {"null", "a boolean", "a number", "a string", "an array", "an object"};
    return names[t];
}

/* ---- writer ---- */

void sb_init(strbuf *sb)
{
    sb->data = NULL;
    sb->len = sb->cap = 0;
    sb->oom = false;
}

void sb_free(strbuf *sb)
{
    free(sb->data);
    sb_init(sb);
}

static bool sb_reserve(strbuf *sb, size_t extra)
{
    if (sb->oom)
        return false;
    if (sb->len + extra + 1 <= sb->cap)
        return true;
    size_t cap = sb->cap ? sb->cap : 256;
    while (cap < sb->len + extra + 1)
        cap *= 2;
    char *d = realloc(sb->data, cap);
    if (!d) {
        sb->oom = true;
        return false;
    }
    sb->data = d;
    sb->cap = cap;
    return true;
}

void sb_putc(strbuf *sb, char c)
{
    if (!sb_reserve(sb, 1))
        return;
    sb->data[sb->len++] = c;
    sb->data[sb->len] = 0;
}

void sb_puts(strbuf *sb, const char *s)
{
    size_t n = strlen(s);
    if (!sb_reserve(sb, n))
        return;
    memcpy(sb->data + sb->len, s, n + 1);
    sb->len += n;
}

void sb_printf(strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char tmp[256];
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof tmp) {
        sb_puts(sb, tmp);
        return;
    }
    if (!sb_reserve(sb, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)n;
}

void sb_json_string(strbuf *sb, const char *s)
{
    sb_putc(sb, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': sb_puts(sb, "\\\""); break;
        case '\\': sb_puts(sb, "\\\\"); break;
        case '\n': sb_puts(sb, "\\n"); break;
        case '\r': sb_puts(sb, "\\r"); break;
        case '\t': sb_puts(sb, "\\t"); break;
        default:
            if (*p < 0x20)
                sb_printf(sb, "\\u%04x", *p);
            else
                sb_putc(sb, (char)*p);
        }
    }
    sb_putc(sb, '"');
}

void sb_hex(strbuf *sb, uint64_t v)
{
    sb_printf(sb, "\"0x%llx\"", (unsigned long long)v);
}

char *sb_take(strbuf *sb)
{
    if (sb->oom) {
        sb_free(sb);
        return NULL;
    }
    if (!sb->data)
        sb_putc(sb, 0), sb->len = 0;
    char *d = sb->data;
    sb_init(sb);
    return d;
}

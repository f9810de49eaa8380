/* The trace format (docs/replay.md): prefix and header checks, and the streaming body
 * decoder. Every refusal says what is wrong with the file and what to do about it. */
#include "trace.h"
#include "json.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool errf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return false;
}

static uint32_t le16(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static char *dup_str(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

/* A header field that must be a whole number in [0, max]. */
static bool header_uint(const json_value *root, const char *path, const char *key, uint64_t max, uint64_t *out,
                        char *err, size_t errlen)
{
    const json_value *v = json_get(root, key);
    if (!v)
        return errf(err, errlen, "the trace header has no \"%s%s\": the file is corrupt or was not written by hw-lab/run trace",
                    path, key);
    if (v->type != JSON_NUMBER || !v->is_integer || v->integer < 0 || (uint64_t)v->integer > max)
        return errf(err, errlen, "the trace header's \"%s%s\" must be a whole number from 0 to %llu: the file is corrupt",
                    path, key, (unsigned long long)max);
    *out = (uint64_t)v->integer;
    return true;
}

/* Printable: control characters of a recorded command line become '?' in tables. */
static void clean_line(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = '?';
}

static bool parse_header(const char *text, size_t len, trace_header *h, char *err, size_t errlen)
{
    json_doc doc;
    if (!json_parse(text, len, &doc)) {
        const char *why = doc.error;
        const char *colon = strstr(why, "JSON: ");
        errf(err, errlen, "the trace header is not valid JSON (%s): the file is corrupt", colon ? colon + 6 : why);
        return false;
    }
    const json_value *root = doc.root;
    bool ok = false;
    const json_value *v;
    if (!root || root->type != JSON_OBJECT) {
        errf(err, errlen, "the trace header is not a JSON object: the file is corrupt");
        goto out;
    }
    v = json_get(root, "format");
    if (!v || v->type != JSON_STRING || strcmp(v->str, "vmemlab-trace") != 0) {
        errf(err, errlen, "the trace header's \"format\" is not \"vmemlab-trace\": not a vmemlab trace");
        goto out;
    }
    uint64_t version;
    if (!header_uint(root, "", "version", 1u << 30, &version, err, errlen))
        goto out;
    if (version != TRACE_VERSION) {
        errf(err, errlen, "the trace header says format version %llu; this vmsim reads version %u "
                          "(record the trace again with this vmemlab's hw-lab/run trace)",
             (unsigned long long)version, TRACE_VERSION);
        goto out;
    }
    uint64_t page_size;
    if (!header_uint(root, "", "page_size", 1u << 30, &page_size, err, errlen))
        goto out;
    if (page_size != 1u << TRACE_PAGE_SHIFT) {
        errf(err, errlen, "the trace header's \"page_size\" is %llu; version 1 traces split addresses at 4096-byte pages",
             (unsigned long long)page_size);
        goto out;
    }
    v = json_get(root, "program");
    if (!v || v->type != JSON_STRING || !v->str_len) {
        errf(err, errlen, "the trace header has no \"program\" (a non-empty string): the file is corrupt");
        goto out;
    }
    h->program = dup_str(v->str, v->str_len);
    const json_value *args = json_get(root, "args");
    if (!args || args->type != JSON_ARRAY) {
        errf(err, errlen, "the trace header has no \"args\" (an array of strings): the file is corrupt");
        goto out;
    }
    strbuf cmd, aj;
    sb_init(&cmd);
    sb_init(&aj);
    sb_puts(&cmd, v->str);
    sb_putc(&aj, '[');
    for (const json_value *a = args->first_child; a; a = a->next) {
        if (a->type != JSON_STRING) {
            sb_free(&cmd);
            sb_free(&aj);
            errf(err, errlen, "the trace header's \"args\" must hold strings only: the file is corrupt");
            goto out;
        }
        sb_putc(&cmd, ' ');
        sb_puts(&cmd, a->str);
        if (a != args->first_child)
            sb_putc(&aj, ',');
        sb_json_string(&aj, a->str);
    }
    sb_putc(&aj, ']');
    h->command = sb_take(&cmd);
    h->args_json = sb_take(&aj);
    if (!h->program || !h->command || !h->args_json) {
        errf(err, errlen, "out of memory reading the trace header");
        goto out;
    }
    clean_line(h->command);
    if (!header_uint(root, "", "accesses", TRACE_MAX_ACCESSES, &h->accesses, err, errlen) ||
        !header_uint(root, "", "pages", TRACE_USER_PAGES, &h->pages, err, errlen))
        goto out;
    const json_value *counts = json_get(root, "counts");
    static const char *const kinds[] = {"load", "store", "fetch", "modify"};
    if (!counts || counts->type != JSON_OBJECT) {
        errf(err, errlen, "the trace header has no \"counts\" object (load, store, fetch, modify): the file is corrupt");
        goto out;
    }
    uint64_t sum = 0;
    for (int k = 0; k < 4; k++) {
        if (!header_uint(counts, "counts.", kinds[k], TRACE_MAX_ACCESSES, &h->counts[k], err, errlen))
            goto out;
        sum += h->counts[k];
    }
    if (sum != h->accesses) {
        errf(err, errlen, "the trace header's counts add up to %llu accesses, its \"accesses\" says %llu: the file is corrupt",
             (unsigned long long)sum, (unsigned long long)h->accesses);
        goto out;
    }
    v = json_get(root, "partial");
    if (!v || v->type != JSON_BOOL) {
        errf(err, errlen, "the trace header has no \"partial\" (true or false): the file is corrupt");
        goto out;
    }
    h->partial = v->boolean;
    v = json_get(root, "partial_reason");
    if (h->partial) {
        if (!v || v->type != JSON_STRING) {
            errf(err, errlen, "the trace header marks the trace partial without a \"partial_reason\": the file is corrupt");
            goto out;
        }
        h->partial_reason = dup_str(v->str, v->str_len);
        if (h->partial_reason)
            clean_line(h->partial_reason);
    }
    const json_value *body = json_get(root, "body");
    v = json_get(body, "compression");
    if (!body || !v || v->type != JSON_STRING) {
        errf(err, errlen, "the trace header has no \"body\": {\"compression\", \"bytes\"}: the file is corrupt");
        goto out;
    }
    if (strcmp(v->str, "gzip") != 0) {
        errf(err, errlen, "the trace body is compressed with \"%.20s\"; version 1 traces use gzip", v->str);
        goto out;
    }
    if (!header_uint(body, "body.", "bytes", 1ull << 48, &h->body_bytes, err, errlen))
        goto out;
    ok = true;
out:
    json_free(&doc);
    return ok;
}

bool trace_open(const uint8_t *b, size_t n, uint64_t file_size, trace_header *h, uint64_t *body_offset, char *err,
                size_t errlen)
{
    memset(h, 0, sizeof *h);
    if (n < TRACE_PREFIX_BYTES)
        return errf(err, errlen, "the file is %zu bytes long, shorter than the 16-byte prefix of a trace: not a vmemlab "
                                 "trace (record one with hw-lab/run trace)", n);
    if (memcmp(b, TRACE_MAGIC, 8) != 0) {
        if (b[0] == 0x1f && b[1] == 0x8b)
            return errf(err, errlen, "this is a plain gzip file, not a vmemlab trace (a trace starts with its own "
                                     "prefix and header); record one with hw-lab/run trace");
        if (b[0] == '=' || (b[0] == 'I' && b[1] == ' ') || (b[0] == ' ' && (b[1] == 'L' || b[1] == 'S' || b[1] == 'M')))
            return errf(err, errlen, "this looks like a valgrind lackey log, not a vmemlab trace: convert it with "
                                     "hw-lab/run trace --from-lackey LOG --out FILE");
        if (b[0] == '{')
            return errf(err, errlen, "this is a JSON file, not a vmemlab trace: give a .vmtrace file that hw-lab/run trace wrote");
        return errf(err, errlen, "not a vmemlab trace: the file does not start with the trace prefix; record one with "
                                 "hw-lab/run trace");
    }
    uint32_t version = le16(b + 8), reserved = le16(b + 10), hlen = le32(b + 12);
    if (version != TRACE_VERSION)
        return errf(err, errlen, "this trace is format version %u; this vmsim reads version %u (record the trace again "
                                 "with this vmemlab's hw-lab/run trace)", version, TRACE_VERSION);
    if (reserved != 0 || hlen == 0 || hlen > TRACE_HEADER_MAX)
        return errf(err, errlen, "the trace prefix is corrupt (header length %u, reserved field %u): the file is damaged",
                    hlen, reserved);
    if (n < TRACE_PREFIX_BYTES + hlen) {
        if (file_size && file_size < TRACE_PREFIX_BYTES + hlen)
            return errf(err, errlen, "the trace is truncated: its header is %u bytes, the file ends after %llu (was the "
                                     "copy or download cut short?)", hlen, (unsigned long long)file_size - TRACE_PREFIX_BYTES);
        return errf(err, errlen, "the trace header is %u bytes; pass at least %u bytes of the file", hlen,
                    TRACE_PREFIX_BYTES + hlen);
    }
    if (!parse_header((const char *)b + TRACE_PREFIX_BYTES, hlen, h, err, errlen)) {
        trace_header_free(h);
        return false;
    }
    *body_offset = TRACE_PREFIX_BYTES + hlen;
    if (file_size && file_size != *body_offset + h->body_bytes) {
        bool short_ = file_size < *body_offset + h->body_bytes;
        errf(err, errlen, short_ ? "the trace is truncated: its header announces a %llu-byte body, the file holds %llu "
                                   "bytes after the header (was the copy or download cut short?)"
                                 : "the trace is corrupt: its header announces a %llu-byte body, the file holds %llu "
                                   "bytes after the header",
             (unsigned long long)h->body_bytes, (unsigned long long)(file_size - *body_offset));
        trace_header_free(h);
        return false;
    }
    return true;
}

void trace_header_free(trace_header *h)
{
    free(h->program);
    free(h->command);
    free(h->args_json);
    free(h->partial_reason);
    memset(h, 0, sizeof *h);
}

void trace_decoder_init(trace_decoder *d)
{
    memset(d, 0, sizeof *d);
}

/* A LEB128 varint of at most 10 bytes: bytes used, 0 if the piece ends first, -1 if too long.
 * Always inline: the fast loops below call it, and a call in a loop makes WebAssembly's
 * compiler (V8) keep the loop's values on the stack (no register is kept across a call). */
static inline __attribute__((always_inline)) int varint(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
    if (p < end && !(p[0] & 0x80)) { /* most of a program's: one byte, read inline */
        *v = p[0];
        return 1;
    }
    uint64_t x = 0;
    for (int i = 0; i < 10; i++) {
        if (p + i >= end)
            return 0;
        x |= (uint64_t)(p[i] & 0x7f) << (7 * i);
        if (!(p[i] & 0x80)) {
            if (i == 9 && p[i] > 1)
                return -1;
            *v = x;
            return i + 1;
        }
    }
    return -1;
}

static inline int64_t unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static size_t fail(trace_decoder *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static size_t fail(trace_decoder *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->err, sizeof d->err, fmt, ap);
    va_end(ap);
    d->failed = true;
    return 0;
}

#define CODE_ESCAPE 30u
#define CODE_CONTROL 31u
#define MAX_RECORD 21u      /* tag + two 10-byte varints */

/* The counts per kind packed in one word by the scans' hot loops (16 bits a kind, at most
 * 65,535 records between two calls) added to kinds; how many they were in all. */
static inline uint64_t add_packed(uint64_t kinds[4], uint64_t packed)
{
    uint64_t all = 0;
    for (int k = 0; k < 4; k++) {
        uint64_t c = packed >> (16 * k) & 0xFFFF;
        kinds[k] += c;
        all += c;
    }
    return all;
}

/* A record of one byte: an access on its stream's page, the offset's step in the tag. */
static inline bool one_byte(uint8_t tag)
{
    return !(tag & 4) && tag >> 3 < CODE_ESCAPE;
}

/* The fast paths' reading of a record that is neither one byte nor the end record, from
 * its tag at q: its step in the page (0 unless tag & 4) and in the offset, and where the
 * next record starts. NULL when a varint runs past end or is too long: the caller leaves
 * the record to decode_one, which says what is wrong. */
static inline __attribute__((always_inline)) const uint8_t *long_record(const uint8_t *q, const uint8_t *end,
                                                                        uint32_t tag, int64_t *dpage, int64_t *step)
{
    const uint8_t *r = q + 1;
    uint64_t v;
    *dpage = 0;
    if (tag & 4) {
        int k = varint(r, end, &v);
        if (k <= 0)
            return NULL;
        r += k;
        *dpage = unzigzag(v);
    }
    uint32_t code = tag >> 3;
    if (code == CODE_ESCAPE) {
        int k = varint(r, end, &v);
        if (k <= 0)
            return NULL;
        r += k;
        *step = unzigzag(v);
    } else {
        *step = unzigzag(code);
    }
    return r;
}

/* One record from p: bytes used (> 0), 0 when the piece ends inside it, or -1 on corrupt
 * data (d->err set). *got is set when the record was an access. */
static int decode_one(trace_decoder *d, const uint8_t *p, const uint8_t *end, trace_access *a, bool *got)
{
    *got = false;
    if (p >= end)
        return 0;
    if (d->ended) {
        fail(d, "the trace is corrupt: data follows its end record (at body byte %llu)", (unsigned long long)d->consumed);
        return -1;
    }
    uint8_t tag = p[0];
    uint32_t code = tag >> 3;
    const uint8_t *q = p + 1;
    if (code == CODE_CONTROL) {
        if ((tag & 7) != 0) {
            fail(d, "the trace is corrupt: unknown record type 0x%02x at body byte %llu", tag, (unsigned long long)d->consumed);
            return -1;
        }
        uint64_t total;
        int k = varint(q, end, &total);
        if (k == 0)
            return 0;
        if (k < 0 || total != d->count) {
            fail(d, "the trace is corrupt: its end record counts %llu accesses where the body holds %llu",
                 k < 0 ? 0ull : (unsigned long long)total, (unsigned long long)d->count);
            return -1;
        }
        d->ended = true;
        return (int)(q + k - p);
    }
    uint32_t kind = tag & 3, s = kind == TRACE_FETCH;
    uint64_t page = d->page[s];
    int64_t od;
    if (tag & 4) {
        uint64_t zz;
        int k = varint(q, end, &zz);
        if (k == 0)
            return 0;
        if (k < 0)
            goto bad_varint;
        q += k;
        page += (uint64_t)unzigzag(zz);
    }
    if (code == CODE_ESCAPE) {
        uint64_t zz;
        int k = varint(q, end, &zz);
        if (k == 0)
            return 0;
        if (k < 0)
            goto bad_varint;
        q += k;
        od = unzigzag(zz);
    } else {
        od = unzigzag(code);
    }
    int64_t off = (int64_t)d->off[s] + od;
    if (off < 0 || off >= (1 << TRACE_PAGE_SHIFT)) {
        fail(d, "the trace is corrupt: access %llu has a page offset of %lld (at body byte %llu)",
             (unsigned long long)d->count + 1, (long long)off, (unsigned long long)d->consumed);
        return -1;
    }
    d->page[s] = page;
    d->off[s] = (uint32_t)off;
    a->addr = page << TRACE_PAGE_SHIFT | (uint64_t)off;
    a->kind = (uint8_t)kind;
    d->count++;
    *got = true;
    return (int)(q - p);
bad_varint:
    fail(d, "the trace is corrupt: a number longer than 64 bits in access %llu (at body byte %llu)",
         (unsigned long long)d->count + 1, (unsigned long long)d->consumed);
    return -1;
}

size_t trace_decode(trace_decoder *d, const uint8_t **pp, const uint8_t *end, trace_access *out, size_t max)
{
    const uint8_t *p = *pp;
    size_t n = 0;
    if (d->failed)
        return 0;
    /* A record split between the last piece and this one. It is shorter than the carry,
     * so the bytes added here complete it unless this piece ends first too. */
    while (d->ncarry && p < end && n < max) {
        uint32_t old = d->ncarry;
        size_t take = TRACE_CARRY - old;
        if (take > (size_t)(end - p))
            take = (size_t)(end - p);
        memcpy(d->carry + old, p, take);
        bool got;
        int used = decode_one(d, d->carry, d->carry + old + take, &out[n], &got);
        if (used < 0) {
            *pp = p;
            return n;
        }
        if (used == 0) {
            d->ncarry = old + (uint32_t)take;     /* the piece ended inside the record again */
            p += take;
            break;
        }
        n += got;
        d->consumed += (uint64_t)used;
        p += (uint32_t)used - old;
        d->ncarry = 0;
    }
    while (!d->ncarry && p < end && n < max) {
        /* Access records with room for the longest one after them, decoded here with
         * the stream state in locals (the stores to out[] would otherwise make the
         * compiler reload it after every record). Anything else (the end record, a
         * record near the end of the piece, a damaged one) goes to decode_one. */
        uint64_t pg[2] = {d->page[0], d->page[1]};
        int64_t of[2] = {d->off[0], d->off[1]};
        size_t n0 = n;
        const uint8_t *q = p;
        if (!d->ended) {
            while (end - q >= (ptrdiff_t)MAX_RECORD && n < max) {
                uint8_t tag = q[0];
                if (one_byte(tag)) {
                    /* most records: same page, a small step in the offset */
                    uint32_t kind = tag & 3, s = kind == TRACE_FETCH;
                    int64_t off = of[s] + unzigzag(tag >> 3);
                    if ((uint64_t)off >= (1u << TRACE_PAGE_SHIFT))
                        break;
                    of[s] = off;
                    out[n].addr = pg[s] << TRACE_PAGE_SHIFT | (uint64_t)off;
                    out[n].kind = (uint8_t)kind;
                    n++;
                    q++;
                    continue;
                }
                uint32_t code = tag >> 3, kind = tag & 3, s = kind == TRACE_FETCH;
                if (code == CODE_CONTROL)
                    break;
                int64_t dpage, step;
                const uint8_t *r = long_record(q, end, tag, &dpage, &step);
                if (!r)
                    break;
                uint64_t page = pg[s] + (uint64_t)dpage;
                int64_t off = of[s] + step;
                if (off < 0 || off >= (1 << TRACE_PAGE_SHIFT))
                    break;
                pg[s] = page;
                of[s] = off;
                out[n].addr = page << TRACE_PAGE_SHIFT | (uint64_t)off;
                out[n].kind = (uint8_t)kind;
                n++;
                q = r;
            }
        }
        d->page[0] = pg[0];
        d->page[1] = pg[1];
        d->off[0] = (uint32_t)of[0];
        d->off[1] = (uint32_t)of[1];
        d->count += n - n0;
        d->consumed += (uint64_t)(q - p);
        p = q;
        if (p >= end || n >= max)
            break;
        bool got;
        int used = decode_one(d, p, end, &out[n], &got);
        if (used < 0)
            break;
        if (used == 0) {
            size_t rest = (size_t)(end - p);
            if (rest >= TRACE_CARRY) {
                fail(d, "the trace is corrupt at body byte %llu", (unsigned long long)d->consumed);
                break;
            }
            memcpy(d->carry, p, rest);
            d->ncarry = (uint32_t)rest;
            p = end;
            break;
        }
        n += got;
        d->consumed += (uint64_t)used;
        p += used;
    }
    *pp = p;
    return n;
}

/* trace_scan's kinds seen on both streams' pages in one bit set (bit 1 << kind): the
 * fetch stream's is only the fetch bit, the data stream's the others */
#define SEEN_FETCH (1u << TRACE_FETCH)
#define SEEN_DATA (~SEEN_FETCH & 15u)

size_t trace_scan(trace_decoder *d, const uint8_t **pp, const uint8_t *end, trace_page *out, size_t max)
{
    const uint8_t *p = *pp;
    size_t n = 0;
    /* room for the reports of one record: the page left, and at the end both streams' */
    while (!d->failed && !d->ended && (p < end || d->ncarry) && n + 3 <= max) {
        if (!d->ncarry && end - p >= (ptrdiff_t)MAX_RECORD) {
            /* whole records with room after them, the state in locals: the kinds seen on
             * both streams' pages in one bit set (a fetch is bit 2, and only the fetch
             * stream's; loads, stores and modifies bits 0, 1, 3), and the counts per kind
             * in one word, 16 bits a kind, at most 65,535 records between its additions
             * (registers, where arrays indexed by the kind would be stored and loaded back
             * at every record: in WebAssembly, locals cannot be indexed) */
            uint64_t pg[2] = {d->page[0], d->page[1]}, packed = 0, done = 0;
            int64_t of[2] = {d->off[0], d->off[1]};
            uint32_t seen = d->seen[0] | d->seen[1];
            const uint8_t *q = p, *last = end - MAX_RECORD;   /* a record may start at last */
            bool full = false;
            while (q <= last && !full) {
                const uint8_t *stop = last - q > 65534 ? q + 65534 : last;
                while (q <= stop) {
                    uint8_t tag = q[0];
                    if (one_byte(tag)) {
                        /* same page: only the kind seen and the offset's check */
                        uint32_t kind = tag & 3, s = kind == TRACE_FETCH;
                        int64_t off = of[s] + unzigzag(tag >> 3);
                        if ((uint64_t)off >= (1u << TRACE_PAGE_SHIFT))
                            goto out;
                        of[s] = off;
                        seen |= 1u << kind;
                        packed += 1ull << (16 * kind);
                        q++;
                        continue;
                    }
                    uint32_t code = tag >> 3, kind = tag & 3, s = kind == TRACE_FETCH;
                    if (code == CODE_CONTROL)
                        goto out;
                    int64_t dpage, step;
                    const uint8_t *r = long_record(q, end, tag, &dpage, &step);
                    if (!r)
                        goto out;
                    uint64_t page = pg[s] + (uint64_t)dpage;
                    int64_t off = of[s] + step;
                    if (off < 0 || off >= (1 << TRACE_PAGE_SHIFT))
                        goto out;
                    if (page != pg[s]) {
                        uint32_t mine = s ? SEEN_FETCH : SEEN_DATA;
                        if (seen & mine)
                            out[n++] = (trace_page){.page = pg[s], .kinds = (uint8_t)(seen & mine)};
                        seen &= ~mine;
                        pg[s] = page;
                        full = n + 3 > max;     /* no room for another record's reports */
                    }
                    seen |= 1u << kind;
                    of[s] = off;
                    packed += 1ull << (16 * kind);
                    q = r;
                    if (full)
                        break;
                }
            out:
                done += add_packed(d->kinds, packed);
                packed = 0;
                if (q <= stop && !full)
                    break;      /* a record the loop does not take */
            }
            memcpy(d->page, pg, sizeof pg);
            d->off[0] = (uint32_t)of[0];
            d->off[1] = (uint32_t)of[1];
            d->seen[0] = (uint8_t)(seen & SEEN_DATA);
            d->seen[1] = (uint8_t)(seen & SEEN_FETCH);
            d->count += done;
            d->consumed += (uint64_t)(q - p);
            p = q;
            if (n + 3 > max)
                break;
            if (done && end - p >= (ptrdiff_t)MAX_RECORD && q[0] >> 3 != CODE_CONTROL)
                continue;   /* stopped for another reason than a record the slow path must see */
        }
        /* one record the careful way (near the end of the piece, the end record, damage) */
        trace_access a;
        uint64_t before[2] = {d->page[0], d->page[1]};
        bool was_ended = d->ended;
        const uint8_t *q = p;
        size_t got = trace_decode(d, &q, end, &a, 1);
        if (d->failed)
            break;
        if (got) {
            unsigned s = a.kind == TRACE_FETCH;
            uint64_t page = a.addr >> TRACE_PAGE_SHIFT;
            if (page != before[s]) {
                if (d->seen[s])
                    out[n++] = (trace_page){.page = before[s], .kinds = d->seen[s]};
                d->seen[s] = 0;
            }
            d->seen[s] |= (uint8_t)(1u << a.kind);
            d->kinds[a.kind]++;
        }
        if (d->ended && !was_ended)
            for (int s = 0; s < 2; s++)
                if (d->seen[s])
                    out[n++] = (trace_page){.page = d->page[s], .kinds = d->seen[s]};
        if (!got && q == p && !d->ended)
            break;      /* the rest of the piece went into the carry */
        p = q;
        if (!got && !d->ended && p >= end)
            break;
    }
    if (!d->failed && d->ended && p < end) {
        trace_access a;
        trace_decode(d, &p, end, &a, 1);    /* data after the end record: its error */
    }
    *pp = p;
    return n;
}

/* How long the record at p would be, whatever it holds (at most MAX_RECORD bytes): where
 * the next one starts, if this one is a record at all. */
static size_t any_record_length(const uint8_t *p)
{
    uint32_t tag = p[0], code = tag >> 3;
    size_t len = 1;
    int varints = code == CODE_CONTROL ? 1 : (tag >> 2 & 1) + (code == CODE_ESCAPE);
    for (int v = 0; v < varints; v++) {
        int i = 0;
        while (i < 9 && p[len + (size_t)i] & 0x80)
            i++;
        len += (size_t)i + 1;
    }
    return len;
}

void trace_scan_ahead(trace_ahead *a, const uint8_t *piece, size_t n)
{
    memset(a, 0, offsetof(trace_ahead, pages));
    const uint8_t *q = piece, *end = piece + n;
    while (q < piece + TRACE_AHEAD_SYNC && end - q >= (ptrdiff_t)MAX_RECORD)
        q += any_record_length(q);
    a->start = a->stop = (size_t)(q - piece);
    /* each stream's page and offset counted from start; the pages left lately (by page and
     * stream) with the kinds seen there, to report a page again only with a new kind. As in
     * trace_scan: the kinds seen on both streams' pages in one bit set, and the counts per
     * kind packed in one word, 16 bits a kind, added up at most every 65,534 records (an
     * array indexed by the kind is a store and a load at every record: 1.17x the scan's
     * time when it was one) */
    uint64_t pg[2] = {0, 0}, kinds[4] = {0}, packed = 0, *recent = a->recent;
    int64_t of[2] = {0, 0}, lo[2] = {0, 0}, hi[2] = {0, 0};
    uint32_t seen = 0;
    uint8_t head[2] = {0, 0}, *recent_kinds = a->recent_kinds;
    memset(a->recent, 0, sizeof a->recent);
    memset(a->recent_kinds, 0, sizeof a->recent_kinds);
    bool moved[2] = {false, false};
    size_t np = 0, nm = 0;
    /* a record may start at last (with MAX_RECORD bytes from it); none where the piece is shorter */
    const uint8_t *last = end - q >= (ptrdiff_t)MAX_RECORD ? end - MAX_RECORD : NULL;
    while (last && q <= last) {
        const uint8_t *stop = last - q > 65534 ? q + 65534 : last;
        while (q <= stop) {
            uint8_t tag = q[0];
            uint32_t code = tag >> 3, kind = tag & 3, s = kind == TRACE_FETCH;
            if (one_byte(tag)) {
                /* a new least or most offset is rare once the stream has been around its page;
                 * lo <= 0 <= hi, so off is within them when off - lo, unsigned, is at most hi - lo
                 * (one comparison: under Node 20 the WebAssembly scan ahead took about 0.88x
                 * the time it took with two; docs/replay.md, "The progress drawn less often") */
                int64_t off = of[s] + unzigzag(code);
                if ((uint64_t)(off - lo[s]) > (uint64_t)(hi[s] - lo[s])) {
                    int64_t l = off < lo[s] ? off : lo[s], h = off > hi[s] ? off : hi[s];
                    if (h - l >= (1 << TRACE_PAGE_SHIFT))
                        goto done;      /* out of its page whatever it started at: the scan finds where */
                    lo[s] = l;
                    hi[s] = h;
                }
                of[s] = off;
                seen |= 1u << kind;
                packed += 1ull << (16 * kind);
                q++;
                continue;
            }
            if (code == CODE_CONTROL)
                goto done;
            int64_t dpage, step;
            const uint8_t *r = long_record(q, end, tag, &dpage, &step);
            if (!r)
                goto done;
            if (step < -(1 << TRACE_PAGE_SHIFT) || step >= 1 << TRACE_PAGE_SHIFT)
                goto done;      /* a page or more: no offset can take it and stay on its page */
            uint64_t page = pg[s] + (uint64_t)dpage;
            int64_t off = of[s] + step, l = off < lo[s] ? off : lo[s], h = off > hi[s] ? off : hi[s];
            if (h - l >= (1 << TRACE_PAGE_SHIFT))
                goto done;
            if (page != pg[s]) {
                uint32_t mine = s ? SEEN_FETCH : SEEN_DATA, here = seen & mine;
                if (!moved[s]) {
                    /* the page at start: its kinds before start are the scan's */
                    head[s] = (uint8_t)here;
                    a->pages[np++] = (trace_page){.page = s, .kinds = TRACE_AHEAD_HEAD};
                    moved[s] = true;
                } else {
                    uint32_t slot = (uint32_t)(pg[s] * 2 + s) & (TRACE_AHEAD_RECENT - 1);
                    if (recent[slot] != pg[s] * 2 + s + 1 || (recent_kinds[slot] | here) != recent_kinds[slot]) {
                        a->pages[np++] = (trace_page){.page = pg[s], .kinds = (uint8_t)(here | (s ? TRACE_AHEAD_FETCH : 0))};
                        if (recent[slot] != pg[s] * 2 + s + 1)
                            recent_kinds[slot] = 0;
                        recent[slot] = pg[s] * 2 + s + 1;
                        recent_kinds[slot] |= (uint8_t)here;
                    }
                }
                seen &= ~mine;
                pg[s] = page;
            }
            seen |= 1u << kind;
            of[s] = off;
            lo[s] = l;
            hi[s] = h;
            packed += 1ull << (16 * kind);
            q = r;
            if (np == TRACE_AHEAD_PAGES)
                goto done;      /* no room for another page */
        }
        add_packed(kinds, packed);
        packed = 0;
        if (nm < TRACE_AHEAD_MARKS)
            a->marks[nm++] = (struct trace_ahead_mark){.at = (size_t)(q - piece),
                                                       .count = kinds[0] + kinds[1] + kinds[2] + kinds[3],
                                                       .page = {pg[0], pg[1]}, .off = {(int32_t)of[0], (int32_t)of[1]}};
    }
done:
    add_packed(kinds, packed);
    a->stop = (size_t)(q - piece);
    a->npages = np;
    a->nmarks = nm;
    for (int k = 0; k < 4; k++) {
        a->kinds[k] = kinds[k];
        a->count += kinds[k];
    }
    for (int s = 0; s < 2; s++) {
        a->page[s] = pg[s];
        a->off[s] = (int32_t)of[s];
        a->off_min[s] = (int32_t)lo[s];
        a->off_max[s] = (int32_t)hi[s];
        uint8_t here = (uint8_t)(seen & (s ? SEEN_FETCH : SEEN_DATA));
        a->head[s] = moved[s] ? head[s] : here;
        a->seen[s] = moved[s] ? here : 0;
        a->moved[s] = moved[s];
    }
}

bool trace_ahead_join(const trace_decoder *d, const trace_ahead *a, trace_decoder *next, trace_page *out, size_t *nout)
{
    for (int s = 0; s < 2; s++)
        if ((int64_t)d->off[s] + a->off_min[s] < 0 || (int64_t)d->off[s] + a->off_max[s] >= (1 << TRACE_PAGE_SHIFT))
            return false;
    size_t n = 0;
    for (size_t i = 0; i < a->npages; i++) {
        trace_page e = a->pages[i];
        if (e.kinds & TRACE_AHEAD_HEAD) {
            uint8_t k = d->seen[e.page] | a->head[e.page];
            if (k)
                out[n++] = (trace_page){.page = d->page[e.page], .kinds = k};
        } else {
            int s = e.kinds & TRACE_AHEAD_FETCH ? 1 : 0;
            out[n++] = (trace_page){.page = d->page[s] + e.page, .kinds = (uint8_t)(e.kinds & 15)};
        }
    }
    *nout = n;
    *next = *d;
    for (int s = 0; s < 2; s++) {
        next->seen[s] = a->moved[s] ? a->seen[s] : (uint8_t)(d->seen[s] | a->head[s]);
        next->page[s] = d->page[s] + a->page[s];
        next->off[s] = (uint32_t)((int64_t)d->off[s] + a->off[s]);
    }
    next->count += a->count;
    for (int k = 0; k < 4; k++)
        next->kinds[k] += a->kinds[k];
    next->consumed += a->stop - a->start;
    return true;
}

bool trace_decoder_finish(trace_decoder *d)
{
    if (d->failed)
        return false;
    if (!d->ended) {
        fail(d, "the trace is truncated: its body stops after %llu accesses without the end record (was the copy or "
                "download cut short?)", (unsigned long long)d->count);
        return false;
    }
    return true;
}

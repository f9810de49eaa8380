/* A streaming gzip reader (RFC 1952 around RFC 1951 deflate) for the page's replay: the
 * WebAssembly module inflates a trace's body itself, from the compressed pieces of the
 * File, into a fixed buffer it hands to vmsim_replay_scan / vmsim_replay_feed. The
 * browser's DecompressionStream hands out a new buffer for every 64 KiB it inflates, and
 * a billion-access trace's 1.9 GB went through the worker faster than its garbage was
 * collected (measured: the renderer grew by 650 MiB); here nothing is allocated per piece.
 * The CLI inflates with zlib (cli/replay.c): the two are checked against each other by
 * the replay tests (the same report, the same refusals).
 *
 * The decoder stops only between whole units (a block header, a symbol with its length
 * and distance, a piece of a stored block) and starts one only with enough input for the
 * longest (GZ_MARGIN bytes) or at the end of the input, so it needs no state inside a
 * unit. The CRC-32 of the output and its length are checked against the trailer. */
#include "vmsim_replay.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __EMSCRIPTEN__
#include <emscripten.h>
#define EXPORT EMSCRIPTEN_KEEPALIVE
#else
#define EXPORT
#endif

#define GZ_WINDOW 32768u
#define GZ_OUT (256u << 10)             /* inflated bytes handed over at a time */
#define GZ_MARGIN 1024u                 /* more than the longest unit: a dynamic block header */
#define FAST 10                         /* bits decoded by one table lookup */

typedef struct huff {
    uint16_t count[16], symbol[320];
    uint16_t fast[1 << FAST];           /* symbol << 4 | length, 0 when longer than FAST */
} huff;

enum { S_HEADER, S_BLOCK, S_STORED, S_CODES, S_TRAILER, S_DONE };

typedef struct vmsim_gunzip {
    vmsim_replay *r;
    int pass;                           /* 1 scan, 2 feed */
    int state, last;
    uint64_t bb;                        /* bits not yet used, low first */
    int bc;
    uint32_t stored;                    /* bytes left in a stored block */
    huff lit, dist;
    uint8_t *in;                        /* input not yet consumed */
    size_t in_len, in_cap;
    uint8_t *buf;                       /* the window, then the output not yet handed over */
    size_t pos, flushed;
    uint64_t total;
    uint32_t crc;
    bool check_crc;
    vmsim_gunzip_sink sink;             /* set: the output goes here instead of the replay */
    void *sink_ctx;
    bool pushed;                        /* a piece came in: too late for a sink */
    int status;
    char err[256];
} vmsim_gunzip;

static uint32_t crc_table[8][256];

static void crc_init(void)
{
    if (crc_table[0][1])
        return;
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++)
        for (int k = 1; k < 8; k++)
            crc_table[k][n] = (crc_table[k - 1][n] >> 8) ^ crc_table[0][crc_table[k - 1][n] & 0xFF];
}

static uint32_t crc32_update(uint32_t crc, const uint8_t *p, size_t n)
{
    crc = ~crc;
    while (n >= 8) {
        uint32_t a = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        crc = crc_table[7][a & 0xFF] ^ crc_table[6][(a >> 8) & 0xFF] ^ crc_table[5][(a >> 16) & 0xFF] ^
              crc_table[4][a >> 24] ^ crc_table[3][p[4]] ^ crc_table[2][p[5]] ^ crc_table[1][p[6]] ^ crc_table[0][p[7]];
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = crc_table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

static int gz_fail(vmsim_gunzip *g, const char *what)
{
    if (!g->status) {
        snprintf(g->err, sizeof g->err, "the trace body is not valid gzip data (%s): the file is corrupt", what);
        g->status = VMSIM_REPLAY_BAD_TRACE;
    }
    return g->status;
}

/* r NULL: the output is only counted and checked (the fuzzer's use). */
EXPORT vmsim_gunzip *vmsim_gunzip_new(vmsim_replay *r, int pass)
{
    crc_init();
    vmsim_gunzip *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->buf = malloc(GZ_WINDOW + GZ_OUT);
    g->in = malloc(GZ_MARGIN);
    if (!g->buf || !g->in) {
        free(g->buf);
        free(g->in);
        free(g);
        return NULL;
    }
    g->in_cap = GZ_MARGIN;
    g->r = r;
    g->pass = pass;
    g->check_crc = pass == 1;           /* the second pass reads the same body: replay.c compares the passes */
    g->pos = g->flushed = GZ_WINDOW;
    return g;
}

int vmsim_gunzip_out_to(vmsim_gunzip *g, vmsim_gunzip_sink sink, void *ctx)
{
    if (!g)
        return VMSIM_REPLAY_NO_MEMORY;
    if (g->pushed) {
        snprintf(g->err, sizeof g->err, "vmsim_gunzip_out after the first piece");
        return g->status = VMSIM_REPLAY_BAD_TRACE;
    }
    g->sink = sink;
    g->sink_ctx = ctx;
    return 0;
}

#ifdef __EMSCRIPTEN__
/* The page's lead worker says where an inflated piece goes (js/replay.ts: the ring in a
 * SharedArrayBuffer to the worker that scans it). */
EM_JS(int, js_inflated, (void *ctx, const uint8_t *p, size_t n), {
    return Module['onInflated'] ? Module['onInflated'](p, n) : 1;
});

EXPORT int vmsim_gunzip_out(vmsim_gunzip *g)
{
    return vmsim_gunzip_out_to(g, js_inflated, NULL);
}
#endif

EXPORT void vmsim_gunzip_free(vmsim_gunzip *g)
{
    if (!g)
        return;
    free(g->in);
    free(g->buf);
    free(g);
}

EXPORT int vmsim_gunzip_status(const vmsim_gunzip *g)
{
    return g ? g->status : VMSIM_REPLAY_NO_MEMORY;
}

EXPORT const char *vmsim_gunzip_error(const vmsim_gunzip *g)
{
    return !g ? "out of memory" : g->err;
}

/* ---- bits ---- */

typedef struct bits {
    const uint8_t *p, *end;
    uint64_t bb;
    int bc;                             /* below 0: more bits were taken than the input had */
} bits;

static inline void refill(bits *b)
{
    while (b->bc <= 56 && b->p < b->end) {
        b->bb |= (uint64_t)*b->p++ << b->bc;
        b->bc += 8;
    }
}

/* n <= 32 bits; the caller made sure they are there (refill, and the margin) */
static inline uint32_t take(bits *b, unsigned n)
{
    uint32_t v = (uint32_t)(b->bb & ((1ull << n) - 1));
    b->bb >>= n;
    b->bc -= (int)n;
    return v;
}

/* ---- Huffman codes ---- */

static bool build(huff *h, const uint8_t *len, unsigned n)
{
    uint16_t offs[16];
    memset(h->count, 0, sizeof h->count);
    for (unsigned i = 0; i < n; i++)
        h->count[len[i]]++;
    h->count[0] = 0;
    int left = 1;
    for (int l = 1; l < 16; l++) {
        left <<= 1;
        left -= h->count[l];
        if (left < 0)
            return false;               /* over-subscribed */
    }
    offs[1] = 0;
    for (int l = 1; l < 15; l++)
        offs[l + 1] = (uint16_t)(offs[l] + h->count[l]);
    for (unsigned i = 0; i < n; i++)
        if (len[i])
            h->symbol[offs[len[i]]++] = (uint16_t)i;
    /* the fast table: every code of up to FAST bits, bit-reversed (deflate sends codes
     * from their top bit, the stream is read from the lowest) */
    memset(h->fast, 0, sizeof h->fast);
    unsigned code = 0, idx = 0;
    for (unsigned l = 1; l <= FAST; l++) {
        for (unsigned k = 0; k < h->count[l]; k++, code++, idx++) {
            unsigned rev = 0;
            for (unsigned b = 0; b < l; b++)
                rev |= ((code >> b) & 1) << (l - 1 - b);
            for (unsigned f = rev; f < (1u << FAST); f += 1u << l)
                h->fast[f] = (uint16_t)(h->symbol[idx] << 4 | l);
        }
        code <<= 1;
    }
    return true;
}

/* One symbol; -1 for a code that is not in the table. At least 15 bits are there. */
static inline int decode(bits *b, const huff *h)
{
    uint16_t f = h->fast[b->bb & ((1u << FAST) - 1)];
    if (f) {
        b->bb >>= f & 15;
        b->bc -= f & 15;
        return f >> 4;
    }
    int code = 0, first = 0, index = 0;
    for (int l = 1; l < 16; l++) {
        code |= (int)take(b, 1);
        int count = h->count[l];
        if (code - count < first)
            return h->symbol[index + (code - first)];
        index += count;
        first += count;
        first <<= 1;
        code <<= 1;
    }
    return -1;
}

static const uint16_t len_base[29] = {3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
                                      35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t len_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t dist_base[30] = {1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769,
                                       1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
static const uint8_t dist_extra[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

static void fixed_codes(vmsim_gunzip *g)
{
    uint8_t len[288];
    for (int i = 0; i < 144; i++) len[i] = 8;
    for (int i = 144; i < 256; i++) len[i] = 9;
    for (int i = 256; i < 280; i++) len[i] = 7;
    for (int i = 280; i < 288; i++) len[i] = 8;
    build(&g->lit, len, 288);
    for (int i = 0; i < 30; i++) len[i] = 5;
    build(&g->dist, len, 30);
}

static int dynamic_codes(vmsim_gunzip *g, bits *b)
{
    static const uint8_t order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
    uint8_t len[320] = {0};
    refill(b);
    unsigned nlen = take(b, 5) + 257, ndist = take(b, 5) + 1, ncode = take(b, 4) + 4;
    if (nlen > 286 || ndist > 30)
        return gz_fail(g, "bad code lengths");
    for (unsigned i = 0; i < ncode; i++) {
        refill(b);
        len[order[i]] = (uint8_t)take(b, 3);
    }
    if (!build(&g->lit, len, 19))
        return gz_fail(g, "bad code lengths");
    memset(len, 0, sizeof len);
    for (unsigned i = 0; i < nlen + ndist;) {
        refill(b);
        int sym = decode(b, &g->lit);
        if (sym < 0)
            return gz_fail(g, "bad code lengths");
        if (sym < 16) {
            len[i++] = (uint8_t)sym;
            continue;
        }
        unsigned rep, v = 0;
        if (sym == 16) {
            if (!i)
                return gz_fail(g, "bad code lengths");
            v = len[i - 1];
            rep = 3 + take(b, 2);
        } else if (sym == 17) {
            rep = 3 + take(b, 3);
        } else {
            rep = 11 + take(b, 7);
        }
        if (i + rep > nlen + ndist)
            return gz_fail(g, "bad code lengths");
        while (rep--)
            len[i++] = (uint8_t)v;
    }
    if (b->bc < 0)
        return gz_fail(g, "cut short in a block header");
    if (!len[256])
        return gz_fail(g, "no end-of-block code");
    if (!build(&g->lit, len, nlen) || !build(&g->dist, len + nlen, ndist))
        return gz_fail(g, "bad code lengths");
    return 0;
}

/* Hands the output collected so far to the replay, and keeps the last 32 KiB as the window. */
static int flush(vmsim_gunzip *g)
{
    size_t n = g->pos - g->flushed;
    if (n) {
        if (g->check_crc)
            g->crc = crc32_update(g->crc, g->buf + g->flushed, n);
        if (g->sink) {
            if (g->sink(g->sink_ctx, g->buf + g->flushed, n)) {
                snprintf(g->err, sizeof g->err, "the replay's other workers stopped taking the inflated trace");
                return g->status = VMSIM_REPLAY_NO_MEMORY;
            }
        } else if (g->r && (g->pass == 1 ? vmsim_replay_scan(g->r, g->buf + g->flushed, n)
                                         : vmsim_replay_feed(g->r, g->buf + g->flushed, n)))
            return g->status = vmsim_replay_status(g->r);
    }
    if (g->pos > GZ_WINDOW + GZ_OUT - 258) {
        memmove(g->buf, g->buf + g->pos - GZ_WINDOW, GZ_WINDOW);
        g->pos = GZ_WINDOW;
    }
    g->flushed = g->pos;
    return 0;
}

/* The gzip member's header: at the start of the input, whole (the input holds the first
 * piece of the file's body, at least 64 KiB, or all of it). */
static int header(vmsim_gunzip *g, bits *b, bool final)
{
    const uint8_t *p = b->p;
    size_t n = (size_t)(b->end - p);
    if (n < 10)
        return final ? gz_fail(g, "cut short in its header") : 1;
    if (p[0] != 0x1f || p[1] != 0x8b || p[2] != 8)
        return gz_fail(g, "incorrect header check");
    unsigned flg = p[3];
    if (flg & 0xE0)
        return gz_fail(g, "unknown header flags set");
    size_t i = 10;
    if (flg & 4) {
        if (n < i + 2)
            return final ? gz_fail(g, "cut short in its header") : 1;
        i += 2 + (p[i] | (size_t)p[i + 1] << 8);
    }
    for (unsigned f = 8; f <= 16; f <<= 1)
        if (flg & f) {
            while (i < n && p[i])
                i++;
            i++;
        }
    if (flg & 2)
        i += 2;
    if (i > n)
        return final || n > GZ_MARGIN * 64 ? gz_fail(g, "cut short in its header") : 1;
    b->p += i;
    g->state = S_BLOCK;
    return 0;
}

/* Inflates what the input allows; 1 when it needs more, 0 at the end of the member. */
static int run(vmsim_gunzip *g, bool final)
{
    bits b = {.p = g->in, .end = g->in + g->in_len, .bb = g->bb, .bc = g->bc};
    int rc = 1;
    for (;;) {
        size_t avail = (size_t)(b.end - b.p) + (size_t)(b.bc > 0 ? b.bc / 8 : 0);
        if (g->state == S_HEADER) {
            int h = header(g, &b, final);
            if (h) {
                rc = h == 1 ? 1 : g->status;
                break;
            }
            continue;
        }
        if (g->state == S_DONE) {
            rc = 0;
            break;
        }
        if (g->state == S_TRAILER) {
            /* to the byte boundary, then CRC-32 and ISIZE */
            take(&b, b.bc & 7);
            if (avail < 8) {
                if (final) {
                    rc = gz_fail(g, "cut short before its trailer");
                    break;
                }
                break;
            }
            uint8_t t[8];
            for (int k = 0; k < 8; k++) {
                refill(&b);
                t[k] = (uint8_t)take(&b, 8);
            }
            if (flush(g)) {
                rc = g->status;
                break;
            }
            uint32_t crc = t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 | (uint32_t)t[3] << 24;
            uint32_t size = t[4] | (uint32_t)t[5] << 8 | (uint32_t)t[6] << 16 | (uint32_t)t[7] << 24;
            if (g->check_crc && crc != g->crc) {
                rc = gz_fail(g, "incorrect data check");
                break;
            }
            if (size != (uint32_t)g->total) {
                rc = gz_fail(g, "incorrect length check");
                break;
            }
            if (b.p != b.end || b.bc) {
                rc = gz_fail(g, "data after the end of the gzip member");
                break;
            }
            g->state = S_DONE;
            continue;
        }
        if (avail < GZ_MARGIN && !final)
            break;
        if (g->state == S_BLOCK) {
            if (g->last) {
                g->state = S_TRAILER;
                continue;
            }
            refill(&b);
            if (b.bc < 3) {
                rc = gz_fail(g, "cut short in a block");
                break;
            }
            g->last = (int)take(&b, 1);
            unsigned type = take(&b, 2);
            if (type == 0) {
                take(&b, b.bc & 7);
                refill(&b);
                if (b.bc < 32) {
                    rc = gz_fail(g, "cut short in a block");
                    break;
                }
                uint32_t len = take(&b, 16), nlen = take(&b, 16);
                if (len != (~nlen & 0xFFFF)) {
                    rc = gz_fail(g, "invalid stored block lengths");
                    break;
                }
                g->stored = len;
                g->state = S_STORED;
            } else if (type == 1) {
                fixed_codes(g);
                g->state = S_CODES;
            } else if (type == 2) {
                if (dynamic_codes(g, &b)) {
                    rc = g->status;
                    break;
                }
                g->state = S_CODES;
            } else {
                rc = gz_fail(g, "invalid block type");
                break;
            }
            continue;
        }
        if (g->state == S_STORED) {
            /* whole bytes: the bit buffer holds only whole bytes here */
            while (g->stored && b.bc > 0) {
                if (g->pos > GZ_WINDOW + GZ_OUT - 258 && flush(g))
                    break;
                g->buf[g->pos++] = (uint8_t)take(&b, 8);
                g->total++;
                g->stored--;
            }
            if (g->status) {
                rc = g->status;
                break;
            }
            while (g->stored && b.p < b.end) {
                if (g->pos > GZ_WINDOW + GZ_OUT - 258 && flush(g))
                    break;
                size_t room = GZ_WINDOW + GZ_OUT - g->pos, n = (size_t)(b.end - b.p);
                if (n > room) n = room;
                if (n > g->stored) n = g->stored;
                memcpy(g->buf + g->pos, b.p, n);
                g->pos += n;
                b.p += n;
                g->total += n;
                g->stored -= (uint32_t)n;
            }
            if (g->status) {
                rc = g->status;
                break;
            }
            if (g->stored) {
                if (final) {
                    rc = gz_fail(g, "cut short in a stored block");
                    break;
                }
                break;
            }
            g->state = S_BLOCK;
            continue;
        }
        /* S_CODES: symbols while the input lasts with its margin */
        uint8_t *buf = g->buf;
        size_t pos = g->pos;
        bool block_end = false;
        while ((size_t)(b.end - b.p) >= GZ_MARGIN || (final && (b.p < b.end || b.bc > 0))) {
            if (pos > GZ_WINDOW + GZ_OUT - 258) {
                g->total += pos - g->pos;
                g->pos = pos;
                if (flush(g))
                    break;
                pos = g->pos;
            }
            refill(&b);
            int sym = decode(&b, &g->lit);
            if (b.bc < 0) {
                gz_fail(g, "cut short in a block");
                break;
            }
            if (sym < 256) {
                if (sym < 0) {
                    gz_fail(g, "invalid code");
                    break;
                }
                buf[pos++] = (uint8_t)sym;
                continue;
            }
            if (sym == 256) {
                block_end = true;
                break;
            }
            sym -= 257;
            if (sym >= 29) {
                gz_fail(g, "invalid literal/length code");
                break;
            }
            unsigned len = len_base[sym] + take(&b, len_extra[sym]);
            refill(&b);
            int ds = decode(&b, &g->dist);
            if (ds < 0 || ds >= 30) {
                gz_fail(g, "invalid distance code");
                break;
            }
            refill(&b);
            unsigned dist = dist_base[ds] + take(&b, dist_extra[ds]);
            if (b.bc < 0) {
                gz_fail(g, "cut short in a block");
                break;
            }
            if (dist > g->total + (pos - g->pos)) {     /* the window holds the last 32 KiB before pos */
                gz_fail(g, "invalid distance too far back");
                break;
            }
            const uint8_t *from = buf + pos - dist;
            uint8_t *to = buf + pos;
            if (dist >= len) {
                memcpy(to, from, len);
            } else {
                for (unsigned k = 0; k < len; k++)
                    to[k] = from[k];
            }
            pos += len;
        }
        g->total += pos - g->pos;
        g->pos = pos;
        if (g->status) {
            rc = g->status;
            break;
        }
        if (block_end) {
            g->state = S_BLOCK;
            continue;
        }
        if (final && b.p >= b.end && b.bc <= 0) {
            rc = gz_fail(g, "cut short in a block");
            break;
        }
        break;                          /* more input first */
    }
    /* keep what was not consumed */
    size_t left = (size_t)(b.end - b.p);
    memmove(g->in, b.p, left);
    g->in_len = left;
    g->bb = b.bb;
    g->bc = b.bc;
    if (!g->status && rc == 1 && flush(g))
        rc = g->status;
    return g->status ? g->status : rc;
}

/* The next piece of the compressed body (final: the last one). 0 while all is well, the
 * replay's status when it refused what it was given, VMSIM_REPLAY_BAD_TRACE with
 * vmsim_gunzip_error for damaged gzip data. */
EXPORT int vmsim_gunzip_push(vmsim_gunzip *g, const uint8_t *bytes, size_t n, int final)
{
    if (!g)
        return VMSIM_REPLAY_NO_MEMORY;
    g->pushed = true;
    if (g->status)
        return g->status;
    if (g->in_len + n > g->in_cap) {
        size_t cap = g->in_len + n + GZ_MARGIN;
        uint8_t *p = realloc(g->in, cap);
        if (!p)
            return g->status = VMSIM_REPLAY_NO_MEMORY;
        g->in = p;
        g->in_cap = cap;
    }
    if (n)
        memcpy(g->in + g->in_len, bytes, n);
    g->in_len += n;
    int rc = run(g, final != 0);
    if (rc == 1 && final)
        return gz_fail(g, "cut short");
    if (rc == 0 && g->state == S_DONE && !final && g->in_len)
        return gz_fail(g, "data after the end of the gzip member");
    return rc == 1 ? 0 : rc;
}

/* The inflated bytes so far. */
EXPORT double vmsim_gunzip_total(const vmsim_gunzip *g)
{
    return g ? (double)g->total : 0;
}

/* Whether the member ended (its trailer checked). */
EXPORT int vmsim_gunzip_done(const vmsim_gunzip *g)
{
    return g && g->state == S_DONE;
}

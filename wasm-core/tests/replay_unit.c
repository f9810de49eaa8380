/* Unit tests of the trace decoder and the replay API (docs/replay.md): a body cut into
 * pieces of every size from 1 to 40 bytes decodes to the same accesses and replays to
 * the same report as the whole body; every kind of damage is refused with its message.
 * The bodies are written by a small encoder here, from the format's description. The
 * caches (src/dcache.c, with its shortcuts) against a plain LRU written here from
 * model.md 5c, access by access, across the wrap of the L1s' tick. The page's shared decoder (one handle decoding, another
 * taking its batches) against the one-handle report. */
#include "vmsim_replay.h"
#include "dcache.h"
#include "trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures, checks;

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        checks++;                                                                                                      \
        if (!(cond)) {                                                                                                 \
            failures++;                                                                                                \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                                \
            printf(__VA_ARGS__);                                                                                       \
            printf("\n");                                                                                              \
        }                                                                                                              \
    } while (0)

typedef struct buf {
    uint8_t b[1 << 20];
    size_t n;
} buf;

static void put(buf *o, uint8_t v)
{
    o->b[o->n++] = v;
}

static void varint(buf *o, uint64_t v)
{
    while (v >= 0x80) {
        put(o, (uint8_t)(v | 0x80));
        v >>= 7;
    }
    put(o, (uint8_t)v);
}

static uint64_t zz(int64_t v)
{
    return v >= 0 ? (uint64_t)v << 1 : ((uint64_t)(-v) << 1) - 1;
}

/* The body of these accesses, with the end record. */
static void encode(buf *o, const trace_access *a, size_t n)
{
    uint64_t page[2] = {0, 0};
    int64_t off[2] = {0, 0};
    o->n = 0;
    for (size_t i = 0; i < n; i++) {
        int s = a[i].kind == TRACE_FETCH;
        uint64_t p = a[i].addr >> 12;
        int64_t f = (int64_t)(a[i].addr & 0xfff);
        int64_t dp = (int64_t)(p - page[s]);
        uint64_t od = zz(f - off[s]);
        put(o, (uint8_t)(a[i].kind | (dp ? 4 : 0) | ((od < 30 ? od : 30) << 3)));
        if (dp)
            varint(o, zz(dp));
        if (od >= 30)
            varint(o, od);
        page[s] = p;
        off[s] = f;
    }
    put(o, 31 << 3);
    varint(o, n);
}

/* A file: prefix, header, then (for the replay API) nothing: the body is fed apart. */
static size_t file_prefix(uint8_t *out, const trace_access *a, size_t n, uint16_t version, const char *extra)
{
    uint64_t counts[4] = {0};
    uint64_t pages[4096];
    size_t np = 0;
    for (size_t i = 0; i < n; i++) {
        counts[a[i].kind]++;
        size_t k = 0;
        while (k < np && pages[k] != a[i].addr >> 12)
            k++;
        if (k == np)
            pages[np++] = a[i].addr >> 12;
    }
    char h[2048];
    int hl = snprintf(h, sizeof h,
                      "{\"format\":\"vmemlab-trace\",\"version\":1,\"program\":\"unit\",\"args\":[\"a b\",\"c\"],"
                      "\"page_size\":4096,\"accesses\":%zu,\"pages\":%zu,\"counts\":{\"load\":%llu,\"store\":%llu,"
                      "\"fetch\":%llu,\"modify\":%llu},\"partial\":false,\"body\":{\"compression\":\"gzip\",\"bytes\":0}%s}",
                      n, np, (unsigned long long)counts[0], (unsigned long long)counts[1], (unsigned long long)counts[2],
                      (unsigned long long)counts[3], extra);
    memcpy(out, TRACE_MAGIC, 8);
    out[8] = (uint8_t)version;
    out[9] = (uint8_t)(version >> 8);
    out[10] = out[11] = 0;
    out[12] = (uint8_t)hl;
    out[13] = (uint8_t)(hl >> 8);
    out[14] = out[15] = 0;
    memcpy(out + 16, h, (size_t)hl);
    return 16 + (size_t)hl;
}

static size_t sample(trace_access *a, size_t max)
{
    uint64_t s = 88172645463325252ull;
    size_t n = 0;
    for (; n < max; n++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        uint8_t kind = (uint8_t)(s % 4);
        uint64_t base = kind == TRACE_FETCH ? 0x400000 : (s >> 8) % 3 == 0 ? 0x7ffd12340000ull : 0x555555560000ull;
        a[n].kind = kind;
        a[n].addr = base + ((s >> 20) % 24) * 4096 + (s >> 40) % 4096;
    }
    return n;
}

static void test_pieces(void)
{
    static trace_access in[3000], out[3000];
    static buf body;
    size_t n = sample(in, 3000);
    encode(&body, in, n);
    for (size_t piece = 1; piece <= 40; piece++) {
        trace_decoder d;
        trace_decoder_init(&d);
        size_t got = 0;
        for (size_t at = 0; at < body.n; at += piece) {
            const uint8_t *p = body.b + at, *end = body.b + (at + piece < body.n ? at + piece : body.n);
            while (p < end) {
                size_t k = trace_decode(&d, &p, end, out + got, 7);   /* a small out: the batch-full path too */
                got += k;
                if (d.failed || (!k && p < end && !d.ncarry))
                    break;
            }
        }
        CHECK(!d.failed, "pieces of %zu: %s", piece, d.err);
        CHECK(trace_decoder_finish(&d), "pieces of %zu: %s", piece, d.err);
        CHECK(got == n, "pieces of %zu: %zu accesses decoded of %zu", piece, got, n);
        bool same = got == n;
        for (size_t i = 0; same && i < n; i++)
            same = out[i].addr == in[i].addr && out[i].kind == in[i].kind;
        CHECK(same, "pieces of %zu: the accesses differ", piece);
    }
}

static char *replay_in_pieces(const uint8_t *prefix, size_t plen, const buf *body, size_t piece, const char *opts,
                              char *err, size_t errlen)
{
    vmsim_replay *r = vmsim_replay_open(prefix, plen, 0, opts, strlen(opts));
    char *text = NULL;
    for (int pass = 1; pass <= 2 && !vmsim_replay_status(r); pass++) {
        for (size_t at = 0; at < body->n; at += piece) {
            size_t k = at + piece < body->n ? piece : body->n - at;
            if ((pass == 1 ? vmsim_replay_scan : vmsim_replay_feed)(r, body->b + at, k))
                break;
        }
        if (pass == 1 && !vmsim_replay_status(r))
            vmsim_replay_scan_end(r);
    }
    if (!vmsim_replay_status(r))
        vmsim_replay_finish(r, &text);
    snprintf(err, errlen, "%s", vmsim_replay_error(r));
    vmsim_replay_close(r);
    return text;
}

static void test_replay_pieces(void)
{
    static trace_access in[3000];
    static buf body;
    static uint8_t prefix[4096];
    size_t n = sample(in, 3000);
    encode(&body, in, n);
    size_t plen = file_prefix(prefix, in, n, 1, "");
    char err[512];
    const char *opts = "{\"format\":\"json\",\"start\":\"warm\"}";
    char *whole = replay_in_pieces(prefix, plen, &body, body.n, opts, err, sizeof err);
    CHECK(whole != NULL, "whole body: %s", err);
    CHECK(whole && strstr(whole, "\"args\":[\"a b\",\"c\"]"), "the args come back as JSON");
    for (size_t piece = 1; whole && piece <= 33; piece += 4) {
        char *t = replay_in_pieces(prefix, plen, &body, piece, opts, err, sizeof err);
        CHECK(t && !strcmp(t, whole), "pieces of %zu: another report (%s)", piece, t ? "differs" : err);
        free(t);
    }
    free(whole);
}

/* Pass 1 on threads: every piece scanned ahead first (as if on other threads, before
 * the pieces before it), then joined in order; pass 2 as usual. */
static char *replay_ahead_in_pieces(const uint8_t *prefix, size_t plen, const buf *body, size_t piece, const char *opts,
                                    char *err, size_t errlen)
{
    vmsim_replay *r = vmsim_replay_open(prefix, plen, 0, opts, strlen(opts));
    size_t pieces = (body->n + piece - 1) / piece;
    vmsim_replay_ahead **a = calloc(pieces ? pieces : 1, sizeof *a);
    for (size_t i = 0; i < pieces; i++) {
        a[i] = vmsim_replay_ahead_new();
        size_t at = i * piece;
        vmsim_replay_scan_ahead(a[i], body->b + at, at + piece < body->n ? piece : body->n - at);
    }
    for (size_t i = 0; i < pieces && !vmsim_replay_status(r); i++) {
        size_t at = i * piece;
        vmsim_replay_scan_joined(r, body->b + at, at + piece < body->n ? piece : body->n - at, a[i]);
    }
    if (!vmsim_replay_status(r))
        vmsim_replay_scan_end(r);
    for (size_t at = 0; at < body->n && !vmsim_replay_status(r); at += piece)
        vmsim_replay_feed(r, body->b + at, at + piece < body->n ? piece : body->n - at);
    char *text = NULL;
    if (!vmsim_replay_status(r))
        vmsim_replay_finish(r, &text);
    snprintf(err, errlen, "%s", vmsim_replay_error(r));
    vmsim_replay_close(r);
    for (size_t i = 0; i < pieces; i++)
        vmsim_replay_ahead_free(a[i]);
    free(a);
    return text;
}

/* The scan's state after each piece, and what it reported, with the pieces scanned ahead
 * and joined as with the scan alone: each page's kinds ORed into a small table. */
static bool same_scan_ahead(const buf *body, size_t piece, char *why, size_t whylen)
{
    static trace_page out[4096];
    static uint8_t kinds[2][1 << 12];
    static trace_ahead a;
    trace_decoder d[2];
    memset(kinds, 0, sizeof kinds);
    for (int way = 0; way < 2; way++) {
        trace_decoder_init(&d[way]);
        for (size_t at = 0; at < body->n && !d[way].failed; at += piece) {
            size_t n = at + piece < body->n ? piece : body->n - at;
            const uint8_t *p = body->b + at, *end = p + n, *stop = end;
            if (way) {
                trace_scan_ahead(&a, p, n);
                stop = p + a.start;
            }
            for (int part = 0; part < 2; part++) {
                while ((p < stop || d[way].ncarry) && !d[way].failed) {
                    const uint8_t *before = p;
                    size_t got = trace_scan(&d[way], &p, stop, out, 4096);
                    for (size_t i = 0; i < got; i++)
                        kinds[way][out[i].page & 4095] |= out[i].kinds;
                    if (p == before && !got)
                        break;
                }
                if (part || !way)
                    break;
                trace_decoder next;
                size_t got = 0;
                if (!d[way].ncarry && !d[way].ended && !d[way].failed && trace_ahead_join(&d[way], &a, &next, out, &got)) {
                    d[way] = next;
                    for (size_t i = 0; i < got; i++)
                        kinds[way][out[i].page & 4095] |= out[i].kinds;
                    p = body->b + at + a.stop;
                }
                stop = end;
            }
        }
    }
    snprintf(why, whylen, "count %llu/%llu seen %x,%x/%x,%x off %u/%u", (unsigned long long)d[0].count,
             (unsigned long long)d[1].count, d[0].seen[0], d[0].seen[1], d[1].seen[0], d[1].seen[1], d[0].off[0], d[1].off[0]);
    return d[0].failed == d[1].failed && (d[0].failed ? !strcmp(d[0].err, d[1].err)
           : d[0].count == d[1].count && !memcmp(d[0].kinds, d[1].kinds, sizeof d[0].kinds) &&
             !memcmp(d[0].page, d[1].page, sizeof d[0].page) && !memcmp(d[0].off, d[1].off, sizeof d[0].off) &&
             !memcmp(d[0].seen, d[1].seen, sizeof d[0].seen) && d[0].ended == d[1].ended &&
             !memcmp(kinds[0], kinds[1], sizeof kinds[0]));
}

/* The same report, or the same refusal, whether pass 1's pieces were scanned ahead and
 * joined or scanned in order: on bodies of short and long records, of few pages and of
 * more pages in a piece than a scan ahead holds, whole and damaged at random bytes. */
static void test_scan_ahead(void)
{
    static trace_access in[100000];
    static buf body, bad;
    static uint8_t prefix[4096];
    uint64_t s = 11;
    for (int shape = 0; shape < 3; shape++) {
        size_t n = shape == 0 ? sample(in, 3000) : 100000;
        for (size_t i = 0; shape && i < n; i++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            if (shape == 1) {   /* a page change at nearly every access: the pages of a piece run over */
                in[i].kind = (uint8_t)(i % 4);
                in[i].addr = 0x7f0000000000ull + (s % 3000) * 4096 + (s >> 32) % 4096;
            } else {            /* a program's: fetches stepping through code, loads and stores near them */
                in[i].kind = s % 3 ? TRACE_FETCH : (uint8_t)(s >> 8) % 4 == TRACE_FETCH ? TRACE_LOAD : (uint8_t)(s >> 8) % 4;
                uint64_t base = in[i].kind == TRACE_FETCH ? 0x400000 + (i / 700 % 9) * 4096 : 0x7ffd00000000ull + (s >> 20) % 5 * 4096;
                in[i].addr = base + (in[i].kind == TRACE_FETCH ? i * 4 % 4096 : (s >> 40) % 64 * 8 + (i / 50) % 8 * 512);
            }
        }
        encode(&body, in, n);
        size_t plen = file_prefix(prefix, in, n, 1, "");
        const char *opts = "{\"format\":\"json\",\"start\":\"warm\"}";     /* the warm-up follows each page's kinds */
        for (int damage = 0; damage <= 12; damage++) {
            bad = body;
            if (damage) {
                s ^= s << 13, s ^= s >> 7, s ^= s << 17;
                size_t at = (s >> 8) % bad.n;
                bad.b[at] = damage % 3 == 0 ? 0xf9 : damage % 3 == 1 ? (uint8_t)(s >> 40) : (uint8_t)(bad.b[at] | 0xe8);
                if (damage == 12)
                    bad.n = at + 1;
            }
            for (size_t piece = 97; piece <= (1u << 17); piece *= 6) {
                char why[200];
                CHECK(same_scan_ahead(&bad, piece, why, sizeof why), "shape %d damage %d pieces of %zu: the scan's state "
                      "or pages differ when scanned ahead (%s)", shape, damage, piece, why);
                char e1[512], e2[512];
                char *t1 = replay_in_pieces(prefix, plen, &bad, piece, opts, e1, sizeof e1);
                char *t2 = replay_ahead_in_pieces(prefix, plen, &bad, piece, opts, e2, sizeof e2);
                CHECK(!damage ? t1 != NULL : 1, "shape %d whole: %s", shape, e1);
                /* the same refusal where the body has one fault; which of two is named may
                 * differ, as it does between pieces of other sizes */
                CHECK((t1 && t2 && !strcmp(t1, t2)) || (!t1 && !t2 && (!strcmp(e1, e2) || damage == 12)),
                      "shape %d damage %d pieces of %zu: scanned ahead \"%s\", in order \"%s\"", shape, damage, piece,
                      t2 ? "a report" : e2, t1 ? "a report" : e1);
                free(t1);
                free(t2);
            }
        }
    }
}

/* The page's shared decoder: a handle that decodes (its own part) hands every batch, copied
 * byte for byte as between two modules' memories, to one that takes them (the other modes);
 * the report, with the taker's counts merged in, is the one-handle report's. */
static uint8_t *kept;      /* the first batch of pass 2 that give handed on, kept */
static size_t kept_bytes;
static uint8_t *kept_segs;  /* the first that carried its segments, kept */
static size_t kept_segs_bytes, batches_with_segs;

static int give(void *ctx, const void *b, size_t bytes)
{
    vmsim_replay *taker = ctx;
    if (!kept && (vmsim_replay_batch_info(b) >> 1 & 3) == 2 && (kept = malloc(bytes))) {
        memcpy(kept, b, bytes);
        kept_bytes = bytes;
    }
    if (vmsim_replay_batch_info(b) & 8) {
        batches_with_segs++;
        if (!kept_segs && (kept_segs = malloc(bytes))) {
            memcpy(kept_segs, b, bytes);
            kept_segs_bytes = bytes;
        }
    }
    void *copy = vmsim_replay_batch_alloc();
    CHECK(bytes <= vmsim_replay_batch_bytes(), "a batch of %zu bytes, over batch_bytes' %zu", bytes,
          vmsim_replay_batch_bytes());
    memcpy(copy, b, bytes);
    int info = vmsim_replay_batch_info(copy) & 7;
    int st = vmsim_replay_take(taker, copy, bytes);
    if (!st && info == (1 << 1 | 1))        /* pass 1's last batch */
        st = vmsim_replay_scan_end(taker);
    vmsim_replay_batch_free(copy);
    return st;
}

static size_t sample_local(trace_access *a, size_t max);

/* vmsim_replay_share_group's question: *ctx 0 never, 1 every batch, 2 every other */
static int asked;
static int group_when(void *ctx)
{
    int how = *(const int *)ctx;
    return how == 1 || (how == 2 && asked++ % 2);
}

/* Two handles on one body, one replaying lead_part (and writing the report), the other
 * other_part. Not swapped: the lead decodes both passes and shares every batch. Swapped
 * (the page's way, js/replay.ts replayLead): the other scans pass 1 and hands its pages to
 * the lead, which then shares pass 2 from its start. group: which batches of pass 2 go out
 * with their segments (group_when). */
static char *replay_shared(const uint8_t *prefix, size_t plen, const buf *body, size_t piece, const char *lead_part,
                           const char *other_part, bool swapped, int group, char *err, size_t errlen)
{
    char o1[200], o2[200];
    snprintf(o1, sizeof o1, "{\"format\":\"json\",\"start\":\"warm\",\"part\":%s}", lead_part);
    snprintf(o2, sizeof o2, "{\"format\":\"json\",\"start\":\"warm\",\"part\":%s}", other_part);
    vmsim_replay *lead = vmsim_replay_open(prefix, plen, 0, o1, strlen(o1));
    vmsim_replay *other = vmsim_replay_open(prefix, plen, 0, o2, strlen(o2));
    char *text = NULL, *counts = NULL;
    /* pass 1 by the lead (sharing it) or by the other (handing its pages to the lead) */
    vmsim_replay *scanner = swapped ? other : lead;
    vmsim_replay_share_to(scanner, give, swapped ? lead : other);
    vmsim_replay_share_group(lead, group ? group_when : NULL, &group);
    for (size_t at = 0; at < body->n && !vmsim_replay_status(scanner); at += piece)
        vmsim_replay_scan(scanner, body->b + at, at + piece < body->n ? piece : body->n - at);
    if (!vmsim_replay_status(scanner) && !vmsim_replay_share_end(scanner))
        vmsim_replay_scan_end(scanner);
    /* pass 2 by the lead, shared (from its start when it did not share pass 1) */
    if (!vmsim_replay_status(lead) && (!swapped || !vmsim_replay_share_to(lead, give, other))) {
        for (size_t at = 0; at < body->n && !vmsim_replay_status(lead); at += piece)
            vmsim_replay_feed(lead, body->b + at, at + piece < body->n ? piece : body->n - at);
        if (!vmsim_replay_status(lead))
            vmsim_replay_share_end(lead);
    }
    if (!vmsim_replay_status(other) && !vmsim_replay_counts(other, &counts) && !vmsim_replay_status(lead) &&
        !vmsim_replay_merge(lead, counts, strlen(counts)))
        vmsim_replay_finish(lead, &text);
    snprintf(err, errlen, "%s / %s", vmsim_replay_error(lead), vmsim_replay_error(other));
    vmsim_replay_free_text(counts);
    vmsim_replay_close(lead);
    vmsim_replay_close(other);
    return text;
}

static void test_shared_decoder(void)
{
    static trace_access in[100000];
    static buf body;
    static uint8_t prefix[4096];
    /* more accesses than a batch holds, and a page change at nearly every one: both passes
     * span several batches */
    uint64_t s = 7;
    for (size_t i = 0; i < 100000; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        in[i].kind = (uint8_t)(i % 4);
        in[i].addr = 0x7f0000000000ull + (s % 3000) * 4096 + (s >> 32) % 4096;
    }
    body.n = 0;
    encode(&body, in, 100000);
    size_t plen = file_prefix(prefix, in, 100000, 1, "");
    char err[1100];
    const char *opts = "{\"format\":\"json\",\"start\":\"warm\"}";
    char *whole = replay_in_pieces(prefix, plen, &body, body.n, opts, err, sizeof err);
    CHECK(whole != NULL, "whole body: %s", err);
    const char *parts[][2] = {{"[\"native\",\"ept\"]", "[\"npt\",\"shadow\",\"flat\"]"},
                              {"[]", "[\"native\",\"ept\",\"npt\",\"shadow\",\"flat\"]"}};
    for (int i = 0; whole && i < 2; i++)
        for (size_t piece = 1000; piece <= 100000; piece *= 10) {
            for (int swapped = 0; swapped < 2; swapped++) {
                char *t = replay_shared(prefix, plen, &body, piece, parts[i][0], parts[i][1], swapped, 1, err, sizeof err);
                CHECK(t && !strcmp(t, whole), "shared decoder (lead part %s%s), pieces of %zu: %s", parts[i][0],
                      swapped ? ", pass 1 scanned by the other" : "", piece, t ? "another report" : err);
                free(t);
            }
        }
    free(whole);
    free(kept_segs);        /* (of the last, short batch: a full one has a run per access and no room) */
    kept_segs = NULL;
    /* a program's accesses: the batches asked for go out with their segments, which the
     * taker runs instead of its own (cold and warm, every batch, every other, none) */
    static trace_access prog[140000];
    static buf pbody;
    static uint8_t pprefix[4096];
    const char *popts[] = {"{\"format\":\"json\",\"start\":\"warm\"}"};
    size_t pplen = 0;
    for (int kind = 0; kind < 2; kind++) {
        /* sample's accesses (test_batches_grouped's random ones: a segment's count off changes
         * the report), then a program's */
        size_t pn = kind ? sample_local(prog, 140000) : sample(prog, 100000);
        encode(&pbody, prog, pn);
        pplen = file_prefix(pprefix, prog, pn, 1, "");
        char *pwhole = replay_in_pieces(pprefix, pplen, &pbody, pbody.n, popts[0], err, sizeof err);
        CHECK(pwhole != NULL, "%s accesses: %s", kind ? "a program's" : "random", err);
        for (int i = 0; pwhole && i < 2; i++)
            for (int group = 0; group < 3; group++) {
                batches_with_segs = 0;
                asked = 0;
                char *t = replay_shared(pprefix, pplen, &pbody, 65536, parts[i][0], parts[i][1], true, group, err,
                                        sizeof err);
                CHECK(t && !strcmp(t, pwhole), "%s accesses shared (lead part %s), segments %s: %s",
                      kind ? "a program's" : "random", parts[i][0],
                      group == 0 ? "never" : group == 1 ? "always" : "every other", t ? "another report" : err);
                /* random: only the last, short batch has room for them (a full one has about a
                 * run per access) */
                CHECK(group == 0 ? batches_with_segs == 0 : batches_with_segs >= (!kind ? 1u : group == 1 ? 4u : 2u),
                      "%s accesses: %zu batches went out with their segments (asked: %s)", kind ? "a program's" : "random",
                      batches_with_segs, group == 0 ? "never" : group == 1 ? "always" : "every other");
                free(t);
            }
        free(pwhole);
    }
    /* sharing begins at the start of a pass, never within one */
    vmsim_replay *r = vmsim_replay_open(prefix, plen, 0, opts, strlen(opts));
    vmsim_replay_scan(r, body.b, 1000);
    CHECK(vmsim_replay_share_to(r, give, NULL) && strstr(vmsim_replay_error(r), "after a pass began"),
          "vmsim_replay_share within pass 1: %s", vmsim_replay_error(r));
    vmsim_replay_close(r);
    /* a batch handed out is its runs and offsets, not its 32,768 decoded accesses (16 bytes
     * each, besides a run of 16 bytes per access on this trace); taken whole in pass 2,
     * refused cut short or in pass 1 */
    CHECK(kept && kept_bytes <= vmsim_replay_batch_bytes() && kept_bytes < 32768 * (16 + 16),
          "a batch of pass 2 handed out: %zu bytes", kept_bytes);
    for (int how = 0; kept && how < 3; how++) {
        r = vmsim_replay_open(prefix, plen, 0, opts, strlen(opts));
        if (how < 2 && !vmsim_replay_scan(r, body.b, body.n))
            vmsim_replay_scan_end(r);
        void *copy = vmsim_replay_batch_alloc();
        memcpy(copy, kept, kept_bytes);
        int st = vmsim_replay_take(r, copy, kept_bytes - (how == 1));
        if (how == 0)
            CHECK(st == 0, "the first batch of pass 2 taken: %s", vmsim_replay_error(r));
        else
            CHECK(st == VMSIM_REPLAY_BAD_TRACE && strstr(vmsim_replay_error(r), "vmsim_replay_take: a batch of pass 2"),
                  "a batch %s: got \"%s\"", how == 1 ? "a byte short" : "of pass 2 in pass 1", vmsim_replay_error(r));
        vmsim_replay_batch_free(copy);
        vmsim_replay_close(r);
    }
    /* a batch whose segments do not fit its runs is refused */
    for (int how = 0; kept_segs && how < 2; how++) {
        r = vmsim_replay_open(pprefix, pplen, 0, popts[0], strlen(popts[0]));
        if (!vmsim_replay_scan(r, pbody.b, pbody.n))
            vmsim_replay_scan_end(r);
        void *copy = vmsim_replay_batch_alloc();
        memcpy(copy, kept_segs, kept_segs_bytes);
        if (how == 1) {
            /* the first segment's end (run_seg.x1, the first word after the rest) far past the
             * runs: after the head (96 bytes), the runs (16 bytes each) and what follows them
             * (as long whatever the runs) */
            uint32_t nruns;
            memcpy(&nruns, (uint8_t *)copy + 12, 4);
            size_t at = 96 + (size_t)nruns * 16 + (vmsim_replay_batch_bytes() - 96 - 32768 * 16);
            uint32_t x1 = 1u << 30;
            memcpy((uint8_t *)copy + at, &x1, 4);
        }
        int st = vmsim_replay_take(r, copy, kept_segs_bytes);
        if (how == 0)
            CHECK(st == 0, "a batch with its segments taken: %s", vmsim_replay_error(r));
        else
            CHECK(st == VMSIM_REPLAY_BAD_TRACE && strstr(vmsim_replay_error(r), "does not fit its runs"),
                  "a batch whose segment runs past its runs: got \"%s\"", vmsim_replay_error(r));
        vmsim_replay_batch_free(copy);
        vmsim_replay_close(r);
    }
    CHECK(kept_segs != NULL, "no batch went out with its segments");
    free(kept);
    kept = NULL;
    free(kept_segs);
    kept_segs = NULL;
}

/* The file as given, with the body (the replay API's errors). */
static void expect_refused(const uint8_t *file, size_t n, const buf *body, const char *needle, const char *what)
{
    vmsim_replay *r = vmsim_replay_open(file, n, 0, "{}", 2);
    if (!vmsim_replay_status(r) && body) {
        if (!vmsim_replay_scan(r, body->b, body->n))
            vmsim_replay_scan_end(r);
    }
    const char *e = vmsim_replay_error(r);
    CHECK(vmsim_replay_status(r) == VMSIM_REPLAY_BAD_TRACE && strstr(e, needle), "%s: got \"%s\"", what, e);
    vmsim_replay_close(r);
}

static void test_refusals(void)
{
    static trace_access in[100];
    static buf body, bad;
    static uint8_t file[4096];
    size_t n = sample(in, 100);
    encode(&body, in, n);
    size_t plen = file_prefix(file, in, n, 1, "");
    expect_refused(file, 10, NULL, "shorter than the 16-byte prefix", "short");
    expect_refused(file, 40, NULL, "pass at least", "cut header");
    static uint8_t v2[4096];
    memcpy(v2, file, plen);
    v2[8] = 2;
    expect_refused(v2, plen, NULL, "format version 2", "version 2");
    memcpy(v2, file, plen);
    v2[0] = 0x1f, v2[1] = 0x8b;
    expect_refused(v2, plen, NULL, "plain gzip file", "gzip");
    memcpy(v2, file, plen);
    v2[12] = 0, v2[13] = 0;
    expect_refused(v2, plen, NULL, "prefix is corrupt", "zero header length");
    /* a body that stops early, one that runs on, one that miscounts */
    bad = body;
    bad.n -= 2;
    expect_refused(file, plen, &bad, "without the end record", "no end record");
    bad = body;
    put(&bad, 0);
    expect_refused(file, plen, &bad, "data follows its end record", "after the end");
    bad = body;
    bad.b[bad.n - 1] ^= 1;
    expect_refused(file, plen, &bad, "end record counts", "end count");
    /* the header's counts must match */
    size_t plen2 = file_prefix(file, in, n - 1, 1, "");
    expect_refused(file, plen2, &body, "more than the", "more accesses than announced");
    /* options */
    vmsim_replay *r = vmsim_replay_open(file, plen, 0, "{\"modes\":[\"ept\",\"x\"]}", 21);
    CHECK(vmsim_replay_status(r) == 2 && strstr(vmsim_replay_error(r), "\"x\" is not a mode"), "bad mode: %s",
          vmsim_replay_error(r));
    vmsim_replay_close(r);
    r = vmsim_replay_open(file, plen, 0, "{\"speed\":1}", 11);
    CHECK(vmsim_replay_status(r) == 2 && strstr(vmsim_replay_error(r), "unknown replay option \"speed\""), "%s",
          vmsim_replay_error(r));
    vmsim_replay_close(r);
    /* every option known but the last, and the machine's keys likewise */
    static const char *const opts[] = {
        "{\"format\":\"json\",\"l1\":\"shared\",\"speedy\":1}",
        "{\"machine\":{\"label\":\"m\",\"in_vm\":true,\"cycles\":1}}",
        "{\"machine\":{\"label\":\"m\",\"cycles_per_exit\":1000,\"ref_from\":\"probe\"}}",
    };
    static const char *const want[] = {"unknown replay option \"speedy\"", "unknown key machine.cycles", NULL};
    for (int i = 0; i < 3; i++) {
        r = vmsim_replay_open(file, plen, 0, opts[i], strlen(opts[i]));
        if (want[i])
            CHECK(vmsim_replay_status(r) == 2 && strstr(vmsim_replay_error(r), want[i]), "%s: %s", opts[i],
                  vmsim_replay_error(r));
        else
            CHECK(vmsim_replay_status(r) == 0, "%s: %s", opts[i], vmsim_replay_error(r));
        vmsim_replay_close(r);
    }
}

/* ---- the caches against a plain LRU: each set a list of lines, most recent last ---- */

typedef struct plain_level {
    uint32_t sets, ways;
    uint64_t *lines;    /* sets x ways, most recent last; 0 = empty */
} plain_level;

static void plain_init(plain_level *l, uint32_t bytes, uint32_t ways)
{
    l->ways = ways;
    l->sets = bytes / 64 / ways;
    l->lines = calloc((size_t)l->sets * ways, sizeof *l->lines);
}

/* true when line was in the level; it becomes the set's most recent either way (a line
 * not found evicts the least recent one when the set is full) */
static bool plain_use(plain_level *l, uint64_t line, bool fill)
{
    uint64_t *set = l->lines + (line % l->sets) * l->ways;
    uint32_t n = 0, at = l->ways;
    while (n < l->ways && set[n])
        n++;
    for (uint32_t i = 0; i < n; i++)
        if (set[i] == line + 1)
            at = i;
    if (at == l->ways && !fill)
        return false;
    bool found = at != l->ways;
    if (!found && n == l->ways)
        at = 0;                             /* the least recent goes */
    else if (!found)
        at = n++;
    memmove(set + at, set + at + 1, (n - at - 1) * sizeof *set);
    set[n - 1] = line + 1;
    return found;
}

/* the level where line was found: 0 its L1 (l1[which]), 1 L2, 2 LLC, 3 memory; the
 * levels above it filled */
static int plain_access(plain_level *l1, plain_level *below, int levels, uint64_t line)
{
    plain_level *lv[3] = {l1, &below[0], &below[1]};
    int found = 3;
    for (int i = 0; i < levels && found == 3; i++)
        if (plain_use(lv[i], line, false))
            found = i;
    for (int i = 0; i < levels && i < found; i++)
        plain_use(lv[i], line, true);
    return found;
}

static uint64_t rnd_state = 88172645463325252ull;
static uint64_t rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}

static void test_caches_against_plain_lru(void)
{
    /* the x86 server's geometry, the Sunway's, and one whose sets are no power of two */
    const struct {
        uint32_t bytes[3], ways[3], l1i_bytes, l1i_ways;
    } geo[] = {
        {{32768, 1048576, 23068672}, {8, 16, 11}, 32768, 8},
        {{32768, 524288, 0}, {4, 8, 1}, 32768, 4},
        {{3 * 64 * 6, 64 * 20 * 4, 64 * 44 * 5}, {6, 4, 5}, 64 * 2 * 3, 2},
    };
    for (size_t g = 0; g < sizeof geo / sizeof geo[0]; g++) {
        dcache d;
        CHECK(dcache_init(&d, geo[g].bytes, geo[g].ways, geo[g].l1i_bytes, geo[g].l1i_ways), "geometry %zu", g);
        int levels = geo[g].bytes[2] ? 3 : 2;
        plain_level l1[2], below[2];
        plain_init(&l1[DC_DATA], geo[g].bytes[0], geo[g].ways[0]);
        plain_init(&l1[DC_CODE], geo[g].l1i_bytes, geo[g].l1i_ways);
        plain_init(&below[0], geo[g].bytes[1], geo[g].ways[1]);
        plain_init(&below[1], geo[g].bytes[2] ? geo[g].bytes[2] : 64, geo[g].bytes[2] ? geo[g].ways[2] : 1);
        /* a program's shape: a code stream running forward and jumping, data lines reused
         * from a few hot ones, a stack, and a wide region; page-table reads among them */
        uint64_t pc = 0x400000, sp = 0x7ff000000, hot[6];
        for (int i = 0; i < 6; i++)
            hot[i] = 0x10000000 + (rnd() % 4096) * 64;
        int mismatches = 0, by_level[4] = {0};
        for (long n = 0; n < 3000000; n++) {
            uint64_t r = rnd(), hpa;
            if (n == 1500000)   /* the L1s' tick about to wrap: their order of use must survive it */
                d.tick = UINT32_MAX - 5000;
            int which = DC_DATA;
            switch (r % 8) {
            case 0: case 1: case 2:
                which = DC_CODE;
                pc = (r >> 8) % 64 ? pc + 4 : 0x400000 + ((r >> 16) % 65536) * 16;
                hpa = pc;
                break;
            case 3: hpa = hot[(r >> 8) % 6] + ((r >> 12) % 64); break;
            case 4: sp += (int64_t)((r >> 8) % 17) * 8 - 64; hpa = sp; break;
            case 5: hpa = 0x100000000ull + ((r >> 8) % (64ull << 20)); break;
            case 6: hpa = 0x800000000ull + ((r >> 8) % 512) * 4096 + ((r >> 20) % 512) * 8; break;
            default: hpa = 0x10000000 + ((r >> 8) % (1u << 22)); break;
            }
            int got = dcache_lookup(&d, hpa, which);
            int want = plain_access(&l1[which], below, levels, hpa >> 6);
            by_level[want]++;
            if (got != want && mismatches++ < 3)
                CHECK(false, "geometry %zu, access %ld (hpa 0x%llx, %s): found at level %d, the plain LRU says %d", g, n,
                      (unsigned long long)hpa, which == DC_CODE ? "fetch" : "data", got, want);
        }
        CHECK(mismatches == 0, "geometry %zu: %d accesses found at another level", g, mismatches);
        /* the stream reaches every level, so each was compared */
        for (int i = 0; i < 4; i++)
            CHECK(i == 2 && levels == 2 ? by_level[i] == 0 : by_level[i] > 1000, "geometry %zu: %d accesses at level %d", g,
                  by_level[i], i);
        dcache_free(&d);
        free(l1[0].lines);
        free(l1[1].lines);
        free(below[0].lines);
        free(below[1].lines);
    }
}

/* A program's accesses: fetches stepping through a few pages of code, loads and stores
 * near the top of the stack and scanning a heap of 40 pages, now and then a random page. */
static size_t sample_local(trace_access *a, size_t max)
{
    uint64_t s = 0x9E3779B97F4A7C15ull, pc = 0x401000, heap = 0;
    for (size_t n = 0; n < max; n++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        unsigned r = (unsigned)(s >> 24) % 100;
        if (r < 62) {
            pc += 1 + (s >> 8) % 7;
            if (pc >= 0x404000 || (s >> 40) % 64 == 0)
                pc = 0x401000 + (s >> 16) % 0x3000;
            a[n] = (trace_access){.addr = pc, .kind = TRACE_FETCH};
        } else if (r < 85) {
            a[n] = (trace_access){.addr = 0x7ffd1234ff00ull + (s >> 32) % 192, .kind = (uint8_t)((s >> 50) % 2 ? 0 : 1)};
        } else if (r < 98) {
            heap = (heap + 8) % (40 * 4096);
            a[n] = (trace_access){.addr = 0x555555560000ull + heap, .kind = (uint8_t)((s >> 50) % 4 == 0 ? 3 : 0)};
        } else {
            a[n] = (trace_access){.addr = 0x7f0000000000ull + ((s >> 20) % 4096) * 4096 + (s >> 44) % 4096,
                                  .kind = (uint8_t)((s >> 52) % 2)};
        }
    }
    return max;
}

/* Pass 2 by batches, as the CLI's threads run it: each batch decoded, sealed, grouped by
 * page (vmsim_replay_batch_group) where `group` says, and run through every mode. */
static char *replay_by_batches(const uint8_t *prefix, size_t plen, const buf *body, const char *opts, int group,
                               size_t *grouped, char *err, size_t errlen)
{
    vmsim_replay *r = vmsim_replay_open(prefix, plen, 0, opts, strlen(opts));
    vmsim_replay_batch *b = vmsim_replay_batch_new();
    char *text = NULL;
    if (!vmsim_replay_scan(r, body->b, body->n) && !vmsim_replay_scan_end(r)) {
        const uint8_t *p = body->b, *end = body->b + body->n;
        unsigned modes = vmsim_replay_modes_here(r);
        for (size_t k = 0; !vmsim_replay_status(r); k++) {
            vmsim_replay_batch_clear(b);
            vmsim_replay_decode(r, &p, end, b);
            if (!vmsim_replay_batch_size(b) || vmsim_replay_status(r))
                break;
            vmsim_replay_batch_seal(r, b);
            if (group == 1 || (group == 2 && k % 2)) {
                vmsim_replay_batch_group(b);
                ++*grouped;
            }
            for (int mode = 0; mode < 6; mode++)
                if (modes >> mode & 1)
                    vmsim_replay_run(r, mode, b);
        }
        if (!vmsim_replay_status(r))
            vmsim_replay_finish(r, &text);
    }
    snprintf(err, errlen, "%s", vmsim_replay_error(r));
    vmsim_replay_batch_free(b);
    vmsim_replay_close(r);
    return text;
}

/* The CLI's threads group a batch's runs by page when the decoder is ahead of the modes,
 * not otherwise: the report is the one-handle replay's whether no batch, every batch or
 * every other batch is grouped, on random accesses and on a program's, cold and warm. */
static void test_batches_grouped(void)
{
    static trace_access in[140000];
    static buf body;
    static uint8_t prefix[4096];
    const char *opts[] = {"{\"format\":\"json\"}", "{\"format\":\"json\",\"start\":\"warm\"}"};
    for (int kind = 0; kind < 2; kind++) {
        size_t n = kind ? sample_local(in, 140000) : sample(in, 100000);
        encode(&body, in, n);
        size_t plen = file_prefix(prefix, in, n, 1, "");
        for (int o = 0; o < 2; o++) {
            char err[512];
            char *whole = replay_in_pieces(prefix, plen, &body, body.n, opts[o], err, sizeof err);
            CHECK(whole != NULL, "one handle: %s", err);
            for (int group = 0; whole && group < 3; group++) {
                size_t grouped = 0;
                char *t = replay_by_batches(prefix, plen, &body, opts[o], group, &grouped, err, sizeof err);
                CHECK(t && !strcmp(t, whole), "%s accesses, %s, batches grouped %s: %s",
                      kind ? "a program's" : "random", o ? "warm" : "cold", group == 0 ? "none" : group == 1 ? "all" : "every other",
                      t ? "another report" : err);
                CHECK(group == 0 ? grouped == 0 : grouped >= (group == 1 ? 4u : 2u), "%zu batches grouped", grouped);
                free(t);
            }
            free(whole);
        }
    }
}

/* Pass 1's findings for a replay (vmsim_replay_scan_load / _save): in, taken in place of
 * pass 1 where they fit (NULL: none), and whether they were; out, the replay's own, saved
 * once it is over. */
typedef struct findings {
    const uint8_t *in;
    size_t in_n;
    bool took;
    uint8_t *out;
    size_t out_n;
} findings;

static bool take_findings(vmsim_replay *r, findings *f)
{
    f->took = f->in && vmsim_replay_scan_load(r, f->in, f->in_n) == 0;
    return f->took;
}

static void save_findings(const vmsim_replay *r, findings *f)
{
    f->out_n = vmsim_replay_scan_save(r, NULL, 0);
    f->out = f->out_n ? malloc(f->out_n) : NULL;
    CHECK(!f->out_n || vmsim_replay_scan_save(r, f->out, f->out_n) == f->out_n, "the findings saved whole");
}

/* Pass 2 in chunks, as the CLI's threads run it, in one thread: pass 1 in pieces of
 * `piece` (the first and every other one scanned ahead and joined, the others scanned in order), noting
 * where pass 2 may start; pass 2 decodes the chunks in an order of its own (the last
 * first, then the others from the first), each with its own cursor into its own batches,
 * then takes them in order: cursor_end, the shared L1s, the runs grouped by page in every
 * other chunk, every mode. change: pass 2 reads the body with the byte there altered
 * (SIZE_MAX: none). *nchunks: the chunks pass 1 noted; *longest: the most bytes of one but
 * the last. f: NULL, or findings taken in place of pass 1 and saved after (above). */
static char *replay_in_chunks(const uint8_t *prefix, size_t plen, const buf *body, size_t piece, const char *opts,
                              size_t change, size_t *nchunks, size_t *longest, char *err, size_t errlen, findings *f)
{
    vmsim_replay *r = vmsim_replay_open(prefix, plen, 0, opts, strlen(opts));
    vmsim_replay_ahead *a = vmsim_replay_ahead_new();
    char *text = NULL;
    *nchunks = 0;
    vmsim_replay_chunked(r);
    bool took = f && take_findings(r, f);
    for (size_t at = 0, i = 0; !took && at < body->n && !vmsim_replay_status(r); at += piece, i++) {
        size_t k = at + piece < body->n ? piece : body->n - at;
        if (i % 2 == 0)
            vmsim_replay_scan_ahead(a, body->b + at, k);
        vmsim_replay_scan_joined(r, body->b + at, k, i % 2 == 0 ? a : NULL);
    }
    if (!vmsim_replay_status(r))
        vmsim_replay_scan_end(r);
    size_t n = vmsim_replay_chunks(r);
    *nchunks = n;
    uint8_t *b2 = malloc(body->n);
    size_t *start = calloc(n + 1, sizeof *start), *nb = calloc(n + 1, sizeof *nb);
    vmsim_replay_cursor **c = calloc(n + 1, sizeof *c);
    vmsim_replay_batch ***bs = calloc(n + 1, sizeof *bs);
    double accesses = 0;
    memcpy(b2, body->b, body->n);
    if (change < body->n)
        b2[change] ^= 0x28;
    *longest = 0;
    for (size_t k = 0; k < n; k++) {
        start[k + 1] = start[k] + (size_t)vmsim_replay_chunk_bytes(r, k);
        if (k + 1 < n && start[k + 1] - start[k] > *longest)
            *longest = start[k + 1] - start[k];
        accesses += vmsim_replay_chunk_accesses(r, k);
    }
    CHECK(!n || (start[n] == body->n && accesses == vmsim_replay_accesses(r)),
          "the chunks hold the body: %zu bytes of %zu, %.0f accesses of %.0f", start[n], body->n, accesses,
          vmsim_replay_accesses(r));
    for (size_t i = 0; i < n && !vmsim_replay_status(r); i++) {
        size_t k = i == 0 ? n - 1 : i - 1, room = (size_t)vmsim_replay_chunk_accesses(r, k) / VMSIM_REPLAY_BATCH + 2;
        c[k] = vmsim_replay_cursor_new();
        bs[k] = calloc(room, sizeof **bs);
        vmsim_replay_cursor_at(r, c[k], k);
        const uint8_t *p = b2 + start[k], *end = b2 + start[k + 1];
        for (bs[k][0] = vmsim_replay_batch_new(); nb[k] < room;) {
            const uint8_t *before = p;
            size_t got = vmsim_replay_decode_chunk(r, c[k], &p, end, bs[k][nb[k]]);
            if (vmsim_replay_batch_size(bs[k][nb[k]]) == VMSIM_REPLAY_BATCH) {
                if (++nb[k] < room)
                    bs[k][nb[k]] = vmsim_replay_batch_new();
            } else if (p == before && !got) {
                if (vmsim_replay_batch_size(bs[k][nb[k]]))
                    nb[k]++;
                break;
            }
        }
        for (size_t j = 0; j < nb[k]; j++)
            vmsim_replay_batch_runs(bs[k][j]);
    }
    unsigned modes = vmsim_replay_modes_here(r);
    for (size_t k = 0; k < n && !vmsim_replay_status(r); k++) {
        if (vmsim_replay_cursor_end(r, c[k]))
            break;
        for (size_t j = 0; j < nb[k]; j++) {
            vmsim_replay_batch_sl1(r, bs[k][j]);
            if (k % 2)
                vmsim_replay_batch_group(bs[k][j]);
            for (int mode = 0; mode < 6; mode++)
                if (modes >> mode & 1)
                    vmsim_replay_run(r, mode, bs[k][j]);
        }
    }
    if (!vmsim_replay_status(r))
        vmsim_replay_finish(r, &text);
    if (f)
        save_findings(r, f);
    snprintf(err, errlen, "%s", vmsim_replay_error(r));
    for (size_t k = 0; k < n; k++) {
        vmsim_replay_cursor_free(c[k]);
        for (size_t j = 0; bs[k] && j <= nb[k]; j++)
            vmsim_replay_batch_free(bs[k][j]);
        free(bs[k]);
    }
    free(bs);
    free(c);
    free(start);
    free(nb);
    free(b2);
    vmsim_replay_ahead_free(a);
    vmsim_replay_close(r);
    return text;
}

/* The report in chunks is the one-handle replay's, with pieces of any size (chunks at the
 * pieces' starts, and within a piece every 65,534 bytes or so where it was scanned ahead),
 * cold and warm, on random accesses and on a program's; a body that differs in pass 2 is
 * refused; chunked only before the first piece. */
static void test_chunks(void)
{
    static trace_access in[300000];
    static buf body;
    static uint8_t prefix[4096];
    const char *opts[] = {"{\"format\":\"json\"}", "{\"format\":\"json\",\"start\":\"warm\",\"guest_pages\":\"2m\"}"};
    for (int kind = 0; kind < 2; kind++) {
        size_t n = kind ? sample_local(in, 300000) : sample(in, 150000);
        encode(&body, in, n);
        size_t plen = file_prefix(prefix, in, n, 1, "");
        size_t pieces[] = {body.n, 1u << 20, 100003, 20000, 4097, 333};
        for (int o = 0; o < 2; o++) {
            char err[512];
            char *whole = replay_in_pieces(prefix, plen, &body, body.n, opts[o], err, sizeof err);
            CHECK(whole != NULL, "one handle: %s", err);
            for (size_t i = 0; whole && i < sizeof pieces / sizeof *pieces; i++) {
                size_t chunks, longest;
                char *t = replay_in_chunks(prefix, plen, &body, pieces[i], opts[o], SIZE_MAX, &chunks, &longest, err, sizeof err, NULL);
                CHECK(t && !strcmp(t, whole), "%s accesses, pieces of %zu, %zu chunks: %s", kind ? "a program's" : "random",
                      pieces[i], chunks, t ? "another report" : err);
                /* chunks 16 KiB apart or more, and within a piece, scanned ahead or in order */
                CHECK(chunks >= body.n / 90000 && chunks > 1 && chunks <= body.n / (16u << 10) + 1,
                      "%zu chunks for %zu bytes in pieces of %zu", chunks, body.n, pieces[i]);
                /* and alike: a mark 64 KiB after the last wherever a scan ahead's last one was
                 * (chunks of 100 KiB and more where a piece was scanned ahead, before: a thread
                 * given one held the others up) */
                CHECK(pieces[i] < (64u << 10) || longest <= (68u << 10) + 512,
                      "a chunk of %zu bytes in pieces of %zu", longest, pieces[i]);
                free(t);
            }
            free(whole);
        }
        for (size_t at = body.n / 3; at < body.n; at += body.n / 3) {
            size_t chunks, longest;
            char err[512];
            char *t = replay_in_chunks(prefix, plen, &body, 20000, opts[0], at, &chunks, &longest, err, sizeof err, NULL);
            CHECK(!t && (strstr(err, "differed between the two passes") || strstr(err, "corrupt")),
                  "a body changed at byte %zu of %zu for pass 2: %s", at, body.n, t ? "replayed" : err);
            free(t);
        }
    }
    vmsim_replay *r = vmsim_replay_open(prefix, file_prefix(prefix, in, 10, 1, ""), 0, "{}", 2);
    encode(&body, in, 10);
    vmsim_replay_scan(r, body.b, 3);
    CHECK(vmsim_replay_chunked(r) != 0 && strstr(vmsim_replay_error(r), "after the first piece"),
          "chunked after a piece: %s", vmsim_replay_error(r));
    vmsim_replay_close(r);
}

/* A replay that takes pass 1's findings from f->in where they fit (else scans the body) and
 * saves its own to f->out: in chunks (replay_in_chunks, pieces of 20,000 bytes), or one
 * handle, the body fed whole with the byte at `change` altered (SIZE_MAX: none). */
static char *replay_kept(const uint8_t *prefix, size_t plen, const buf *body, const char *opts, bool chunked, findings *f,
                         size_t change, char *err, size_t errlen)
{
    if (chunked) {
        size_t chunks, longest;
        return replay_in_chunks(prefix, plen, body, 20000, opts, change, &chunks, &longest, err, errlen, f);
    }
    vmsim_replay *r = vmsim_replay_open(prefix, plen, 0, opts, strlen(opts));
    char *text = NULL;
    if (!take_findings(r, f))
        vmsim_replay_scan(r, body->b, body->n);
    if (!vmsim_replay_status(r))
        vmsim_replay_scan_end(r);
    uint8_t *b2 = malloc(body->n);
    memcpy(b2, body->b, body->n);
    if (change < body->n)
        b2[change] ^= 0x28;
    if (!vmsim_replay_status(r))
        vmsim_replay_feed(r, b2, body->n);
    if (!vmsim_replay_status(r))
        vmsim_replay_finish(r, &text);
    save_findings(r, f);
    snprintf(err, errlen, "%s", vmsim_replay_error(r));
    free(b2);
    vmsim_replay_close(r);
    return text;
}

/* Pass 1's findings kept: another replay of the same trace that takes them instead of pass 1
 * gives the report of a whole replay, with any options (the findings are the trace's), one
 * handle or in chunks; what is not this trace's findings, or not whole, is not taken and the
 * replay scans as ever; a body changed since is refused by pass 2. */
static void test_scan_kept(void)
{
    static trace_access in[300000];
    static buf body, other;
    static uint8_t prefix[4096], oprefix[4096];
    const char *opts[] = {"{\"format\":\"json\"}", "{\"format\":\"json\",\"start\":\"warm\",\"guest_pages\":\"2m\"}",
                          "{\"format\":\"json\",\"start\":\"warm\",\"tables\":\"on-demand\",\"host_pages\":\"4k\"}",
                          "{\"format\":\"json\",\"tables\":\"on-demand\",\"host_pages\":\"4k\"}"};
    size_t on = sample(in, 5000);
    encode(&other, in, on);
    size_t oplen = file_prefix(oprefix, in, on, 1, "");
    for (int kind = 0; kind < 2; kind++) {
        size_t n = kind ? sample_local(in, 300000) : sample(in, 150000);
        encode(&body, in, n);
        size_t plen = file_prefix(prefix, in, n, 1, "");
        char err[512];
        findings f0 = {0}, f1 = {0}, fo = {0};
        char *t0 = replay_kept(prefix, plen, &body, opts[0], false, &f0, SIZE_MAX, err, sizeof err);
        char *t1 = replay_kept(prefix, plen, &body, opts[0], true, &f1, SIZE_MAX, err, sizeof err);
        free(replay_kept(oprefix, oplen, &other, opts[0], true, &fo, SIZE_MAX, err, sizeof err));
        uint8_t *plain = f0.out, *marked = f1.out, *theirs = fo.out;
        size_t plain_n = f0.out_n, marked_n = f1.out_n, theirs_n = fo.out_n;
        CHECK(t0 && t1 && !strcmp(t0, t1) && plain_n && marked_n > plain_n && theirs_n,
              "a replay saves its findings (%zu bytes; %zu with its marks)", plain_n, marked_n);
        for (int o = 0; t0 && o < 4; o++) {
            char *whole = replay_in_pieces(prefix, plen, &body, body.n, opts[o], err, sizeof err);
            for (int chunked = 0; whole && chunked < 2; chunked++)
                for (int from = 0; from < 2; from++) {
                    if (chunked && !from)
                        continue;       /* no marks: not taken where chunked (below) */
                    const uint8_t *was = from ? marked : plain;
                    size_t was_n = from ? marked_n : plain_n;
                    findings f = {.in = was, .in_n = was_n};
                    char *t = replay_kept(prefix, plen, &body, opts[o], chunked, &f, SIZE_MAX, err, sizeof err);
                    const uint8_t *again = f.out;
                    size_t again_n = f.out_n;
                    bool took = f.took;
                    CHECK(took && t && !strcmp(t, whole), "%s accesses, options %d, %s, findings %s: %s",
                          kind ? "a program's" : "random", o, chunked ? "in chunks" : "one handle",
                          from ? "with marks" : "without", !took ? "not taken" : t ? "another report" : err);
                    /* and saved again, the same findings: the same words, the pages (in the set's
                     * order) with the same kinds */
                    uint64_t nm;
                    memcpy(&nm, was + 8 * 13, 8);
                    size_t head = 8 * (14 + 5 * nm);
                    bool same = again_n == was_n && !memcmp(again, was, head);
                    for (size_t i = head; same && i < was_n; i += 8) {
                        bool found = false;
                        for (size_t j = head; !found && j < again_n; j += 8)
                            found = !memcmp(was + i, again + j, 8);
                        same = found;
                    }
                    CHECK(same, "findings taken and saved again: %zu bytes against %zu", again_n, was_n);
                    free(f.out);
                    free(t);
                }
            free(whole);
        }
        /* not taken, and the replay scans as ever: another trace's, no marks where chunked, cut
         * short, one more word, a field changed, a page twice, a page's kinds none */
        uint8_t *bad = malloc(marked_n + 8);
        struct { const char *what; const uint8_t *b; size_t n; bool chunked; int edit; } no[] = {
            {"another trace's", theirs, theirs_n, true, -1}, {"without marks, in chunks", plain, plain_n, true, -1},
            {"cut short", marked, marked_n - 8, true, -1}, {"a word more", bad, marked_n + 8, true, 0},
            {"its accesses changed", bad, marked_n, true, 1}, {"its compressed length changed", bad, marked_n, true, 7},
            {"a page twice", bad, marked_n, true, 2}, {"a page without kinds", bad, marked_n, true, 3},
            {"a mark out of order", bad, marked_n, true, 4}};
        for (size_t i = 0; t0 && i < sizeof no / sizeof *no; i++) {
            memcpy(bad, marked, marked_n);
            memset(bad + marked_n, 0, 8);
            uint64_t w, nm;
            memcpy(&nm, marked + 8 * 13, 8);
            size_t pages = 8 * (14 + 5 * nm);
            if (no[i].edit == 1 || no[i].edit == 7) {
                memcpy(&w, bad + 8 * no[i].edit, 8);
                w++;
                memcpy(bad + 8 * no[i].edit, &w, 8);
            } else if (no[i].edit == 2) {
                memcpy(bad + pages + 8, bad + pages, 8);
            } else if (no[i].edit == 3) {
                memcpy(&w, bad + pages, 8);
                w &= ~7ull;
                memcpy(bad + pages, &w, 8);
            } else if (no[i].edit == 4 && nm > 1) {
                memcpy(bad + 8 * (14 + 5), marked + 8 * 14, 40);
                memcpy(bad + 8 * 14, marked + 8 * (14 + 5), 40);
            }
            findings f = {.in = no[i].b, .in_n = no[i].n};
            char *t = replay_kept(prefix, plen, &body, opts[0], no[i].chunked, &f, SIZE_MAX, err, sizeof err);
            CHECK(!f.took && t && !strcmp(t, t0), "findings %s: %s", no[i].what,
                  f.took ? "taken" : t ? "another report" : err);
            free(f.out);
            free(t);
        }
        free(bad);
        /* taken, then the body found changed by pass 2 */
        for (int chunked = 0; t0 && chunked < 2; chunked++) {
            findings f = {.in = marked, .in_n = marked_n};
            char *t = replay_kept(prefix, plen, &body, opts[0], chunked, &f, body.n / 2, err, sizeof err);
            CHECK(f.took && !t && (strstr(err, "differed between the two passes") || strstr(err, "corrupt")),
                  "findings kept, the body changed at its middle, %s: %s", chunked ? "in chunks" : "one handle",
                  t ? "replayed" : err);
            free(f.out);
            free(t);
        }
        /* nothing to save before pass 1 ends; nothing taken after its first piece */
        vmsim_replay *r = vmsim_replay_open(prefix, plen, 0, opts[0], strlen(opts[0]));
        CHECK(vmsim_replay_scan_save(r, NULL, 0) == 0, "findings saved before pass 1 ended");
        vmsim_replay_scan(r, body.b, 100);
        CHECK(vmsim_replay_scan_load(r, plain, plain_n) != 0, "findings taken after pass 1's first piece");
        vmsim_replay_close(r);
        free(t0);
        free(t1);
        free(plain);
        free(marked);
        free(theirs);
    }
}

int main(void)
{
    test_pieces();
    test_replay_pieces();
    test_shared_decoder();
    test_scan_ahead();
    test_refusals();
    test_caches_against_plain_lru();
    test_batches_grouped();
    test_chunks();
    test_scan_kept();
    printf("replay unit tests: %d checks, %d failures\n", checks, failures);
    return failures != 0;
}

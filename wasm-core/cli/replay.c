/* vmsim replay FILE: a recorded trace (hw-lab/run trace) through every mode, one line per
 * mode (docs/replay.md). The body is inflated with zlib in pieces and fed to the engine
 * twice; nothing is held but the pieces. Exit status: 0 ok, 1 I/O error, 2 a refused
 * trace or option (one line on stderr). */
#ifdef __EMSCRIPTEN__
#define _GNU_SOURCE         /* fopencookie: the page's file as the threaded module reads it */
#endif
#include "vmsim_replay.h"
#include "replay_cli.h"
#include "../src/json.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifndef VMSIM_GUNZIP
#include <zlib.h>
#endif

/* Where the replay's refusals and progress lines go: stderr in the CLI; in the page's
 * threaded module (vmsim-mt, at the end of this file) a buffer of the replay's own, and progress
 * the page reads. */
static FILE *rp_err;
static void (*rp_progress)(int pass, double done, double total);

#define IN_CHUNK (256u << 10)
#define OUT_CHUNK (1u << 20)
#define RING_PIECE (256u << 10)       /* a piece of the threaded pass 1's ring (its 8 within a processor's L2) */

static void replay_usage(FILE *f)
{
    fprintf(f, "usage: vmsim replay FILE [--modes native,ept,npt,shadow,flat,agile] [--preset x86-server|sunway-1621]\n"
               "                   [--guest-pages 4k|2m] [--huge-min N] [--host-pages 2m|4k] [--start cold|warm]\n"
               "                   [--tables built|on-demand] [--machine HW-LAB-RESULT.json]\n"
               "                   [--format table|json|csv] [--cycles-per-access C] [--cycles-per-ref C]\n"
               "                   [--cycles-per-exit C] [--refill-trap C] [--agile-switch-level 0-4] [--jobs N] [--quiet]\n"
               "                   [--l1 shared|per-mode] [--l1-leave-at N] [--chunk-batches N]\n"
               "  replays a trace recorded with hw-lab/run trace through every mode and prints a row per mode\n"
               "  (references per access, TLB misses, walks, exits by kind, modelled cycles); see\n"
               "  wasm-core/docs/replay.md. --jobs N: the replay on N threads (default: the processors;\n"
               "  1: all on one), the same figures; --l1 per-mode: each mode keeps its own L1\n"
               "  data and instruction caches instead of sharing them where the modes agree (the same figures,\n"
               "  slower); --l1-leave-at N: each mode leaves the shared L1s before its Nth access (a check:\n"
               "  the same figures); --chunk-batches N: with --jobs, the batches of 32,768 accesses a thread\n"
               "  decodes before it runs them (default 2; a check: the same figures)\n");
}

/* The CLI's progress: a line at each tenth of a pass, with the time left once it means
 * something, in the page's words and by the page's rule (web/src/trace/eta.ts): the bar
 * moves at about one speed through both passes, pass 1 its first PASS1_SHARE
 * (js/replay.ts), so the time left is the time so far times what is left of the bar over
 * what is done; nothing before a twentieth of the bar or 2 s; under 10 s to the second
 * (never 0), under a minute to 5 s, under an hour to the minute, above to 10 minutes. */
#define PASS1_SHARE 0.2
static double rp_started;           /* the replay's start, on the monotonic clock (replay_stream) */

static double monotonic_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* " (about N s left)", or "" when nothing is said yet. */
static void time_left(double fraction, double elapsed, char *buf, size_t n)
{
    buf[0] = 0;
    if (!(fraction >= 0.05 && fraction < 1) || !(elapsed >= 2))
        return;
    double s = elapsed * (1 - fraction) / fraction;
    if (s < 10)
        snprintf(buf, n, " (about %.0f s left)", ceil(s) < 1 ? 1 : ceil(s));
    else if (s < 60)
        snprintf(buf, n, " (about %.0f s left)", round(s / 5) * 5);
    else if (s < 3600)
        snprintf(buf, n, " (about %.0f min left)", round(s / 60));
    else
        snprintf(buf, n, " (about %.0f min left)", round(s / 600) * 10);
}

/* shown: where the last line was */
static void say_progress(int pass, double done, double total, double *shown)
{
    if (rp_progress) {
        rp_progress(pass, done, total);
    } else if (total > 0 && done - *shown >= total / 10) {
        *shown = done;
        double f = done / total < 1 ? done / total : 1;
        char left[40];
        time_left(pass == 1 ? PASS1_SHARE * f : PASS1_SHARE + (1 - PASS1_SHARE) * f, monotonic_s() - rp_started,
                  left, sizeof left);
        fprintf(rp_err, "vmsim replay: pass %d: %.0f%%%s\n", pass, 100.0 * done / total, left);
    }
}

typedef int (*feed_fn)(void *ctx, vmsim_replay *, const uint8_t *, size_t);

static int feed_piece(void *ctx, vmsim_replay *r, const uint8_t *p, size_t n)
{
    (void)ctx;
    return vmsim_replay_feed(r, p, n);
}

/* ---- the body inflated: in this thread, or on threads, by whichever would wait ----
 * The inflater reads the file from the body offset and inflates it into pieces; what it
 * refuses (a truncated or corrupt gzip stream, data after it) is a message that the
 * consumer prints only once it has fed every piece before it, so a refusal reads the
 * same whichever thread found it. */
#define PIECES 8
#define MAX_SCANNERS 3
enum { PIECE_INFLATED, PIECE_AHEAD, PIECE_SCANNED_AHEAD, PIECE_IN_ORDER };

typedef struct inflater {
    FILE *f;
    const char *name;
    bool check;                     /* verify the gzip stream's CRC-32 */
#ifdef VMSIM_GUNZIP
    /* the module's own reader (src/gunzip.c), whose pieces go to a sink: into the piece
     * being made, what does not fit kept for the next */
    vmsim_gunzip *g;
    unsigned char *in_at;
    unsigned char *out, *spill;
    size_t cap, n, spill_len, spill_at, spill_cap;
    bool oom;
#else
    z_stream zs;
#endif
    unsigned char *in;
    size_t in_left;                 /* bytes of in not yet given to inflate */
    bool at_end;                    /* the gzip stream ended: no more pieces */
    int rc;                         /* 0, or 1 (I/O) / 2 (refused) with msg */
    bool gz;                        /* the refusal is the gzip stream's */
    char msg[320];
    /* on threads: a ring of pieces between the inflating and the consumer */
    bool threaded;
    pthread_mutex_t mu;
    pthread_cond_t moved;           /* a piece made or taken, the end, a stop */
    unsigned char *piece[PIECES];
    size_t len[PIECES];
    uint64_t made, taken;
    /* pass 1: this thread scans the pieces in order; the scanning threads inflate them and,
     * when the ring is full, scan the newest ahead (vmsim_replay_scan_ahead), which this one
     * then joins: the fewer scanned ahead, the less work (a scan ahead costs more than the
     * scan in order, and the join), docs/replay.md, "Pass 1 in order where it can" */
    int scanners;
    pthread_t sid[MAX_SCANNERS];
    uint8_t state[PIECES];          /* PIECE_INFLATED .. */
    vmsim_replay_ahead *ahead[PIECES];
    bool finished;                  /* the last piece was made (or inflating failed: rc) */
    bool inflating;                 /* a thread is inflating the next piece */
    bool stop;                      /* the consumer refused a piece: the thread stops */
} inflater;

static int rp_stage;

static void inflater_fail(inflater *z, int rc, const char *fmt, const char *detail)
{
    z->rc = rc;
    z->gz = rc == 2;
    snprintf(z->msg, sizeof z->msg, fmt, z->name, detail);
}

/* The inflater's refusal, said (its status). */
static int say_inflater(const inflater *z)
{
    fputs(z->msg, rp_err);
    rp_stage = z->gz ? 3 : 2;
    return z->rc;
}

#ifdef VMSIM_GUNZIP
#define GZ_PUSH 4096u       /* compressed bytes pushed at a time: about 256 KiB out on a program's trace */

static int gz_sink(void *ctx, const uint8_t *p, size_t n)
{
    inflater *z = ctx;
    size_t k = z->cap - z->n < n ? z->cap - z->n : n;
    memcpy(z->out + z->n, p, k);
    z->n += k;
    if (k < n) {
        size_t more = n - k;
        if (z->spill_len + more > z->spill_cap) {
            size_t cap = (z->spill_len + more) * 2;
            unsigned char *q = realloc(z->spill, cap);
            if (!q) {
                z->oom = true;
                return 1;
            }
            z->spill = q;
            z->spill_cap = cap;
        }
        memcpy(z->spill + z->spill_len, p + k, more);
        z->spill_len += more;
    }
    return 0;
}

static bool zin_init(inflater *z, bool check)
{
    z->g = vmsim_gunzip_new(NULL, check ? 1 : 2);
    return z->g && !vmsim_gunzip_out_to(z->g, gz_sink, z);
}

static void zin_end(inflater *z)
{
    vmsim_gunzip_free(z->g);
    free(z->spill);
}

/* The next piece of the body into out (at most cap bytes): its length, 0 at the end or on
 * a refusal (z->rc), in gunzip.c's words (the page's). */
static size_t inflate_piece(inflater *z, unsigned char *out, size_t cap)
{
    size_t n = 0;
    while (n < cap) {
        if (z->spill_at < z->spill_len) {
            size_t k = z->spill_len - z->spill_at < cap - n ? z->spill_len - z->spill_at : cap - n;
            memcpy(out + n, z->spill + z->spill_at, k);
            n += k;
            if ((z->spill_at += k) == z->spill_len)
                z->spill_at = z->spill_len = 0;
            continue;
        }
        if (z->rc || z->at_end)
            break;
        bool final = false;
        if (!z->in_left) {
            size_t got = fread(z->in, 1, IN_CHUNK, z->f);
            if (ferror(z->f)) {
                inflater_fail(z, 1, "vmsim replay: cannot read %s: %s\n", strerror(errno));
                break;
            }
            z->in_at = z->in;
            z->in_left = got;
            final = got == 0;
        }
        size_t k = z->in_left < GZ_PUSH ? z->in_left : GZ_PUSH;
        z->out = out;
        z->cap = cap;
        z->n = n;
        int s = vmsim_gunzip_push(z->g, z->in_at, k, final);
        n = z->n;
        z->in_at += k;
        z->in_left -= k;
        if (!s && vmsim_gunzip_done(z->g)) {
            z->at_end = true;
            /* bytes after the gzip member not yet given to the reader (it refuses those it was
             * given itself): given to it, to be refused in its words */
            unsigned char extra;
            if (z->in_left)
                s = vmsim_gunzip_push(z->g, z->in_at, z->in_left, 0);
            else if (fread(&extra, 1, 1, z->f) == 1)
                s = vmsim_gunzip_push(z->g, &extra, 1, 0);
        }
        if (s || z->oom) {
            inflater_fail(z, z->oom || s == VMSIM_REPLAY_NO_MEMORY ? 1 : 2, "vmsim replay: %s: %s\n",
                          z->oom || s == VMSIM_REPLAY_NO_MEMORY ? "out of memory" : vmsim_gunzip_error(z->g));
            break;
        }
    }
    return n;
}
#else
static bool zin_init(inflater *z, bool check)
{
    if (inflateInit2(&z->zs, 16 + MAX_WBITS) != Z_OK)
        return false;
    if (!check)
        inflateValidate(&z->zs, 0);
    return true;
}

static void zin_end(inflater *z)
{
    if (z->zs.state)
        inflateEnd(&z->zs);
}

/* The next piece of the body into out (at most cap bytes): its length, 0 at the end or on
 * a refusal (z->rc). */
static size_t inflate_piece(inflater *z, unsigned char *out, size_t cap)
{
    while (!z->rc && !z->at_end) {
        if (!z->in_left) {
            size_t got = fread(z->in, 1, IN_CHUNK, z->f);
            if (ferror(z->f)) {
                inflater_fail(z, 1, "vmsim replay: cannot read %s: %s\n", strerror(errno));
                return 0;
            }
            if (got == 0) {
                inflater_fail(z, 2, "vmsim replay: %s: the trace is truncated: its compressed body ends before the gzip "
                                    "stream does (was the copy or download cut short?)%s\n", "");
                return 0;
            }
            z->zs.next_in = z->in;
            z->zs.avail_in = (uInt)got;
            z->in_left = got;
        }
        z->zs.next_out = out;
        z->zs.avail_out = (uInt)cap;
        int zr = inflate(&z->zs, Z_NO_FLUSH);
        z->in_left = z->zs.avail_in;
        if (zr != Z_OK && zr != Z_STREAM_END && !(zr == Z_BUF_ERROR && z->zs.avail_out == 0)) {
            inflater_fail(z, 2, "vmsim replay: %s: the trace body is not valid gzip data (%s): the file is corrupt\n",
                          z->zs.msg ? z->zs.msg : "inflate failed");
            return 0;
        }
        if (zr == Z_STREAM_END) {
            z->at_end = true;
            if (z->zs.avail_in || fgetc(z->f) != EOF)
                inflater_fail(z, 2, "vmsim replay: %s: the trace is corrupt: data follows its compressed body%s\n", "");
        }
        size_t n = cap - z->zs.avail_out;
        if (n)
            return n;
    }
    return 0;
}

#endif

/* On threads, the next piece is inflated by a thread that would otherwise wait (mutex
 * held, released meanwhile), if there is room for it and nobody is: no thread of its own,
 * which would take a processor from the scans (0.985x the billion accesses' time, 5
 * pairs); false: nothing done. */
static bool inflate_here(inflater *z)
{
    if (z->inflating || z->finished || z->stop || z->made - z->taken == PIECES)
        return false;
    z->inflating = true;
    pthread_mutex_unlock(&z->mu);
    size_t n = inflate_piece(z, z->piece[z->made % PIECES], RING_PIECE);
    pthread_mutex_lock(&z->mu);
    z->inflating = false;
    if (n) {
        z->len[z->made % PIECES] = n;
        z->state[z->made % PIECES] = PIECE_INFLATED;
        z->made++;
    } else {
        z->finished = true;
    }
    pthread_cond_broadcast(&z->moved);
    return true;
}

/* The newest inflated piece after the next one that nobody scans yet (mutex held), marked
 * as being scanned ahead (the one this thread, scanning in order, reaches last); -1 none. */
static int claim_ahead(inflater *z)
{
    for (uint64_t k = z->made; k-- > z->taken + 1;)
        if (z->state[k % PIECES] == PIECE_INFLATED) {
            z->state[k % PIECES] = PIECE_AHEAD;
            return (int)(k % PIECES);
        }
    return -1;
}

/* Scans slot i ahead (mutex held, released meanwhile). */
static void scan_ahead(inflater *z, int i)
{
    pthread_mutex_unlock(&z->mu);
    vmsim_replay_scan_ahead(z->ahead[i], z->piece[i], z->len[i]);
    pthread_mutex_lock(&z->mu);
    z->state[i] = PIECE_SCANNED_AHEAD;
    pthread_cond_broadcast(&z->moved);
}

static void *scanner_thread(void *arg)
{
    inflater *z = arg;
    pthread_mutex_lock(&z->mu);
    while (!z->stop) {
        if (inflate_here(z))
            continue;
        int i = claim_ahead(z);
        if (i >= 0)
            scan_ahead(z, i);
        else if (z->finished)
            break;
        else
            pthread_cond_wait(&z->moved, &z->mu);
    }
    pthread_mutex_unlock(&z->mu);
    return NULL;
}

/* What pass() set up: zlib's state (where it was), the buffers, the scans ahead. */
static void inflater_free(inflater *z, int made, int ahead)
{
    zin_end(z);
    free(z->in);
    for (int i = 0; i < made; i++)
        free(z->piece[i]);
    for (int i = 0; i < ahead; i++)
        vmsim_replay_ahead_free(z->ahead[i]);
}

/* Inflates the gzip body from the file's body offset and feeds it to the engine piece by
 * piece; with `threaded` and `scanners` (pass 1, feed NULL), as many threads scan pieces
 * ahead that this one then joins to the scan in order, and a thread that would wait
 * inflates the next piece. check: false where pass 1 has verified this file's
 * CRC-32 already. */
static int pass(FILE *f, const char *name, vmsim_replay *r, feed_fn feed, void *ctx, int number, bool progress,
                bool threaded, int scanners, bool check)
{
    if (fseek(f, (long)vmsim_replay_body_offset(r), SEEK_SET) != 0) {
        fprintf(rp_err, "vmsim replay: cannot seek in %s: %s\n", name, strerror(errno));
        return 1;
    }
    if (!threaded || scanners < 0)
        scanners = 0;
    if (scanners > MAX_SCANNERS)
        scanners = MAX_SCANNERS;
    inflater z = {.f = f, .name = name, .check = check, .threaded = threaded};
    int nbuf = threaded ? PIECES : 1, made = 0, ahead = 0;
    z.in = malloc(IN_CHUNK);
    for (; made < nbuf && (z.piece[made] = malloc(threaded ? RING_PIECE : OUT_CHUNK)); made++)
        ;
    for (; scanners && ahead < PIECES && (z.ahead[ahead] = vmsim_replay_ahead_new()); ahead++)
        ;
    bool ok = z.in && made == nbuf && (!scanners || ahead == PIECES) && zin_init(&z, check);
    if (ok && threaded) {
        pthread_mutex_init(&z.mu, NULL);
        pthread_cond_init(&z.moved, NULL);
        for (; z.scanners < scanners; z.scanners++)
            if (pthread_create(&z.sid[z.scanners], NULL, scanner_thread, &z))
                break;      /* fewer scanners: this thread scans ahead too */
    }
    if (!ok) {
        inflater_free(&z, made, ahead);
        fprintf(rp_err, "vmsim replay: out of memory\n");
        return 1;
    }
    int rc = 0;
    double total = vmsim_replay_accesses(r), shown = 0;
    for (;;) {
        const unsigned char *p;
        size_t n;
        const vmsim_replay_ahead *joined = NULL;
        if (threaded) {
            pthread_mutex_lock(&z.mu);
            for (;;) {
                int i = (int)(z.taken % PIECES);
                if (z.taken == z.made) {
                    if (z.finished)
                        break;
                } else if (!scanners || z.state[i] == PIECE_INFLATED) {
                    z.state[i] = PIECE_IN_ORDER;
                    break;
                } else if (z.state[i] == PIECE_SCANNED_AHEAD) {
                    joined = z.ahead[i];
                    break;
                }
                /* the next piece is not inflated yet, or being scanned ahead: inflate, or
                 * else scan another ahead meanwhile */
                if (inflate_here(&z))
                    continue;
                if ((i = claim_ahead(&z)) >= 0) {
                    scan_ahead(&z, i);
                    continue;
                }
                pthread_cond_wait(&z.moved, &z.mu);
            }
            n = z.taken < z.made ? z.len[z.taken % PIECES] : 0;
            p = z.piece[z.taken % PIECES];
            pthread_mutex_unlock(&z.mu);
        } else {
            n = inflate_piece(&z, z.piece[0], OUT_CHUNK);
            p = z.piece[0];
        }
        if (!n) {
            if (z.rc)       /* every piece before the refusal was fed */
                rc = say_inflater(&z);
            break;
        }
        if (feed ? feed(ctx, r, p, n) : vmsim_replay_scan_joined(r, p, n, joined)) {
            fprintf(rp_err, "vmsim replay: %s: %s\n", name, vmsim_replay_error(r));
            rc = 2;
            break;
        }
        if (threaded) {
            pthread_mutex_lock(&z.mu);
            z.taken++;
            pthread_cond_broadcast(&z.moved);
            pthread_mutex_unlock(&z.mu);
        }
        if (progress)
            say_progress(number, vmsim_replay_done(r), total, &shown);
    }
    if (threaded) {
        pthread_mutex_lock(&z.mu);
        z.stop = true;
        pthread_cond_broadcast(&z.moved);
        pthread_mutex_unlock(&z.mu);
        for (int i = 0; i < z.scanners; i++)
            pthread_join(z.sid[i], NULL);
        pthread_mutex_destroy(&z.mu);
        pthread_cond_destroy(&z.moved);
    }
    inflater_free(&z, made, ahead);
    return rc;
}


/* ---- --jobs: pass 2 in chunks ----
 * Pass 1 noted where its decoder stood near each piece's start (vmsim_replay_chunked), so
 * pass 2 cuts the body there into chunks that any thread can decode. Each goes, in order, to
 * whichever thread is free first (a thread on a slower or shared processor takes fewer),
 * which does all of its work where its bytes are in its cache: decodes it
 * into batches and finds their runs; then, in the chunks' order, runs the shared L1s
 * through them (each chunk starts where the chunk before left them); groups their runs by
 * page; and runs each mode over them once the chunk before has been through that mode.
 * So the threads share all of the work but the shared L1s' order, and one chunk's modes
 * run beside the next one's decoding (docs/replay.md, "Pass 2 in chunks"). The body is
 * inflated in order, chunk by chunk, into a ring of slots, by whichever thread would
 * otherwise wait: no thread of its own, which would take a processor from the others. */
#define CHUNK_SLOTS(threads) ((threads) + 2)
#define OWNERS(threads) (4 * (threads) + 4)     /* more than the chunks taken and not done: 2 a thread */
#define MAX_CHUNK_THREADS 64
#define MAX_CHUNK_BATCHES 64
#define CHUNK_BATCHES 2         /* a thread's batches (3 MiB): a chunk of more accesses goes in rounds
                                 * (--chunk-batches: 1 to 64, a check: the same figures) */

typedef struct chunk_pool {
    vmsim_replay *r;
    inflater z;                     /* z.rc, z.msg: a refusal, of chunk failed_at */
    size_t nchunks;
    int threads;
    size_t batches;                 /* each thread's */
    unsigned modes;
    bool progress;
    pthread_mutex_t mu;
    pthread_cond_t *wake;           /* each thread's: its chunk inflated, its turn, the end */
    int nslots;
    unsigned char **slot;
    size_t *slot_chunk;             /* the chunk in each slot, SIZE_MAX: free */
    size_t inflated;                /* chunks inflated (the next one to inflate) */
    bool inflating;                 /* a thread is inflating it */
    size_t failed_at;               /* the chunk the body could not give (SIZE_MAX: none) */
    size_t claimed;                 /* chunks taken by a thread (the next one to take) */
    int *owner;                     /* the thread that took chunk k, at k % OWNERS(threads) */
    size_t sl1_done;                /* chunks through the shared L1s (and checked) */
    size_t mode_done[6];            /* per mode, the chunks it has run */
    bool stop;
    int rc;                         /* 1 (I/O) / 2 (refused): the first in the chunks' order */
    double total, shown;
} chunk_pool;

typedef struct chunk_worker {
    chunk_pool *p;
    int id;
    pthread_t tid;
    vmsim_replay_cursor *c;
    vmsim_replay_batch **b;         /* the batches of its chunk */
    size_t nb, cap;
    /* its next chunk's first round, decoded while it waited for a mode's turn */
    vmsim_replay_batch **ab;
    size_t anb, acap;
    size_t ahead;                   /* that chunk (SIZE_MAX: none) */
    const uint8_t *ahead_q;         /* where its decoding stopped */
    bool ahead_last;                /* it was all of the chunk */
} chunk_worker;

/* Every thread told (mutex held), and with cp_stop, stops; rc: the first status stays. */
static void cp_wake_all(chunk_pool *p)
{
    for (int i = 0; i < p->threads; i++)
        pthread_cond_broadcast(&p->wake[i]);
}

static void cp_stop(chunk_pool *p, int rc)
{
    if (!p->stop)
        p->rc = rc;
    p->stop = true;
    cp_wake_all(p);
}

/* The thread that took chunk k told that something it may wait for moved (mutex held);
 * nobody when no thread has taken it yet (it looks before it waits). */
static void cp_tell(chunk_pool *p, size_t k)
{
    if (k < p->claimed)
        pthread_cond_signal(&p->wake[p->owner[k % (size_t)OWNERS(p->threads)]]);
}

/* The next chunk taken by thread w (mutex held): chunks go to whichever thread is free
 * first, so a thread that runs slower (its processor shared, or a slower core) takes fewer
 * of them instead of holding the others up at every turn. */
static size_t cp_claim(chunk_pool *p, chunk_worker *w)
{
    size_t k = p->claimed++;
    p->owner[k % (size_t)OWNERS(p->threads)] = w->id;
    return k;
}

static const char changed_msg[] = "vmsim replay: %s: the trace's body differed between the two passes (was the file "
                                  "changed while it was replayed?)%s\n";

/* Inflates the next chunk into its slot if nobody is and the slot is free (mutex held,
 * released meanwhile); after the last chunk, checks that the stream ends there. false:
 * nothing to do. */
static bool cp_inflate(chunk_pool *p)
{
    size_t k = p->inflated;
    int s = (int)(k % (size_t)p->nslots);
    if (p->stop || p->inflating || k > p->nchunks || p->failed_at != SIZE_MAX ||
        (k < p->nchunks && p->slot_chunk[s] != SIZE_MAX))
        return false;
    p->inflating = true;
    pthread_mutex_unlock(&p->mu);
    inflater *z = &p->z;
    size_t want = k < p->nchunks ? (size_t)vmsim_replay_chunk_bytes(p->r, k) : 1, got = 0;
    unsigned char extra;
    while (got < want) {
        size_t n = inflate_piece(z, k < p->nchunks ? p->slot[s] + got : &extra, want - got);
        if (!n)
            break;
        got += n;
    }
    bool bad = k < p->nchunks ? got < want : got > 0;
    if (bad && !z->rc) {
        inflater_fail(z, 2, changed_msg, "");
        z->gz = false;
    }
    pthread_mutex_lock(&p->mu);
    p->inflating = false;
    p->inflated = k + 1;
    if (bad || z->rc) {
        p->failed_at = k;
        cp_wake_all(p);
    } else if (k < p->nchunks) {
        p->slot_chunk[s] = k;
        cp_tell(p, k);
        /* the next one to inflate is for its thread, which may sleep for want of it: told */
        cp_tell(p, p->inflated);
    }
    return true;
}

/* Waits (mutex held) for something to move, inflating meanwhile where it can. */
static void cp_wait(chunk_pool *p, chunk_worker *w)
{
    if (!cp_inflate(p))
        pthread_cond_wait(&p->wake[w->id], &p->mu);
}

/* Waits (mutex held) until the chunk before k is through the shared L1s; false: stopped. */
static bool cp_turn(chunk_pool *p, chunk_worker *w, size_t k)
{
    while (!p->stop && p->sl1_done != k)
        cp_wait(p, w);
    return !p->stop;
}

/* The next batches of a chunk, from *q on, decoded with w's cursor into b (at most
 * p->batches; *nb of them), their runs found; true when the chunk is done (the cursor
 * stopped short of the end, or went past what pass 1 counted: cursor_end refuses either). */
static bool chunk_decode(chunk_worker *w, vmsim_replay_batch **b, size_t *nb, const uint8_t **q, const uint8_t *end)
{
    vmsim_replay *r = w->p->r;
    size_t n = 0;
    vmsim_replay_batch_clear(b[0]);
    for (;;) {
        const uint8_t *before = *q;
        size_t got = vmsim_replay_decode_chunk(r, w->c, q, end, b[n]);
        if (vmsim_replay_batch_size(b[n]) == VMSIM_REPLAY_BATCH) {
            vmsim_replay_batch_runs(b[n]);
            if (++n == w->p->batches) {
                *nb = n;
                return *q == end && !vmsim_replay_cursor_carry(w->c);
            }
            vmsim_replay_batch_clear(b[n]);
        } else if (*q == before && !got) {
            break;
        }
    }
    if (vmsim_replay_batch_size(b[n]))
        vmsim_replay_batch_runs(b[n++]);
    *nb = n;
    return true;
}

/* Waits (mutex held) for a mode's turn in a chunk this thread has decoded to its end (its
 * cursor is free): inflates the next chunk where it can; else takes the next chunk, once
 * inflated, and decodes its first round, so that the wait is not lost (a thread held up, in
 * the page by the browser's own threads, then holds the other up less); else sleeps. */
static void cp_wait_ahead(chunk_pool *p, chunk_worker *w)
{
    size_t next = p->claimed;
    int s = (int)(next % (size_t)p->nslots);
    if (w->ahead != SIZE_MAX || next >= p->nchunks || p->slot_chunk[s] != next) {
        cp_wait(p, w);
        return;
    }
    if (cp_inflate(p))
        return;
    w->ahead = cp_claim(p, w);
    pthread_mutex_unlock(&p->mu);
    const uint8_t *q = p->slot[s], *end = q + (size_t)vmsim_replay_chunk_bytes(p->r, next);
    vmsim_replay_cursor_at(p->r, w->c, next);
    w->ahead_last = chunk_decode(w, w->ab, &w->anb, &q, end);
    w->ahead_q = q;
    pthread_mutex_lock(&p->mu);
}

static void *chunk_thread(void *arg)
{
    chunk_worker *w = arg;
    chunk_pool *p = w->p;
    vmsim_replay *r = p->r;
    pthread_mutex_lock(&p->mu);
    while (!p->stop && (w->ahead != SIZE_MAX || p->claimed < p->nchunks)) {
        size_t k = w->ahead != SIZE_MAX ? w->ahead : cp_claim(p, w);
        int s = (int)(k % (size_t)p->nslots);
        while (!p->stop && p->slot_chunk[s] != k && p->failed_at > k)
            cp_wait(p, w);
        if (p->stop)
            break;
        if (p->slot_chunk[s] != k) {
            /* what the body could not give: said after every chunk before */
            if (cp_turn(p, w, k))
                cp_stop(p, say_inflater(&p->z));
            break;
        }
        pthread_mutex_unlock(&p->mu);
        const uint8_t *q = p->slot[s], *end = q + (size_t)vmsim_replay_chunk_bytes(r, k);
        bool ahead = w->ahead == k;         /* its first round decoded while it waited */
        if (!ahead)
            vmsim_replay_cursor_at(r, w->c, k);
        /* a chunk in rounds of at most p->batches batches (mostly one: 64 KiB of body hold
         * 65,536 accesses at most but where a chunk ends a little after it, or where a trace
         * so long that pass 1 noted its chunks further apart); the turns taken in its first
         * round and given on in its last */
        for (bool first = true, last = false; !last; first = false) {
            if (first && ahead) {
                vmsim_replay_batch **t = w->b;
                w->b = w->ab;
                w->ab = t;
                w->nb = w->anb;
                last = w->ahead_last;
                q = w->ahead_q;
                w->ahead = SIZE_MAX;
            } else {
                last = chunk_decode(w, w->b, &w->nb, &q, end);
            }
            pthread_mutex_lock(&p->mu);
            if (last) {
                p->slot_chunk[s] = SIZE_MAX;
                /* the next chunk to inflate goes into this slot: its thread, which may sleep
                 * for want of the slot, told */
                if (!p->inflating && p->inflated % (size_t)p->nslots == (size_t)s)
                    cp_tell(p, p->inflated);
            }
            /* in the chunks' order: what decoding found, and the shared L1s */
            if (first && !cp_turn(p, w, k))
                goto out;
            pthread_mutex_unlock(&p->mu);
            bool bad = last && vmsim_replay_cursor_end(r, w->c) != 0;
            if (bad)
                fprintf(rp_err, "vmsim replay: %s: %s\n", p->z.name, vmsim_replay_error(r));
            for (size_t i = 0; !bad && i < w->nb; i++)
                vmsim_replay_batch_sl1(r, w->b[i]);
            if (last && !bad && p->progress)
                say_progress(2, vmsim_replay_done(r), p->total, &p->shown);
            pthread_mutex_lock(&p->mu);
            if (bad) {
                cp_stop(p, 2);
                goto out;
            }
            if (last) {
                p->sl1_done = k + 1;
                cp_tell(p, k + 1);
            }
            pthread_mutex_unlock(&p->mu);
            for (size_t i = 0; i < w->nb; i++)
                vmsim_replay_batch_group(w->b[i]);
            pthread_mutex_lock(&p->mu);
            /* each mode, once it has run the chunk before */
            for (int m = 0; m < 6; m++) {
                if (!(p->modes >> m & 1))
                    continue;
                while (first && !p->stop && p->mode_done[m] != k) {
                    if (last)       /* its cursor checked: free to decode the next chunk */
                        cp_wait_ahead(p, w);
                    else
                        cp_wait(p, w);
                }
                if (p->stop)
                    goto out;
                pthread_mutex_unlock(&p->mu);
                for (size_t i = 0; i < w->nb; i++)
                    vmsim_replay_run(r, m, w->b[i]);
                pthread_mutex_lock(&p->mu);
                if (last) {
                    p->mode_done[m] = k + 1;
                    cp_tell(p, k + 1);
                }
            }
            pthread_mutex_unlock(&p->mu);
        }
        pthread_mutex_lock(&p->mu);
    }
out:
    /* the last thread through checks the stream's end */
    while (!p->stop && p->inflated <= p->nchunks && cp_inflate(p))
        ;
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Pass 2 on `jobs` threads, in the chunks pass 1 noted. */
static int chunked_pass(FILE *f, const char *name, vmsim_replay *r, int jobs, int batches, bool progress, bool check)
{
    chunk_pool p = {.r = r, .nchunks = vmsim_replay_chunks(r), .modes = vmsim_replay_modes_here(r), .batches = (size_t)batches,
                    .progress = progress, .failed_at = SIZE_MAX, .total = vmsim_replay_accesses(r)};
    p.z = (inflater){.f = f, .name = name};
    if (fseek(f, (long)vmsim_replay_body_offset(r), SEEK_SET) != 0) {
        fprintf(rp_err, "vmsim replay: cannot seek in %s: %s\n", name, strerror(errno));
        return 1;
    }
    if (jobs > MAX_CHUNK_THREADS)
        jobs = MAX_CHUNK_THREADS;
    p.threads = (size_t)jobs > p.nchunks ? (int)p.nchunks : jobs;
    p.nslots = CHUNK_SLOTS(p.threads);
    size_t biggest = 1;
    for (size_t k = 0; k < p.nchunks; k++) {
        size_t bytes = (size_t)vmsim_replay_chunk_bytes(r, k);
        biggest = bytes > biggest ? bytes : biggest;
    }
    chunk_worker w[MAX_CHUNK_THREADS] = {0};
    pthread_cond_t wake[MAX_CHUNK_THREADS];
    int started = 0, made = 0, rc = 1;
    p.wake = wake;
    p.z.in = malloc(IN_CHUNK);
    p.slot = calloc((size_t)p.nslots, sizeof *p.slot);
    p.slot_chunk = malloc((size_t)p.nslots * sizeof *p.slot_chunk);
    p.owner = calloc((size_t)OWNERS(p.threads), sizeof *p.owner);
    bool ok = p.z.in && p.slot && p.slot_chunk && p.owner && zin_init(&p.z, check);     /* pass 1 checked the CRC-32, if it ran */
    for (; ok && made < p.nslots; made++) {
        p.slot_chunk[made] = SIZE_MAX;
        ok = (p.slot[made] = malloc(biggest)) != NULL;
    }
    for (int i = 0; ok && i < p.threads; i++) {
        w[i].ahead = SIZE_MAX;
        ok = (w[i].c = vmsim_replay_cursor_new()) != NULL && (w[i].b = calloc(p.batches, sizeof *w[i].b)) != NULL &&
             (w[i].ab = calloc(p.batches, sizeof *w[i].ab)) != NULL;
        for (; ok && w[i].cap < p.batches; w[i].cap++)
            ok = (w[i].b[w[i].cap] = vmsim_replay_batch_new()) != NULL;
        for (; ok && w[i].acap < p.batches; w[i].acap++)
            ok = (w[i].ab[w[i].acap] = vmsim_replay_batch_new()) != NULL;
    }
    if (!ok) {
        fprintf(rp_err, "vmsim replay: out of memory\n");
        goto out;
    }
    pthread_mutex_init(&p.mu, NULL);
    for (int i = 0; i < p.threads; i++) {
        pthread_cond_init(&wake[i], NULL);
        w[i].p = &p;
        w[i].id = i;
    }
    for (started = 1; started < p.threads; started++)
        if (pthread_create(&w[started].tid, NULL, chunk_thread, &w[started]))
            break;
    if (started < p.threads) {
        pthread_mutex_lock(&p.mu);
        cp_stop(&p, 1);
        pthread_mutex_unlock(&p.mu);
        fprintf(rp_err, "vmsim replay: cannot start a thread: %s\n", strerror(errno));
    }
    chunk_thread(&w[0]);
    for (int i = 1; i < started; i++)
        pthread_join(w[i].tid, NULL);
    if (!p.stop && p.failed_at == p.nchunks)        /* the stream went on after the last chunk */
        p.rc = say_inflater(&p.z);
    rc = p.rc;
    pthread_mutex_destroy(&p.mu);
    for (int i = 0; i < p.threads; i++)
        pthread_cond_destroy(&wake[i]);
out:
    zin_end(&p.z);
    free(p.z.in);
    for (int i = 0; i < made; i++)
        free(p.slot[i]);
    free(p.slot);
    free(p.slot_chunk);
    free(p.owner);
    for (int i = 0; i < MAX_CHUNK_THREADS; i++) {
        vmsim_replay_cursor_free(w[i].c);
        for (size_t j = 0; j < w[i].cap; j++)
            vmsim_replay_batch_free(w[i].b[j]);
        for (size_t j = 0; j < w[i].acap; j++)
            vmsim_replay_batch_free(w[i].ab[j]);
        free(w[i].b);
        free(w[i].ab);
    }
    return rc;
}

/* A whole number from lo to hi into *out; false (and *out as it was) otherwise. */
static bool int_flag(const char *v, long lo, long hi, int *out)
{
    char *end;
    long j = v ? strtol(v, &end, 10) : 0;
    if (!v || *end || end == v || j < lo || j > hi)
        return false;
    *out = (int)j;
    return true;
}

static bool add_number(strbuf *o, const char *key, const char *flag, const char *v, double lo, double hi)
{
    char *end;
    double d = v ? strtod(v, &end) : 0;
    if (!v || *end || end == v || d < lo || d > hi) {
        fprintf(stderr, "vmsim replay: %s needs a number from %g to %g (got %s)\n", flag, lo, hi, v ? v : "nothing");
        return false;
    }
    sb_printf(o, "%s\"%s\":%.17g", o->len > 1 ? "," : "", key, d);
    return true;
}

static bool add_choice(strbuf *o, const char *key, const char *flag, const char *v, const char *const *choices)
{
    for (int i = 0; choices[i]; i++)
        if (v && !strcmp(v, choices[i])) {
            sb_printf(o, "%s\"%s\":\"%s\"", o->len > 1 ? "," : "", key, v);
            return true;
        }
    fprintf(stderr, "vmsim replay: %s must be one of:", flag);
    for (int i = 0; choices[i]; i++)
        fprintf(stderr, " %s", choices[i]);
    fprintf(stderr, "\n");
    return false;
}

/* --machine FILE: a hw-lab result's costs beside the preset's (machine.c). */
static bool add_machine(strbuf *o, const char *path)
{
    if (!path) {
        fprintf(stderr, "vmsim replay: --machine needs a hw-lab result file (results/*.json)\n");
        return false;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "vmsim replay: --machine: cannot open %s: %s\n", path, strerror(errno));
        return false;
    }
    size_t cap = 8u << 20, n = 0;
    char *text = malloc(cap);
    if (text)
        n = fread(text, 1, cap, f);
    bool too_big = text && n == cap;
    fclose(f);
    strbuf m;
    sb_init(&m);
    char err[200];
    bool ok = text && !too_big && machine_option(text, n, &m, err, sizeof err) && !m.oom;
    if (!ok)
        fprintf(stderr, "vmsim replay: --machine %s: %s\n", path,
                !text ? "out of memory" : too_big ? "larger than 8 MiB: not a hw-lab result" : m.oom ? "out of memory" : err);
    else
        sb_puts(o, o->len > 1 ? m.data : m.data + 1);
    sb_free(&m);
    free(text);
    return ok;
}

/* Pass 1's findings kept between two replays of one file (vmsim_replay_scan_save / _load):
 * in, those of a replay before (NULL: none), and whether they were taken; out, this
 * replay's, once it is over (malloc'd), where asked. */
typedef struct kept_scan {
    const uint8_t *in;
    size_t in_len;
    bool used;
    bool want;
    uint8_t *out;
    size_t out_len;
} kept_scan;

/* Whether r took the findings of a replay before in place of pass 1 (keep->used). */
static bool took_scan(vmsim_replay *r, kept_scan *keep, bool progress)
{
    if (!keep || !keep->in || vmsim_replay_scan_load(r, keep->in, keep->in_len))
        return false;
    __atomic_store_n(&keep->used, true, __ATOMIC_RELEASE);     /* read by the page's thread (vmsim_mt_scan_used) */
    if (progress && rp_progress)
        rp_progress(2, 0, vmsim_replay_accesses(r));
    return true;
}

/* The replay of an open trace file (size: its bytes) with the options' JSON: the report to
 * out, refusals to rp_err; 0, 1 (I/O, memory) or 2 (refused). rp_stage says which part
 * refused: 1 the header, 2 the body, 3 its gzip stream. keep: NULL, or pass 1's findings
 * (above); taken, pass 1 is not run, and pass 2 checks the gzip member's CRC-32 itself. */
static int replay_stream(FILE *fp, const char *file, double size, const char *opts, int jobs, int chunk_batches,
                         bool progress, FILE *out, kept_scan *keep)
{
    int rc;
    rp_stage = 0;
    if (progress && !rp_progress)
        rp_started = monotonic_s();
    size_t cap = 16 + 65536;
    uint8_t *head = malloc(cap);
    size_t n = head ? fread(head, 1, cap, fp) : 0;
    vmsim_replay *r = head && opts ? vmsim_replay_open(head, n, size, opts, strlen(opts)) : NULL;
    free(head);
    if (!r) {
        fprintf(rp_err, "vmsim replay: out of memory\n");
        return 1;
    }
    if (vmsim_replay_status(r)) {
        fprintf(rp_err, "vmsim replay: %s: %s\n", file, vmsim_replay_error(r));
        rp_stage = 1;
        rc = 2;
    } else if (jobs > 1 && vmsim_replay_chunked(r)) {
        fprintf(rp_err, "vmsim replay: %s: %s\n", file, vmsim_replay_error(r));
        rc = 2;
    } else if (!(rc = took_scan(r, keep, progress) ? 0 : pass(fp, file, r, NULL, NULL, 1, progress, jobs > 1, jobs - 1, true))) {
        bool check = keep && keep->used;
        if (vmsim_replay_scan_end(r)) {
            fprintf(rp_err, "vmsim replay: %s: %s\n", file, vmsim_replay_error(r));
            rc = 2;
        } else if (!(rc = jobs > 1 && vmsim_replay_chunks(r) > 1
                              ? chunked_pass(fp, file, r, jobs, chunk_batches, progress, check)
                              : pass(fp, file, r, feed_piece, NULL, 2, progress, false, 0, check))) {
            char *text;
            if (vmsim_replay_finish(r, &text)) {
                fprintf(rp_err, "vmsim replay: %s: %s\n", file, vmsim_replay_error(r));
                rc = 2;
            } else {
                fputs(text, out);
                rc = 0;
                if (keep && keep->want && (keep->out_len = vmsim_replay_scan_save(r, NULL, 0)) &&
                    (keep->out = malloc(keep->out_len)))
                    vmsim_replay_scan_save(r, keep->out, keep->out_len);
            }
            vmsim_replay_free_text(text);
        }
    }
    vmsim_replay_close(r);
    return rc;
}

int replay_main(int argc, char **argv)
{
    static const char *const presets[] = {"x86-server", "sunway-1621", NULL}, *const gp[] = {"4k", "2m", NULL},
                             *const hp[] = {"2m", "4k", NULL}, *const st[] = {"cold", "warm", NULL}, *const tb[] = {"built", "on-demand", NULL},
                             *const l1[] = {"shared", "per-mode", NULL},
                             *const fm[] = {"table", "json", "csv", NULL},
                             *const modes[] = {"native", "ept", "npt", "shadow", "flat", "agile", NULL};
    const char *file = NULL;
    bool progress = true, format_set = false;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int jobs = cpus > 0 ? (int)(cpus < 64 ? cpus : 64) : 1, chunk_batches = CHUNK_BATCHES;
    strbuf o;
    sb_init(&o);
    sb_putc(&o, '{');
    int rc = 2;
    rp_err = stderr;
    for (int i = 2; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(f, "-h") || !strcmp(f, "--help")) {
            replay_usage(stdout);
            rc = 0;
            goto out;
        }
        if (!strcmp(f, "--quiet")) {
            progress = false;
            continue;
        }
        if (f[0] != '-' || !f[1]) {
            if (file) {
                fprintf(stderr, "vmsim replay: one trace at a time (got %s and %s)\n", file, f);
                goto out;
            }
            file = f;
            continue;
        }
        i++;
        bool ok;
        if (!strcmp(f, "--jobs")) {
            ok = int_flag(v, 1, MAX_CHUNK_THREADS, &jobs);
            if (!ok)
                fprintf(stderr, "vmsim replay: --jobs needs a number of threads from 1 to 64 (got %s)\n", v ? v : "nothing");
        } else if (!strcmp(f, "--chunk-batches")) {
            ok = int_flag(v, 1, MAX_CHUNK_BATCHES, &chunk_batches);
            if (!ok)
                fprintf(stderr, "vmsim replay: --chunk-batches needs a number from 1 to %d (got %s)\n", MAX_CHUNK_BATCHES,
                        v ? v : "nothing");
        } else if (!strcmp(f, "--modes")) {
            ok = v != NULL;
            sb_puts(&o, o.len > 1 ? ",\"modes\":[" : "\"modes\":[");
            char buf[128];
            snprintf(buf, sizeof buf, "%s", v ? v : "");
            int n = 0;
            for (char *tok = strtok(buf, ","); ok && tok; tok = strtok(NULL, ",")) {
                bool known = false;
                for (int k = 0; modes[k]; k++)
                    known |= !strcmp(tok, modes[k]);
                if (!known) {
                    fprintf(stderr, "vmsim replay: --modes: %s is not a mode; use native, ept, npt, shadow, flat, agile\n", tok);
                    ok = false;
                }
                sb_printf(&o, "%s\"%s\"", n++ ? "," : "", tok);
            }
            if (ok && !n) {
                fprintf(stderr, "vmsim replay: --modes needs a list such as native,ept\n");
                ok = false;
            }
            sb_putc(&o, ']');
        } else if (!strcmp(f, "--preset")) ok = add_choice(&o, "preset", f, v, presets);
        else if (!strcmp(f, "--guest-pages")) ok = add_choice(&o, "guest_pages", f, v, gp);
        else if (!strcmp(f, "--host-pages")) ok = add_choice(&o, "host_pages", f, v, hp);
        else if (!strcmp(f, "--start")) ok = add_choice(&o, "start", f, v, st);
        else if (!strcmp(f, "--tables")) ok = add_choice(&o, "tables", f, v, tb);
        else if (!strcmp(f, "--l1")) ok = add_choice(&o, "l1", f, v, l1);
        else if (!strcmp(f, "--l1-leave-at")) ok = add_number(&o, "l1_leave_at", f, v, 0, 1e15);
        else if (!strcmp(f, "--machine")) ok = add_machine(&o, v);
        else if (!strcmp(f, "--format")) ok = format_set = add_choice(&o, "format", f, v, fm);
        else if (!strcmp(f, "--huge-min")) ok = add_number(&o, "huge_min", f, v, 1, 512);
        else if (!strcmp(f, "--cycles-per-access")) ok = add_number(&o, "cycles_per_access", f, v, 0, 1e6);
        else if (!strcmp(f, "--cycles-per-ref")) ok = add_number(&o, "cycles_per_ref", f, v, 0, 1e6);
        else if (!strcmp(f, "--cycles-per-exit")) ok = add_number(&o, "cycles_per_exit", f, v, 0, 1e9);
        else if (!strcmp(f, "--refill-trap")) ok = add_number(&o, "refill_trap", f, v, 0, 1e6);
        else if (!strcmp(f, "--agile-switch-level")) ok = add_number(&o, "agile_switch_level", f, v, 0, 4);
        else {
            fprintf(stderr, "vmsim replay: unknown option %s (see vmsim replay --help)\n", f);
            ok = false;
        }
        if (!ok)
            goto out;
    }
    if (!file) {
        replay_usage(stderr);
        goto out;
    }
    if (!strcmp(file, "-")) {
        fprintf(stderr, "vmsim replay: give the trace as a file: the replay reads it twice\n");
        goto out;
    }
    if (!format_set)
        sb_puts(&o, o.len > 1 ? ",\"format\":\"table\"" : "\"format\":\"table\"");
    sb_putc(&o, '}');
    const char *opts = o.oom ? NULL : o.data;
    FILE *fp = fopen(file, "rb");
    if (!fp) {
        fprintf(stderr, "vmsim replay: cannot open %s: %s\n", file, strerror(errno));
        rc = 1;
        goto out;
    }
    struct stat sbuf;
    double size = fstat(fileno(fp), &sbuf) == 0 ? (double)sbuf.st_size : 0;
    rc = replay_stream(fp, file, size, opts, jobs, chunk_batches, progress, stdout, NULL);
    fclose(fp);
out:
    sb_free(&o);
    return rc;
}

#ifdef __EMSCRIPTEN__
/* ---- the page's threaded replay (vmsim-mt.mjs: this file built with -pthread) ----
 * The trace's bytes in the module's memory, replayed as `vmsim replay --jobs N` replays a
 * file (the same passes, threads and chunks), on a thread of its own: the page's worker
 * starts it and returns to its event loop (where the module starts the threads), reads
 * the file into the module's memory while the replay starts on it (vmsim_mt_feed: the
 * replay's reads wait for the bytes they ask for), polls the progress and takes the report
 * or the refusal at the end (js/replay-mt.ts). One replay at a time in a module. */
#include <emscripten.h>
#include <emscripten/threading.h>
#include <stdatomic.h>

static struct {
    const uint8_t *bytes;
    size_t len;
    atomic_int fed;         /* bytes the page has put at bytes so far; -1: its read failed */
    size_t at;              /* the replay's place in them (under the FILE's lock) */
    char *opts;
    int jobs, batches;
    pthread_t tid;
    bool started;
    atomic_int finished;
    atomic_int pass;
    _Atomic double done, total;
    int rc, stage;
    char *text, *err;
    size_t text_len, err_len;
    kept_scan keep;         /* pass 1's findings: a replay's before, this one's after */
} mt;

static void mt_progress(int pass, double done, double total)
{
    atomic_store(&mt.total, total);
    atomic_store(&mt.done, done);
    atomic_store(&mt.pass, pass);
}

/* The file as the replay reads it: the bytes at mt.bytes, each read waiting until the page
 * has put there the bytes it asks for (or the file's end). A read the page could not finish
 * is an I/O error (the page says why). */
static ssize_t mt_read(void *cookie, char *buf, size_t size)
{
    (void)cookie;
    if (mt.at >= mt.len || !size)
        return 0;
    size_t want = size < mt.len - mt.at ? size : mt.len - mt.at;
    for (;;) {
        int fed = atomic_load(&mt.fed);
        if (fed < 0) {
            errno = EIO;
            return -1;
        }
        if ((size_t)fed >= mt.at + want)
            break;
        emscripten_futex_wait(&mt.fed, (uint32_t)fed, 1000);      /* told at each piece */
    }
    memcpy(buf, mt.bytes + mt.at, want);
    mt.at += want;
    return (ssize_t)want;
}

static int mt_seek(void *cookie, off_t *off, int whence)
{
    (void)cookie;
    if (whence != SEEK_SET && whence != SEEK_CUR && whence != SEEK_END) {
        errno = EINVAL;
        return -1;
    }
    off_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? (off_t)mt.at : (off_t)mt.len;
    off_t to = base + *off;
    if (to < 0) {
        errno = EINVAL;
        return -1;
    }
    mt.at = (size_t)to;
    *off = to;
    return 0;
}

static void *mt_thread(void *arg)
{
    (void)arg;
    FILE *fp = fopencookie(NULL, "rb", (cookie_io_functions_t){ .read = mt_read, .seek = mt_seek });
    FILE *out = open_memstream(&mt.text, &mt.text_len);
    rp_err = open_memstream(&mt.err, &mt.err_len);
    rp_progress = mt_progress;
    if (!fp || !out || !rp_err)
        mt.rc = 1;
    else
        mt.rc = replay_stream(fp, "trace", (double)mt.len, mt.opts, mt.jobs, mt.batches, true, out, &mt.keep);
    mt.stage = rp_stage;
    if (fp)
        fclose(fp);
    if (out)
        fclose(out);
    if (rp_err)
        fclose(rp_err);
    atomic_store(&mt.finished, 1);
    emscripten_futex_wake(&mt.finished, INT_MAX);      /* the page's worker, if it waits there */
    return NULL;
}

/* Starts the replay of the len bytes of a file at bytes (kept by the caller until
 * vmsim_mt_free; put there by the caller as it reads them, each piece told with
 * vmsim_mt_feed) with the options' JSON on `jobs` threads (chunk_batches: 0 the default).
 * scan: NULL, or pass 1's findings of a replay of the same file before (vmsim_mt_scan),
 * scan_len bytes, kept by the caller until vmsim_mt_free: taken in place of pass 1 where
 * they fit (vmsim_mt_scan_used). 0: started; 1: one is running, or no thread could be
 * started. */
EMSCRIPTEN_KEEPALIVE int vmsim_mt_start(const uint8_t *bytes, size_t len, const char *opts, int jobs, int chunk_batches,
                                        const uint8_t *scan, size_t scan_len)
{
    if (mt.started)
        return 1;
    mt.keep = (kept_scan){.in = scan, .in_len = scan_len, .want = true};
    mt.bytes = bytes;
    mt.len = len;
    mt.at = 0;
    atomic_store(&mt.fed, 0);
    mt.opts = strdup(opts);
    mt.jobs = jobs < 1 ? 1 : jobs > MAX_CHUNK_THREADS ? MAX_CHUNK_THREADS : jobs;
    mt.batches = chunk_batches >= 1 && chunk_batches <= MAX_CHUNK_BATCHES ? chunk_batches : CHUNK_BATCHES;
    atomic_store(&mt.finished, 0);
    atomic_store(&mt.pass, 1);
    atomic_store(&mt.done, 0);
    atomic_store(&mt.total, 0);
    if (!mt.opts || pthread_create(&mt.tid, NULL, mt_thread, NULL)) {
        free(mt.opts);
        mt.opts = NULL;
        return 1;
    }
    mt.started = true;
    return 0;
}

/* The page has put the file's first n bytes at bytes (n at most len); -1: its read of the
 * file failed (the replay's next read waiting for more then fails). */
EMSCRIPTEN_KEEPALIVE void vmsim_mt_feed(int n)
{
    atomic_store(&mt.fed, n < 0 ? -1 : n);
    emscripten_futex_wake(&mt.fed, INT_MAX);
}

EMSCRIPTEN_KEEPALIVE int vmsim_mt_finished(void) { return atomic_load(&mt.finished); }
/* Where that flag is (an int32 the replay's thread notifies when it sets it, for the
 * page's Atomics.waitAsync). */
EMSCRIPTEN_KEEPALIVE const atomic_int *vmsim_mt_finished_at(void) { return &mt.finished; }
EMSCRIPTEN_KEEPALIVE int vmsim_mt_pass(void) { return atomic_load(&mt.pass); }
EMSCRIPTEN_KEEPALIVE double vmsim_mt_done(void) { return atomic_load(&mt.done); }
EMSCRIPTEN_KEEPALIVE double vmsim_mt_total(void) { return atomic_load(&mt.total); }
/* Once finished: 0, 1 (memory) or 2 (refused); which part refused (1 the header, 2 the
 * body); the report; the refusal's lines. */
EMSCRIPTEN_KEEPALIVE int vmsim_mt_status(void) { return mt.rc; }
EMSCRIPTEN_KEEPALIVE int vmsim_mt_stage(void) { return mt.stage; }
EMSCRIPTEN_KEEPALIVE const char *vmsim_mt_text(void) { return mt.text ? mt.text : ""; }
EMSCRIPTEN_KEEPALIVE const char *vmsim_mt_error(void) { return mt.err ? mt.err : ""; }
/* Whether the replay took the findings it was given in place of pass 1 (known once its
 * pass 2 has begun); once it is done, its own pass 1's findings for another replay of the
 * file (vmsim_replay_scan_save), and their bytes (0: none, as after a refusal). */
EMSCRIPTEN_KEEPALIVE int vmsim_mt_scan_used(void) { return __atomic_load_n(&mt.keep.used, __ATOMIC_ACQUIRE); }
EMSCRIPTEN_KEEPALIVE const uint8_t *vmsim_mt_scan(void) { return mt.keep.out; }
EMSCRIPTEN_KEEPALIVE size_t vmsim_mt_scan_bytes(void) { return mt.keep.out ? mt.keep.out_len : 0; }

/* After vmsim_mt_finished: the replay's thread joined and what it kept freed; another may start. */
EMSCRIPTEN_KEEPALIVE void vmsim_mt_free(void)
{
    if (!mt.started)
        return;
    pthread_join(mt.tid, NULL);
    free(mt.opts);
    free(mt.text);
    free(mt.err);
    free(mt.keep.out);
    memset(&mt, 0, sizeof mt);
}
#endif

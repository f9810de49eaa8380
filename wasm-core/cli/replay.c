/* vmsim replay FILE: a recorded trace (hw-lab/run trace) through every mode, one line per
 * mode (docs/replay.md). The body is inflated with zlib in pieces and fed to the engine
 * twice; nothing is held but the pieces. Exit status: 0 ok, 1 I/O error, 2 a refused
 * trace or option (one line on stderr). */
#define _GNU_SOURCE     /* syscall(SYS_gettid): a worker thread's own priority */
#include "vmsim_replay.h"
#include "replay_cli.h"
#include "../src/json.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#endif
#include <zlib.h>

#define IN_CHUNK (256u << 10)
#define OUT_CHUNK (1u << 20)

static void replay_usage(FILE *f)
{
    fprintf(f, "usage: vmsim replay FILE [--modes native,ept,npt,shadow,flat,agile] [--preset x86-server|sunway-1621]\n"
               "                   [--guest-pages 4k|2m] [--huge-min N] [--host-pages 2m|4k] [--start cold|warm]\n"
               "                   [--tables built|on-demand] [--machine HW-LAB-RESULT.json]\n"
               "                   [--format table|json|csv] [--cycles-per-access C] [--cycles-per-ref C]\n"
               "                   [--cycles-per-exit C] [--refill-trap C] [--agile-switch-level 0-4] [--jobs N] [--quiet]\n"
               "                   [--l1 shared|per-mode] [--l1-leave-at N]\n"
               "  replays a trace recorded with hw-lab/run trace through every mode and prints a row per mode\n"
               "  (references per access, TLB misses, walks, exits by kind, modelled cycles); see\n"
               "  wasm-core/docs/replay.md. --jobs N: the modes on N threads (default: the processors;\n"
               "  1: one mode after another), the same figures; --l1 per-mode: each mode keeps its own L1\n"
               "  data and instruction caches instead of sharing them where the modes agree (the same figures,\n"
               "  slower); --l1-leave-at N: each mode leaves the shared L1s before its Nth access (a check:\n"
               "  the same figures)\n");
}

typedef int (*feed_fn)(void *ctx, vmsim_replay *, const uint8_t *, size_t);

static int feed_piece(void *ctx, vmsim_replay *r, const uint8_t *p, size_t n)
{
    (void)ctx;
    return vmsim_replay_feed(r, p, n);
}

/* ---- the body inflated: in this thread, or on a thread of its own ----
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
    z_stream zs;
    unsigned char *in;
    size_t in_left;                 /* bytes of in not yet given to inflate */
    bool at_end;                    /* the gzip stream ended: no more pieces */
    int rc;                         /* 0, or 1 (I/O) / 2 (refused) with msg */
    char msg[256];
    /* on a thread: a ring of pieces between it and the consumer */
    bool threaded;
    pthread_t tid;
    pthread_mutex_t mu;
    pthread_cond_t moved;           /* a piece made or taken, the end, a stop */
    unsigned char *piece[PIECES];
    size_t len[PIECES];
    uint64_t made, taken;
    /* pass 1: pieces after the next one scanned ahead (vmsim_replay_scan_ahead) by the
     * scanning threads, and by this one while the next is being scanned ahead */
    int scanners;
    pthread_t sid[MAX_SCANNERS];
    uint8_t state[PIECES];          /* PIECE_INFLATED .. */
    vmsim_replay_ahead *ahead[PIECES];
    bool finished;                  /* the thread made its last piece (or failed: rc) */
    bool stop;                      /* the consumer refused a piece: the thread stops */
} inflater;

static void inflater_fail(inflater *z, int rc, const char *fmt, const char *detail)
{
    z->rc = rc;
    snprintf(z->msg, sizeof z->msg, fmt, z->name, detail);
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

static void *inflater_thread(void *arg)
{
    inflater *z = arg;
    for (;;) {
        pthread_mutex_lock(&z->mu);
        while (z->made - z->taken == PIECES && !z->stop)
            pthread_cond_wait(&z->moved, &z->mu);
        bool stop = z->stop;
        pthread_mutex_unlock(&z->mu);
        if (stop)
            break;
        unsigned char *out = z->piece[z->made % PIECES];
        size_t n = inflate_piece(z, out, OUT_CHUNK);
        pthread_mutex_lock(&z->mu);
        if (n) {
            z->len[z->made % PIECES] = n;
            z->state[z->made % PIECES] = PIECE_INFLATED;
            z->made++;
        } else {
            z->finished = true;
        }
        pthread_cond_broadcast(&z->moved);
        pthread_mutex_unlock(&z->mu);
        if (!n)
            break;
    }
    return NULL;
}

/* The first inflated piece after the next one that nobody scans yet (mutex held), marked
 * as being scanned ahead; -1 none. */
static int claim_ahead(inflater *z)
{
    for (uint64_t k = z->taken + 1; k < z->made; k++)
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
    if (z->zs.state)
        inflateEnd(&z->zs);
    free(z->in);
    for (int i = 0; i < made; i++)
        free(z->piece[i]);
    for (int i = 0; i < ahead; i++)
        vmsim_replay_ahead_free(z->ahead[i]);
}

/* Inflates the gzip body from the file's body offset and feeds it to the engine piece by
 * piece; with `threaded`, the inflating runs on a thread of its own beside the feeding,
 * and with `scanners` (pass 1, feed NULL) as many threads scan pieces ahead that this one
 * then joins to the scan in order. check: false where pass 1 has verified this file's
 * CRC-32 already. */
static int pass(FILE *f, const char *name, vmsim_replay *r, feed_fn feed, void *ctx, int number, bool progress,
                bool threaded, int scanners, bool check)
{
    if (fseek(f, (long)vmsim_replay_body_offset(r), SEEK_SET) != 0) {
        fprintf(stderr, "vmsim replay: cannot seek in %s: %s\n", name, strerror(errno));
        return 1;
    }
    if (!threaded || scanners < 0)
        scanners = 0;
    if (scanners > MAX_SCANNERS)
        scanners = MAX_SCANNERS;
    inflater z = {.f = f, .name = name, .check = check, .threaded = threaded};
    int nbuf = threaded ? PIECES : 1, made = 0, ahead = 0;
    z.in = malloc(IN_CHUNK);
    for (; made < nbuf && (z.piece[made] = malloc(OUT_CHUNK)); made++)
        ;
    for (; scanners && ahead < PIECES && (z.ahead[ahead] = vmsim_replay_ahead_new()); ahead++)
        ;
    bool ok = z.in && made == nbuf && (!scanners || ahead == PIECES) && inflateInit2(&z.zs, 16 + MAX_WBITS) == Z_OK;
    if (ok && !check)
        inflateValidate(&z.zs, 0);
    if (ok && threaded) {
        pthread_mutex_init(&z.mu, NULL);
        pthread_cond_init(&z.moved, NULL);
        if (pthread_create(&z.tid, NULL, inflater_thread, &z)) {
            pthread_mutex_destroy(&z.mu);
            pthread_cond_destroy(&z.moved);
            threaded = z.threaded = false;      /* no thread to be had: inflate here */
            scanners = 0;
        }
        for (; z.scanners < scanners; z.scanners++)
            if (pthread_create(&z.sid[z.scanners], NULL, scanner_thread, &z))
                break;      /* fewer scanners: this thread scans ahead too */
    }
    if (!ok) {
        inflater_free(&z, made, ahead);
        fprintf(stderr, "vmsim replay: out of memory\n");
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
                } else if ((i = claim_ahead(&z)) >= 0) {
                    scan_ahead(&z, i);      /* the next piece is being scanned ahead: another meanwhile */
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
            if (z.rc) {     /* every piece before the refusal was fed */
                fputs(z.msg, stderr);
                rc = z.rc;
            }
            break;
        }
        if (feed ? feed(ctx, r, p, n) : vmsim_replay_scan_joined(r, p, n, joined)) {
            fprintf(stderr, "vmsim replay: %s: %s\n", name, vmsim_replay_error(r));
            rc = 2;
            break;
        }
        if (threaded) {
            pthread_mutex_lock(&z.mu);
            z.taken++;
            pthread_cond_broadcast(&z.moved);
            pthread_mutex_unlock(&z.mu);
        }
        double done = vmsim_replay_done(r);
        if (progress && total > 0 && done - shown >= total / 10) {
            shown = done;
            fprintf(stderr, "vmsim replay: pass %d: %.0f%%\n", number, 100.0 * done / total);
        }
    }
    if (threaded) {
        pthread_mutex_lock(&z.mu);
        z.stop = true;
        pthread_cond_broadcast(&z.moved);
        pthread_mutex_unlock(&z.mu);
        pthread_join(z.tid, NULL);
        for (int i = 0; i < z.scanners; i++)
            pthread_join(z.sid[i], NULL);
        pthread_mutex_destroy(&z.mu);
        pthread_cond_destroy(&z.moved);
    }
    inflater_free(&z, made, ahead);
    return rc;
}


/* ---- --jobs: pass 2 on threads ----
 * This thread inflates and decodes the body once, into a ring of batches; the workers take
 * (mode, batch) pairs: each mode goes through the batches in order, and a free worker
 * takes the mode furthest behind that no other worker holds, so that the modes share the
 * processors whatever each one costs. A batch is reused once every mode is past it. */
#define RING 8
#define WORKER_NICE 5       /* the workers' niceness over the decoding thread's */

typedef struct pool {
    vmsim_replay *r;
    pthread_mutex_t mu;
    pthread_cond_t wake;            /* a batch published, a mode released, the end */
    vmsim_replay_batch *slot[RING];
    uint64_t published;             /* batches ready: 0 .. published-1 */
    uint64_t next[6];               /* per mode, the next batch it runs */
    bool busy[6];
    unsigned modes;
    bool ended;                     /* no batch will be published after `published` */
    bool stop;                      /* the body was refused: the workers stop where they are */
    vmsim_replay_batch *filling;    /* the batch this thread decodes into (slot published % RING) */
} pool;

static uint64_t slowest(const pool *p)
{
    uint64_t m = UINT64_MAX;
    for (int k = 0; k < 6; k++)
        if (p->modes >> k & 1 && p->next[k] < m)
            m = p->next[k];
    return m;
}

static void *worker(void *arg)
{
    pool *p = arg;
#ifdef __linux__
    /* Below the decoding thread, which every mode waits for: on a machine with fewer cores
     * than threads it then keeps its core, and the modes take what is left (on 2 cores,
     * the billion-access replay 0.89x the wall time, docs/replay.md). Best effort: a
     * refusal leaves the thread as it was. */
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, 0);
    if (!errno)
        setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice + WORKER_NICE);
#endif
    pthread_mutex_lock(&p->mu);
    while (!p->stop) {
        int pick = -1;
        for (int k = 0; k < 6; k++)
            if (p->modes >> k & 1 && !p->busy[k] && p->next[k] < p->published && (pick < 0 || p->next[k] < p->next[pick]))
                pick = k;
        if (pick < 0) {
            bool all_done = p->ended;
            for (int k = 0; k < 6 && all_done; k++)
                all_done = !(p->modes >> k & 1) || p->next[k] == p->published;
            if (all_done)
                break;
            pthread_cond_wait(&p->wake, &p->mu);
            continue;
        }
        p->busy[pick] = true;
        vmsim_replay_batch *b = p->slot[p->next[pick] % RING];
        pthread_mutex_unlock(&p->mu);
        vmsim_replay_run(p->r, pick, b);
        pthread_mutex_lock(&p->mu);
        p->next[pick]++;
        p->busy[pick] = false;
        pthread_cond_broadcast(&p->wake);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Grouping a batch's runs by page (vmsim_replay_batch_group) costs this thread about a
 * sixth of its time and saves the modes more than that: it is done while the slowest mode
 * is this many batches behind or more, when the modes, not this thread, hold the replay
 * (docs/replay.md, "Runs by page on threads"). */
#define GROUP_AHEAD 2

/* The batch being filled is handed to the workers; waits for the next slot to be free. */
static void publish(pool *p)
{
    vmsim_replay_batch_seal(p->r, p->filling);
    pthread_mutex_lock(&p->mu);
    uint64_t ahead = p->published - slowest(p);
    pthread_mutex_unlock(&p->mu);
    if (ahead >= GROUP_AHEAD)
        vmsim_replay_batch_group(p->filling);
    pthread_mutex_lock(&p->mu);
    p->published++;
    pthread_cond_broadcast(&p->wake);
    while (p->published - slowest(p) >= RING)
        pthread_cond_wait(&p->wake, &p->mu);
    p->filling = p->slot[p->published % RING];
    pthread_mutex_unlock(&p->mu);
    vmsim_replay_batch_clear(p->filling);
}

static int decode_piece(void *ctx, vmsim_replay *r, const uint8_t *q, size_t n)
{
    pool *p = ctx;
    const uint8_t *end = q + n;
    for (;;) {
        const uint8_t *before = q;
        size_t got = vmsim_replay_decode(r, &q, end, p->filling);
        if (vmsim_replay_status(r))
            return vmsim_replay_status(r);
        if (vmsim_replay_batch_size(p->filling) == VMSIM_REPLAY_BATCH)
            publish(p);
        else if (q == before && !got)
            return 0;
    }
}

/* Pass 2 with `jobs` workers (at most one per mode). */
static int threaded_pass(FILE *f, const char *name, vmsim_replay *r, int jobs, bool progress)
{
    pool p = {.r = r, .modes = vmsim_replay_modes_here(r)};
    int nmodes = __builtin_popcount(p.modes);
    if (jobs > nmodes)
        jobs = nmodes;
    pthread_t tid[6];
    int started = 0, rc = 1;
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.wake, NULL);
    for (int i = 0; i < RING; i++)
        if (!(p.slot[i] = vmsim_replay_batch_new())) {
            fprintf(stderr, "vmsim replay: out of memory\n");
            goto out;
        }
    p.filling = p.slot[0];
    for (; started < jobs; started++)
        if (pthread_create(&tid[started], NULL, worker, &p)) {
            fprintf(stderr, "vmsim replay: cannot start a thread: %s\n", strerror(errno));
            break;
        }
    rc = started ? pass(f, name, r, decode_piece, &p, 2, progress, true, 0, false) : 1;
    pthread_mutex_lock(&p.mu);
    if (!rc && vmsim_replay_batch_size(p.filling)) {
        vmsim_replay_batch_seal(r, p.filling);
        p.published++;
    }
    p.stop = rc != 0;
    p.ended = true;
    pthread_cond_broadcast(&p.wake);
    pthread_mutex_unlock(&p.mu);
out:
    for (int i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    for (int i = 0; i < RING; i++)
        vmsim_replay_batch_free(p.slot[i]);
    pthread_mutex_destroy(&p.mu);
    pthread_cond_destroy(&p.wake);
    return rc;
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
    int jobs = cpus > 0 ? (int)(cpus < 64 ? cpus : 64) : 1;
    strbuf o;
    sb_init(&o);
    sb_putc(&o, '{');
    int rc = 2;
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
            char *end;
            long j = v ? strtol(v, &end, 10) : 0;
            ok = v && !*end && end != v && j >= 1 && j <= 64;
            if (!ok)
                fprintf(stderr, "vmsim replay: --jobs needs a number of threads from 1 to 64 (got %s)\n", v ? v : "nothing");
            else
                jobs = (int)j;
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
    size_t cap = 16 + 65536;
    uint8_t *head = malloc(cap);
    size_t n = head ? fread(head, 1, cap, fp) : 0;
    vmsim_replay *r = head && opts ? vmsim_replay_open(head, n, size, opts, strlen(opts)) : NULL;
    free(head);
    if (!r) {
        fprintf(stderr, "vmsim replay: out of memory\n");
        fclose(fp);
        rc = 1;
        goto out;
    }
    if (vmsim_replay_status(r)) {
        fprintf(stderr, "vmsim replay: %s: %s\n", file, vmsim_replay_error(r));
        rc = 2;
    } else if (!(rc = pass(fp, file, r, NULL, NULL, 1, progress, jobs > 1, jobs - 1, true))) {
        if (vmsim_replay_scan_end(r)) {
            fprintf(stderr, "vmsim replay: %s: %s\n", file, vmsim_replay_error(r));
            rc = 2;
        } else if (!(rc = jobs > 1 ? threaded_pass(fp, file, r, jobs, progress)
                                   : pass(fp, file, r, feed_piece, NULL, 2, progress, false, 0, false))) {
            char *text;
            if (vmsim_replay_finish(r, &text)) {
                fprintf(stderr, "vmsim replay: %s: %s\n", file, vmsim_replay_error(r));
                rc = 2;
            } else {
                fputs(text, stdout);
                rc = 0;
            }
            vmsim_replay_free_text(text);
        }
    }
    vmsim_replay_close(r);
    fclose(fp);
out:
    sb_free(&o);
    return rc;
}

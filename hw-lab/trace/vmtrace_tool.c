/* vmtrace: a valgrind tool that records every memory access of a program straight into the
 * body of a vmemlab trace (wasm-core/docs/replay.md, "The trace format"), uncompressed.
 *
 *   VALGRIND_LIB=build/vgtool valgrind --tool=vmtrace --body-fd=N --info-fd=M [--limit=N] PROGRAM
 *
 * It sees the same accesses as lackey --trace-mem=yes, in the same order: one instruction
 * fetch per guest instruction, then its loads and stores; a store that comes right after
 * a load of the same size from the same address expression is one modify, as lackey
 * merges them (add [m], r; a compare-and-swap); a dirty helper's memory effect is a load,
 * a store or a modify. Instead of printing a line per access through valgrind's
 * printf (lackey), each translated block calls one small helper per group of accesses
 * (its fetches and up to five data accesses), which encodes them (page deltas and offsets
 * as varints; the fetch records were encoded when the block was translated: "a group's
 * plan" below) into a buffer written to --body-fd in one write when full.
 *
 * --info-fd gets text lines for hw-lab/run: "progress N" about once a second (N accesses
 * so far), then one JSON line at the end: the counts, the distinct pages, the threads, the
 * forks, whether the limit, an exec or the end of the program ended the body, and the
 * program's exit code. valgrind runs one thread at a time, so the accesses of all threads
 * are one stream in the order they ran (which thread runs after a system call is up to
 * timing, as under lackey). A child made by fork is not recorded (it drops
 * what it inherited and closes both descriptors); when the program execs another program
 * the body ends there, as the program valgrind started is gone. */
#include "pub_tool_basics.h"
#include "pub_tool_tooliface.h"
#include "libvex_ir.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcproc.h"
#include "pub_tool_hashtable.h"
#include "pub_tool_machine.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_options.h"
#include "pub_tool_vki.h"
#include "pub_tool_vkiscnums.h"

/* valgrind's core moves a descriptor above the range the program may use (as it does with
 * --log-fd), so that the program cannot close or reuse it. Not in the tool headers. */
extern Int VG_(safe_fd)(Int oldfd);

#define PAGE_SHIFT 12
#define CODE_ESCAPE 30u
#define CODE_CONTROL 31u

enum { K_LOAD = 0, K_STORE = 1, K_FETCH = 2, K_MODIFY = 3 };

static Long clo_body_fd = -1, clo_info_fd = -1, clo_limit = 0;
static Bool clo_text = False;       /* lackey's text instead of the body: the tests compare them */

/* ---- the recording side: buffer, encoder, distinct pages ---- */

/* The body goes out in buffers of OUTCAP bytes, with room for one 16-byte copy past the end
 * (a run of fixed records is copied 16 bytes at a time; put fills to OUTEND). Where the body
 * descriptor is a pipe, a full buffer's pages go into the pipe themselves (vmsplice), not a
 * copy, and the tool fills the next of NBUF buffers: the copy into the pipe was a tenth of
 * the tool's time with igzip reading the other end (hw-lab/README.md). A buffer is filled
 * again only once its bytes have been read out of the pipe. That holds for a reader that
 * reads (copies) them, as igzip and hw-lab/run do; one that spliced them on to another
 * pipe would see them change. Elsewhere (a file), or without VT_SPLICE, it writes. */
#define OUTCAP (1u << 20)
#define OUTEND (OUTCAP + 16)
#define NBUF 4
static UChar outbufs[NBUF][OUTCAP + 4096] __attribute__((aligned(4096)));
static UChar *outbuf = outbufs[0];
static UInt outlen, curbuf;
static ULong sent;                  /* body bytes spliced into the pipe so far */
static ULong sent_after[NBUF];      /* `sent` once each buffer was last handed over */
static Int splicing;                /* 0: not tried yet, 1: vmsplice, -1: write */
#ifdef VT_SPLICE
/* valgrind's own system call (coregrind/pub_core_syscall.h), for vmsplice and FIONREAD */
extern SysRes VG_(do_syscall)(UWord, UWord, UWord, UWord, UWord, UWord, UWord, UWord, UWord);
#endif

static Bool active = True;          /* False in a forked child and after the body ended */
/* A group whose accesses would bring the total to this takes the slow path: the limit, or 0
 * when the body has ended (not active), or never. */
static ULong stop_at = ~0ULL;
static ULong total, counts[4];
static ULong last_page[2], last_off[2], last_seen[2] = {~0ULL, ~0ULL};   /* [0] data, [1] fetches */
static UInt threads, forks;         /* threads: valgrind announces the first one too */
static UInt last_progress_ms;
static Bool limit_reached, ended_at_exec, write_failed;

/* hw-lab/run is gone or the pipe broke: stop recording, let the program end. */
static void body_failed(void)
{
    write_failed = True;
    active = False;
    stop_at = 0;
}

static void write_all(Int fd, const void *p, UInt n)
{
    const UChar *b = p;
    while (n && !write_failed) {
        Int w = VG_(write)(fd, b, n);
        if (w <= 0) {
            body_failed();
            return;
        }
        b += w;
        n -= (UInt)w;
    }
}

#ifdef VT_SPLICE
/* The bytes the pipe holds that its reader has not read; -1 when it cannot say. */
static Long unread_in_pipe(Int fd)
{
    Int n = 0;
    SysRes r = VG_(do_syscall)(__NR_ioctl, (UWord)fd, VKI_FIONREAD, (UWord)&n, 0, 0, 0, 0, 0);
    return sr_isError(r) ? -1 : n;
}

/* p[0..n) into the pipe by vmsplice; False where fd is not a pipe (nothing handed over). */
static Bool splice_out(Int fd, const UChar *p, UInt n)
{
    while (n && !write_failed) {
        struct vki_iovec v = {(void *)p, n};
        SysRes r = VG_(do_syscall)(__NR_vmsplice, (UWord)fd, (UWord)&v, 1, 0, 0, 0, 0, 0);
        if (sr_isError(r) && splicing == 0 && sr_Err(r) != VKI_EPIPE)
            return False;
        if (sr_isError(r) || sr_Res(r) == 0) {
            body_failed();
            break;
        }
        splicing = 1;
        p += sr_Res(r);
        n -= (UInt)sr_Res(r);
        sent += sr_Res(r);
    }
    /* The next buffer is filled once the reader has read past its bytes: the pipe then
     * holds fewer than were handed over since (it reads in order). With NBUF buffers and
     * a pipe of at most a buffer, that is so at once after a full buffer. */
    sent_after[curbuf] = sent;
    UInt next = (curbuf + 1) % NBUF;
    for (;;) {
        Long left = unread_in_pipe(fd);
        if (write_failed || (left >= 0 && (ULong)left <= sent - sent_after[next]))
            break;
        if (left < 0 && !sent_after[next]) {
            splicing = -1;      /* it cannot say: written from a buffer never handed over */
            break;
        }
        VG_(poll)(NULL, 0, 1);
    }
    curbuf = next;
    outbuf = outbufs[next];
    return True;
}
#endif

static void hand_over(Int fd, const UChar *p, UInt n)
{
#ifdef VT_SPLICE
    if (splicing >= 0) {
        if (splice_out(fd, p, n))
            return;
        splicing = -1;
    }
#endif
    write_all(fd, p, n);    /* a copy: the buffer may be filled again at once */
}

static void info_line(const HChar *line);

/* Writes the body so far; says the progress about once a second (the buffer fills every
 * few milliseconds at full speed). */
static void flush_out(void)
{
    if (outlen)
        hand_over((Int)clo_body_fd, outbuf, outlen);
    outlen = 0;
    if (clo_text || !active)
        return;
    UInt now = VG_(read_millisecond_timer)();
    if (now - last_progress_ms >= 1000) {
        HChar line[40];
        VG_(snprintf)(line, sizeof line, "progress %llu\n", total);
        info_line(line);
        last_progress_ms = now;
    }
}

static inline void put(UChar b)
{
    if (UNLIKELY(outlen == OUTEND))
        flush_out();
    outbuf[outlen++] = b;
}

static inline void put_varint(ULong v)
{
    while (v >= 0x80) {
        put((UChar)(v | 0x80));
        v >>= 7;
    }
    put((UChar)v);
}

static inline ULong zigzag(Long v)
{
    return ((ULong)v << 1) ^ (ULong)(v >> 63);
}

/* The distinct pages: open addressing on page + 1, behind a small cache of the pages last
 * looked up (the data stream goes back and forth between a few pages: the stack, the heap). */
static ULong *set;
static ULong set_cap, set_used;
#define RECENT 256
static ULong recent[RECENT];

static void set_add(ULong page)
{
    if ((set_used + 1) * 2 > set_cap) {
        ULong ncap = set_cap ? set_cap * 2 : 65536;
        ULong *n = VG_(calloc)("vmtrace.pages", ncap, sizeof *n);
        for (ULong i = 0; i < set_cap; i++)
            if (set[i]) {
                ULong j = (set[i] * 0x9E3779B97F4A7C15ULL >> 20) & (ncap - 1);
                while (n[j])
                    j = (j + 1) & (ncap - 1);
                n[j] = set[i];
            }
        if (set)
            VG_(free)(set);
        set = n;
        set_cap = ncap;
    }
    ULong key = page + 1, j = (key * 0x9E3779B97F4A7C15ULL >> 20) & (set_cap - 1);
    recent[page & (RECENT - 1)] = key;
    while (set[j] && set[j] != key)
        j = (j + 1) & (set_cap - 1);
    if (!set[j]) {
        set[j] = key;
        set_used++;
    }
}

static void info_line(const HChar *line)
{
    write_all((Int)clo_info_fd, line, (UInt)VG_(strlen)(line));
}

static void count_all_runs(void);

static void write_summary(Int exit_code, Bool have_exit)
{
    count_all_runs();
    HChar line[600];
    VG_(snprintf)(line, sizeof line,
                  "{\"accesses\":%llu,\"counts\":{\"load\":%llu,\"store\":%llu,\"fetch\":%llu,\"modify\":%llu},"
                  "\"pages\":%llu,\"limit_reached\":%s,\"ended_at_exec\":%s,\"threads\":%u,\"forks\":%u,"
                  "\"body_spliced\":%s,\"write_failed\":%s,\"exit_code\":",
                  total, counts[K_LOAD], counts[K_STORE], counts[K_FETCH], counts[K_MODIFY], set_used,
                  limit_reached ? "true" : "false", ended_at_exec ? "true" : "false", threads, forks,
                  splicing > 0 ? "true" : "false", write_failed ? "true" : "false");
    HChar tail[40];
    if (have_exit)
        VG_(snprintf)(tail, sizeof tail, "%d}\n", exit_code);
    else
        VG_(strcpy)(tail, "null}\n");
    info_line(line);
    info_line(tail);
}

/* Ends the body: the end record with the number of accesses, then the summary line. */
static void end_body(Int exit_code, Bool have_exit)
{
    if (!clo_text) {
        put((UChar)(CODE_CONTROL << 3));
        put_varint(total);
    }
    flush_out();
    write_summary(exit_code, have_exit);
    active = False;
    stop_at = 0;
}

/* One access, from the stream's state (its last page and offset, and the last page put in
 * the set of distinct pages). Most are one byte (same page, offset within +-14 of the
 * stream's last one): that case does no other work. */
typedef struct {
    ULong page, off, seen;
} Stream;

static inline __attribute__((always_inline)) UChar *enc(UChar *o, UInt kind, Stream *st, Addr a)
{
    ULong page = a >> PAGE_SHIFT, off = a & ((1u << PAGE_SHIFT) - 1);
    Long dp = (Long)(page - st->page);
    ULong od = zigzag((Long)off - (Long)st->off);
    st->off = off;
    if (LIKELY(!dp && od < CODE_ESCAPE)) {
        *o++ = (UChar)(kind | (UInt)od << 3);
        return o;
    }
    *o++ = (UChar)(kind | (dp ? 4u : 0u) | ((od < CODE_ESCAPE ? (UInt)od : CODE_ESCAPE) << 3));
    if (dp) {
        ULong v = zigzag(dp);
        while (v >= 0x80) {
            *o++ = (UChar)(v | 0x80);
            v >>= 7;
        }
        *o++ = (UChar)v;
        st->page = page;
    }
    if (od >= CODE_ESCAPE) {
        ULong v = od;
        while (v >= 0x80) {
            *o++ = (UChar)(v | 0x80);
            v >>= 7;
        }
        *o++ = (UChar)v;
    }
    if (page != st->seen) {
        if (recent[page & (RECENT - 1)] != page + 1)
            set_add(page);
        st->seen = page;
    }
    return o;
}

/* ---- a group's plan, made once when valgrind translates a block ----
 *
 * A translated block calls one helper per group of accesses: every instruction fetch up to
 * the group's fifth data access, with the data accesses' addresses as arguments. The fetch
 * addresses are constants of the block, and after its first fetch so is the fetch stream's
 * last page and offset (nothing else runs between the groups of a block: a side exit ends
 * it, the next block starts afresh). So every fetch record but a block's first is encoded
 * once, at translation, into the plan as bytes, and a run of them is copied; only the data
 * records and the block's first fetch are encoded as the program runs.
 *
 * The plan's ops, one byte each, then their operands:
 *   0, 1, 3   a data access (load, store, modify): encode the next argument
 *   2         the block's first fetch: its address (8 bytes) follows, encoded from the state
 *   4         fixed records: a length L (1..16), then L bytes
 *   5         a page the fixed fetches enter: its number (8 bytes), for the distinct pages
 *   6         end */
enum { OP_FETCH = 2, OP_BYTES = 4, OP_PAGE = 5, OP_END = 6 };
#define MAX_ARGS 5

typedef struct {
    UInt n;                 /* accesses */
    UInt c[4];              /* of each kind */
    ULong runs;             /* times it ran: the counts of each kind are summed from them at the end */
    UInt maxout;            /* bytes it writes at most */
    Bool has_fetch;
    /* Most groups take a straight path instead of the ops: the block's first fetch or none,
     * then for each data access i the fixed bytes before it (chunk i, up to 16) and the
     * access; then the fixed bytes after the last (chunk nd). Not when a chunk is longer
     * or the fixed fetches enter more than four pages. */
    Bool simple, first;
    UChar dkind[MAX_ARGS], clen[MAX_ARGS + 1];
    UChar chunk[MAX_ARGS + 1][16];
    Addr first_addr;
    UInt npages;
    ULong pages[4];         /* pages the fixed fetches enter, put in the set on the first run */
    ULong fpage, foff;      /* the fetch stream's state after the group */
    UChar *kinds;           /* each access's kind, for the limit's path: n of them */
    Addr *fetch_addr;       /* each fetch's address, in order */
    UChar ops[];            /* the ops, then 16 bytes of room for the copies */
} Plan;

/* The accesses that reach the limit, one at a time; ends the body and the program. */
static void __attribute__((noinline)) plan_limit(const Plan *t, const HWord *arg)
{
    ULong m = (ULong)clo_limit - total;
    Stream st[2] = {{last_page[0], last_off[0], last_seen[0]}, {last_page[1], last_off[1], last_seen[1]}};
    UInt f = 0;
    for (UInt i = 0; i < t->n && i < m; i++) {
        if (outlen + 32 > OUTCAP)
            flush_out();
        UInt k = t->kinds[i];
        outlen = (UInt)(enc(outbuf + outlen, k, &st[k == K_FETCH], k == K_FETCH ? t->fetch_addr[f++] : *arg++) - outbuf);
        counts[k]++;
        total++;
    }
    limit_reached = True;
    end_body(0, False);
    VG_(exit)(0);
}

/* The ops, for the groups that are not simple. */
static void __attribute__((noinline)) run_ops(const Plan *t, const HWord *arg)
{
    UChar *o = outbuf + outlen;
    /* The state in locals: stores through o could change globals as far as the compiler knows. */
    Stream d = {last_page[0], last_off[0], last_seen[0]};
    const UChar *p = t->ops;
    for (;;) {
        UInt op = *p++;
        if (op == OP_BYTES) {
            UInt len = *p;
            __builtin_memcpy(o, p + 1, 16);
            o += len;
            p += 1 + len;
        } else if (op < 4 && op != OP_FETCH) {
            o = enc(o, op, &d, *arg++);
        } else if (op == OP_FETCH) {
            Addr a;
            __builtin_memcpy(&a, p, 8);
            p += 8;
            Stream f = {last_page[1], last_off[1], last_seen[1]};
            o = enc(o, K_FETCH, &f, a);
            last_seen[1] = f.seen;
        } else if (op == OP_PAGE) {
            ULong page;
            __builtin_memcpy(&page, p, 8);
            p += 8;
            if (page != last_seen[1]) {
                set_add(page);
                last_seen[1] = page;
            }
        } else {
            break;
        }
    }
    outlen = (UInt)(o - outbuf);
    last_page[0] = d.page;
    last_off[0] = d.off;
    last_seen[0] = d.seen;
}

/* One group: nd (a constant in each helper) data addresses in arg. */
static inline __attribute__((always_inline)) void run_plan(Plan *t, const HWord *arg, const UInt nd)
{
    if (UNLIKELY(total + t->n >= stop_at)) {
        if (!active)
            return;
        plan_limit(t, arg);
    }
    if (UNLIKELY(outlen + t->maxout > OUTCAP))
        flush_out();
    if (LIKELY(t->simple)) {
        if (UNLIKELY(!t->runs))
            for (UInt i = 0; i < t->npages; i++)
                set_add(t->pages[i]);
        UChar *o = outbuf + outlen;
        if (t->first) {
            Stream f = {last_page[1], last_off[1], last_seen[1]};
            o = enc(o, K_FETCH, &f, t->first_addr);
            last_seen[1] = f.seen;
        }
        Stream d = {last_page[0], last_off[0], last_seen[0]};
#pragma GCC unroll 5
        for (UInt i = 0; i < nd; i++) {
            __builtin_memcpy(o, t->chunk[i], 16);
            o += t->clen[i];
            o = enc(o, t->dkind[i], &d, arg[i]);
        }
        __builtin_memcpy(o, t->chunk[nd], 16);
        o += t->clen[nd];
        outlen = (UInt)(o - outbuf);
        last_page[0] = d.page;
        last_off[0] = d.off;
        last_seen[0] = d.seen;
    } else {
        run_ops(t, arg);
    }
    if (t->has_fetch) {
        last_page[1] = t->fpage;
        last_off[1] = t->foff;
        last_seen[1] = t->fpage;    /* in the set: the first fetch's page, or one of pages[] */
    }
    total += t->n;
    t->runs++;
}

/* The helpers the instrumented code calls: a plan and up to five data addresses. */
static void rec0(HWord t) { run_plan((Plan *)t, NULL, 0); }
static void rec1(HWord t, HWord a) { HWord v[1] = {a}; run_plan((Plan *)t, v, 1); }
static void rec2(HWord t, HWord a, HWord b) { HWord v[2] = {a, b}; run_plan((Plan *)t, v, 2); }
static void rec3(HWord t, HWord a, HWord b, HWord c) { HWord v[3] = {a, b, c}; run_plan((Plan *)t, v, 3); }
static void rec4(HWord t, HWord a, HWord b, HWord c, HWord d)
{
    HWord v[4] = {a, b, c, d};
    run_plan((Plan *)t, v, 4);
}
static void rec5(HWord t, HWord a, HWord b, HWord c, HWord d, HWord e)
{
    HWord v[5] = {a, b, c, d, e};
    run_plan((Plan *)t, v, 5);
}

/* --text=yes: lackey's lines ("I  addr,size", " L addr,size", ...), one per access, with the
 * size, so that a test can compare them with lackey's log line for line. */
static void rec_text(HWord a, HWord ks)
{
    static const HChar head[4][3] = {" L ", " S ", "I  ", " M "};
    if (!active)
        return;
    if (clo_limit && total == (ULong)clo_limit) {
        limit_reached = True;
        flush_out();
        write_summary(0, False);
        VG_(exit)(0);
    }
    if (UNLIKELY(outlen + 64 > OUTEND))
        flush_out();
    UInt kind = (UInt)(ks & 3);
    HChar tmp[24];
    Int n = 0;
    ULong v = a;
    do {
        tmp[n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    while (n < 8)
        tmp[n++] = '0';
    VG_(memcpy)(outbuf + outlen, head[kind], 3);
    outlen += 3;
    while (n)
        outbuf[outlen++] = (UChar)tmp[--n];
    outlen += (UInt)VG_(sprintf)((HChar *)outbuf + outlen, ",%lu\n", (UWord)(ks >> 2));
    counts[kind]++;
    total++;
}

/* ---- instrumentation: the events of a block, in lackey's order ---- */

/* In text mode, lackey's groups of four (its flush points do not change what it merges,
 * but the text path is kept as lackey's); in the body, up to MAX_ARGS data accesses with
 * any number of fetches. */
#define N_EVENTS 4
#define MAX_EVENTS 256

typedef struct {
    UInt kind;
    IRExpr *addr;
    Int size;
    IRExpr *guard;      /* NULL: always */
} Event;

static Event events[MAX_EVENTS];
static Int events_used, data_used;

/* The fetch stream's state at this point of the block being instrumented, once its first
 * fetch is planned. */
static Bool fetch_known;
static Addr fetch_last;

/* The plans of one translation, freed when valgrind discards it (a program that keeps
 * making code, or a full translation table, would otherwise grow them without end). */
typedef struct PlanList {
    struct PlanList *next;
    UWord key;              /* the translation's address (closure->nraddr) */
    Plan **plans;
    UInt n, cap;
} PlanList;

static VgHashTable *plan_lists;
static PlanList *cur_plans;

/* Adds what a plan's runs did to the counts of each kind. */
static void count_runs(Plan *t)
{
    for (Int k = 0; k < 4; k++)
        counts[k] += t->runs * t->c[k];
    t->runs = 0;
}

static void free_plans(PlanList *pl)
{
    for (UInt i = 0; i < pl->n; i++) {
        count_runs(pl->plans[i]);
        VG_(free)(pl->plans[i]);
    }
    if (pl->plans)
        VG_(free)(pl->plans);
    VG_(free)(pl);
}

static void count_all_runs(void)
{
    if (!plan_lists)
        return;
    VG_(HT_ResetIter)(plan_lists);
    PlanList *pl;
    while ((pl = VG_(HT_Next)(plan_lists)))
        for (UInt i = 0; i < pl->n; i++)
            count_runs(pl->plans[i]);
}

static void vt_discard(Addr orig_addr, VexGuestExtents vge)
{
    (void)vge;
    PlanList *pl = VG_(HT_remove)(plan_lists, (UWord)orig_addr);
    if (pl)
        free_plans(pl);
}

static void put_varint_at(UChar *b, UInt *n, ULong v)
{
    while (v >= 0x80) {
        b[(*n)++] = (UChar)(v | 0x80);
        v >>= 7;
    }
    b[(*n)++] = (UChar)v;
}

/* The plan of events[i .. i+n-1], in order; advances the block's fetch state. */
static Plan *make_plan(const Event *ev, Int n)
{
    /* each event: at most 9 bytes of op, or 13 fixed bytes (in OP_BYTES chunks) + a page op */
    UChar ops[MAX_EVENTS * 28 + 32], fixed[16];
    UInt len = 0, nfixed = 0, maxout = 0, nfetch = 0, c[4] = {0, 0, 0, 0};
    for (Int e = 0; e < n; e++) {
        c[ev[e].kind]++;
        nfetch += ev[e].kind == K_FETCH;
    }
    UChar kinds[MAX_EVENTS];
    Addr faddr[MAX_EVENTS];
    nfetch = 0;
    /* the straight path's layout, beside the ops */
    Bool simple = True, first = False;
    UInt npages = 0;
    ULong pages[4];
    Addr first_addr = 0;
    UInt nd = 0;
    UChar dkind[MAX_ARGS], clen[MAX_ARGS + 1] = {0};
    UChar chunk[MAX_ARGS + 1][16];
    VG_(memset)(chunk, 0, sizeof chunk);
#define FLUSH_FIXED() do { if (nfixed) { ops[len++] = OP_BYTES; ops[len++] = (UChar)nfixed; \
        VG_(memcpy)(ops + len, fixed, nfixed); len += nfixed; nfixed = 0; } } while (0)
    for (Int e = 0; e < n; e++) {
        UInt k = ev[e].kind;
        kinds[e] = (UChar)k;
        if (k != K_FETCH) {
            FLUSH_FIXED();
            ops[len++] = (UChar)k;
            maxout += 13;
            tl_assert(nd < MAX_ARGS);
            dkind[nd++] = (UChar)k;
            continue;
        }
        Addr a = (Addr)ev[e].addr->Iex.Const.con->Ico.U64;
        faddr[nfetch++] = a;
        if (!fetch_known) {
            FLUSH_FIXED();
            ops[len++] = OP_FETCH;
            VG_(memcpy)(ops + len, &a, 8);
            len += 8;
            maxout += 13;
            if (e == 0) {
                first = True;
                first_addr = a;
            } else {
                simple = False;
            }
        } else {
            ULong page = a >> PAGE_SHIFT, off = a & ((1u << PAGE_SHIFT) - 1);
            ULong lpage = fetch_last >> PAGE_SHIFT, loff = fetch_last & ((1u << PAGE_SHIFT) - 1);
            Long dp = (Long)(page - lpage);
            ULong od = zigzag((Long)off - (Long)loff);
            UChar rec[16];
            UInt r = 0;
            rec[r++] = (UChar)(K_FETCH | (dp ? 4u : 0u) | ((od < CODE_ESCAPE ? (UInt)od : CODE_ESCAPE) << 3));
            if (dp)
                put_varint_at(rec, &r, zigzag(dp));
            if (od >= CODE_ESCAPE)
                put_varint_at(rec, &r, od);
            for (UInt b = 0; b < r; b++) {
                if (nfixed == 16)
                    FLUSH_FIXED();
                fixed[nfixed++] = rec[b];
                if (clen[nd] < 16)
                    chunk[nd][clen[nd]] = rec[b];
                else
                    simple = False;
                clen[nd]++;
            }
            maxout += r;
            if (dp) {
                if (npages < 4)
                    pages[npages] = page;
                else
                    simple = False;
                npages++;
                FLUSH_FIXED();
                ops[len++] = OP_PAGE;
                VG_(memcpy)(ops + len, &page, 8);
                len += 8;
            }
        }
        fetch_known = True;
        fetch_last = a;
    }
    FLUSH_FIXED();
#undef FLUSH_FIXED
    ops[len++] = OP_END;
    VG_(memset)(ops + len, 0, 16);
    /* one block: the plan, its ops and their room, the fetch addresses, the kinds */
    SizeT at_fetch = (sizeof(Plan) + len + 16 + 7) & ~(SizeT)7;
    Plan *t = VG_(malloc)("vmtrace.plan", at_fetch + nfetch * sizeof(Addr) + (SizeT)n);
    t->fetch_addr = (Addr *)((UChar *)t + at_fetch);
    t->kinds = (UChar *)(t->fetch_addr + nfetch);
    VG_(memcpy)(t->fetch_addr, faddr, nfetch * sizeof(Addr));
    VG_(memcpy)(t->kinds, kinds, (SizeT)n);
    t->n = (UInt)n;
    t->runs = 0;
    for (Int k = 0; k < 4; k++)
        t->c[k] = c[k];
    t->maxout = maxout;
    t->has_fetch = nfetch > 0;
    t->simple = simple;
    t->first = first;
    t->first_addr = first_addr;
    t->npages = npages < 4 ? npages : 4;
    VG_(memcpy)(t->pages, pages, t->npages * sizeof(ULong));
    VG_(memcpy)(t->dkind, dkind, nd);
    VG_(memset)(t->dkind + nd, 0, MAX_ARGS - nd);
    VG_(memcpy)(t->clen, clen, sizeof clen);
    VG_(memcpy)(t->chunk, chunk, sizeof chunk);
    t->fpage = fetch_last >> PAGE_SHIFT;
    t->foff = fetch_last & ((1u << PAGE_SHIFT) - 1);
    VG_(memcpy)(t->ops, ops, len + 16);
    if (cur_plans->n == cur_plans->cap) {
        UInt cap = cur_plans->cap ? cur_plans->cap * 2 : 4;
        Plan **np = VG_(malloc)("vmtrace.planlist", cap * sizeof *np);
        if (cur_plans->n)
            VG_(memcpy)(np, cur_plans->plans, cur_plans->n * sizeof *np);
        if (cur_plans->plans)
            VG_(free)(cur_plans->plans);
        cur_plans->plans = np;
        cur_plans->cap = cap;
    }
    cur_plans->plans[cur_plans->n++] = t;
    return t;
}

static void flush_text(IRSB *sb)
{
    for (Int i = 0; i < events_used; i++) {
        IRDirty *di = unsafeIRDirty_0_N(0, "vmtrace_rec_text", VG_(fnptr_to_fnentry)(rec_text),
                                        mkIRExprVec_2(events[i].addr,
                                                      mkIRExpr_HWord(events[i].kind | (HWord)events[i].size << 2)));
        if (events[i].guard)
            di->guard = events[i].guard;
        addStmtToIRSB(sb, IRStmt_Dirty(di));
    }
}

/* One call per run of unguarded events (any fetches, up to five data accesses), one per
 * guarded event. */
static void flush_events(IRSB *sb)
{
    Int i = 0;
    if (clo_text) {
        flush_text(sb);
        events_used = data_used = 0;
        return;
    }
    while (i < events_used) {
        Int j = i;
        if (!events[i].guard)
            while (j + 1 < events_used && !events[j + 1].guard)
                j++;
        Plan *t = make_plan(events + i, j - i + 1);
        IRExpr *a[MAX_ARGS + 1];
        Int na = 0;
        a[na++] = mkIRExpr_HWord((HWord)t);
        for (Int e = i; e <= j; e++)
            if (events[e].kind != K_FETCH)
                a[na++] = events[e].addr;
        tl_assert(na <= MAX_ARGS + 1);
        IRExpr **argv;
        const HChar *name;
        void *fn;
        switch (na - 1) {
        case 0: argv = mkIRExprVec_1(a[0]); name = "vmtrace_rec0"; fn = rec0; break;
        case 1: argv = mkIRExprVec_2(a[0], a[1]); name = "vmtrace_rec1"; fn = rec1; break;
        case 2: argv = mkIRExprVec_3(a[0], a[1], a[2]); name = "vmtrace_rec2"; fn = rec2; break;
        case 3: argv = mkIRExprVec_4(a[0], a[1], a[2], a[3]); name = "vmtrace_rec3"; fn = rec3; break;
        case 4: argv = mkIRExprVec_5(a[0], a[1], a[2], a[3], a[4]); name = "vmtrace_rec4"; fn = rec4; break;
        default: argv = mkIRExprVec_6(a[0], a[1], a[2], a[3], a[4], a[5]); name = "vmtrace_rec5"; fn = rec5; break;
        }
        IRDirty *di = unsafeIRDirty_0_N(0, name, VG_(fnptr_to_fnentry)(fn), argv);
        if (events[i].guard)
            di->guard = events[i].guard;
        addStmtToIRSB(sb, IRStmt_Dirty(di));
        i = j + 1;
    }
    events_used = data_used = 0;
}

static void add_event(IRSB *sb, UInt kind, IRExpr *addr, Int size, IRExpr *guard)
{
    if (clo_text ? events_used == N_EVENTS
                 : events_used == MAX_EVENTS || (kind != K_FETCH && data_used == MAX_ARGS))
        flush_events(sb);
    data_used += kind != K_FETCH;
    events[events_used].kind = kind;
    events[events_used].addr = addr;
    events[events_used].size = size;
    events[events_used].guard = guard;
    events_used++;
}

/* A store right after an unguarded load of the same size from the same address is one
 * modify, as lackey counts it. */
static void add_store(IRSB *sb, IRExpr *addr, Int size)
{
    if (events_used > 0) {
        Event *last = &events[events_used - 1];
        if (last->kind == K_LOAD && last->size == size && !last->guard && eqIRAtom(last->addr, addr)) {
            last->kind = K_MODIFY;
            return;
        }
    }
    add_event(sb, K_STORE, addr, size, NULL);
}

static IRSB *vt_instrument(VgCallbackClosure *closure, IRSB *sbIn, const VexGuestLayout *layout,
                           const VexGuestExtents *vge, const VexArchInfo *archinfo_host,
                           IRType gWordTy, IRType hWordTy)
{
    (void)layout; (void)vge; (void)archinfo_host;
    if (gWordTy != hWordTy)
        VG_(tool_panic)("host/guest word size mismatch");
    IRTypeEnv *tyenv = sbIn->tyenv;
    IRSB *sbOut = deepCopyIRSBExceptStmts(sbIn);
    Int i = 0;
    while (i < sbIn->stmts_used && sbIn->stmts[i]->tag != Ist_IMark)
        addStmtToIRSB(sbOut, sbIn->stmts[i++]);
    events_used = data_used = 0;
    fetch_known = False;
    if (!clo_text) {
        /* valgrind discards a translation before it makes another at the same address. Should
         * one still be there (a translation made and not kept), its plans stay with the new
         * ones until the address is discarded: one that may still run is never freed. */
        cur_plans = VG_(HT_lookup)(plan_lists, (UWord)closure->nraddr);
        if (!cur_plans) {
            cur_plans = VG_(calloc)("vmtrace.planlist", 1, sizeof *cur_plans);
            cur_plans->key = (UWord)closure->nraddr;
            VG_(HT_add_node)(plan_lists, cur_plans);
        }
    }
    for (; i < sbIn->stmts_used; i++) {
        IRStmt *st = sbIn->stmts[i];
        if (!st || st->tag == Ist_NoOp)
            continue;
        switch (st->tag) {
        case Ist_IMark:
            add_event(sbOut, K_FETCH, mkIRExpr_HWord((HWord)st->Ist.IMark.addr), (Int)st->Ist.IMark.len, NULL);
            break;
        case Ist_WrTmp: {
            IRExpr *data = st->Ist.WrTmp.data;
            if (data->tag == Iex_Load)
                add_event(sbOut, K_LOAD, data->Iex.Load.addr, sizeofIRType(data->Iex.Load.ty), NULL);
            break;
        }
        case Ist_Store:
            add_store(sbOut, st->Ist.Store.addr, sizeofIRType(typeOfIRExpr(tyenv, st->Ist.Store.data)));
            break;
        case Ist_StoreG: {
            IRStoreG *sg = st->Ist.StoreG.details;
            add_event(sbOut, K_STORE, sg->addr, sizeofIRType(typeOfIRExpr(tyenv, sg->data)), sg->guard);
            break;
        }
        case Ist_LoadG: {
            IRLoadG *lg = st->Ist.LoadG.details;
            IRType ty = Ity_INVALID, wide = Ity_INVALID;
            typeOfIRLoadGOp(lg->cvt, &wide, &ty);
            add_event(sbOut, K_LOAD, lg->addr, sizeofIRType(ty), lg->guard);
            break;
        }
        case Ist_Dirty: {
            IRDirty *d = st->Ist.Dirty.details;
            if (d->mFx != Ifx_None) {
                if (d->mFx == Ifx_Read || d->mFx == Ifx_Modify)
                    add_event(sbOut, K_LOAD, d->mAddr, d->mSize, NULL);
                if (d->mFx == Ifx_Write || d->mFx == Ifx_Modify)
                    add_store(sbOut, d->mAddr, d->mSize);
            }
            break;
        }
        case Ist_CAS: {
            IRCAS *cas = st->Ist.CAS.details;
            Int size = sizeofIRType(typeOfIRExpr(tyenv, cas->dataLo)) * (cas->dataHi ? 2 : 1);
            add_event(sbOut, K_LOAD, cas->addr, size, NULL);
            add_store(sbOut, cas->addr, size);
            break;
        }
        case Ist_LLSC:
            if (st->Ist.LLSC.storedata == NULL) {
                add_event(sbOut, K_LOAD, st->Ist.LLSC.addr, sizeofIRType(typeOfIRTemp(tyenv, st->Ist.LLSC.result)), NULL);
                flush_events(sbOut);        /* nothing between a load-linked and its store */
            } else {
                add_store(sbOut, st->Ist.LLSC.addr, sizeofIRType(typeOfIRExpr(tyenv, st->Ist.LLSC.storedata)));
            }
            break;
        case Ist_Exit:
            flush_events(sbOut);            /* what ran before a side exit, before it */
            break;
        default:
            break;
        }
        addStmtToIRSB(sbOut, st);
    }
    flush_events(sbOut);
    return sbOut;
}

/* ---- threads, children, exec, the end ---- */

static void vt_thread_create(ThreadId tid, ThreadId child)
{
    (void)tid; (void)child;
    threads++;
}

static void vt_fork_child(ThreadId tid)
{
    (void)tid;
    /* The child's copy of the buffer is the parent's to write, not the child's. */
    outlen = 0;
    active = False;
    stop_at = 0;
    VG_(close)((Int)clo_body_fd);
    VG_(close)((Int)clo_info_fd);
}

static void vt_fork_parent(ThreadId tid)
{
    (void)tid;
    forks++;
}

static void vt_pre_syscall(ThreadId tid, UInt sysno, UWord *args, UInt nargs)
{
    (void)tid; (void)args; (void)nargs;
    if (active && (sysno == __NR_execve || sysno == __NR_execveat)) {
        /* The program valgrind started is about to be replaced: its trace ends here. */
        ended_at_exec = True;
        end_body(0, False);
    }
}

static void vt_post_syscall(ThreadId tid, UInt sysno, UWord *args, UInt nargs, SysRes res)
{
    (void)tid; (void)sysno; (void)args; (void)nargs; (void)res;
}

static void vt_fini(Int exitcode)
{
    if (active) {
        end_body(exitcode, True);
    }
}

static Bool vt_process_cmd_line_option(const HChar *arg)
{
    if VG_BINT_CLO(arg, "--body-fd", clo_body_fd, 0, 1 << 20) {}
    else if VG_BINT_CLO(arg, "--info-fd", clo_info_fd, 0, 1 << 20) {}
    else if VG_BINT_CLO(arg, "--limit", clo_limit, 0, 1LL << 40) {}
    else if VG_BOOL_CLO(arg, "--text", clo_text) {}
    else
        return False;
    return True;
}

static void vt_print_usage(void)
{
    VG_(printf)("    --body-fd=N    write the trace body (wasm-core/docs/replay.md) to descriptor N\n"
                "    --info-fd=N    write progress lines and the closing summary to descriptor N\n"
                "    --limit=N      stop the program after N accesses [0: no limit]\n"
                "    --text=yes     write lackey's text lines (with sizes) instead of the body [no]\n");
}

static void vt_print_debug_usage(void)
{
    VG_(printf)("    (none)\n");
}

static void vt_post_clo_init(void)
{
    if (clo_body_fd < 0 || clo_info_fd < 0)
        VG_(fmsg_bad_option)("--body-fd / --info-fd", "vmtrace needs both descriptors (hw-lab/run trace passes them)\n");
    struct vg_stat st;
    if (VG_(fstat)((Int)clo_body_fd, &st) != 0 || VG_(fstat)((Int)clo_info_fd, &st) != 0)
        VG_(fmsg_bad_option)("--body-fd / --info-fd", "the descriptors are not open\n");
    Bool same = clo_info_fd == clo_body_fd;
    clo_body_fd = VG_(safe_fd)((Int)clo_body_fd);
    clo_info_fd = same ? clo_body_fd : VG_(safe_fd)((Int)clo_info_fd);
    last_progress_ms = VG_(read_millisecond_timer)();
    plan_lists = VG_(HT_construct)("vmtrace.plans");
    if (clo_limit)
        stop_at = (ULong)clo_limit;
}

static void vt_pre_clo_init(void)
{
    VG_(details_name)("vmtrace");
    VG_(details_version)(NULL);
    VG_(details_description)("vmemlab's recorder of memory accesses");
    VG_(details_copyright_author)("vmemlab (MIT)");
    VG_(details_bug_reports_to)("the vmemlab repository");
    VG_(details_avg_translation_sizeB)(200);
    VG_(basic_tool_funcs)(vt_post_clo_init, vt_instrument, vt_fini);
    VG_(needs_command_line_options)(vt_process_cmd_line_option, vt_print_usage, vt_print_debug_usage);
    VG_(needs_syscall_wrapper)(vt_pre_syscall, vt_post_syscall);
    VG_(needs_superblock_discards)(vt_discard);
    VG_(track_pre_thread_ll_create)(vt_thread_create);
    VG_(atfork)(NULL, vt_fork_parent, vt_fork_child);
}

VG_DETERMINE_INTERFACE_VERSION(vt_pre_clo_init)

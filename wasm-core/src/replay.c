/* Replaying a recorded trace through every mode (docs/replay.md). Pass 1 decodes the body
 * and collects the pages the program touched (with the kinds of access each saw); the
 * guest's tables are then built for exactly those pages, once per mode, with the
 * preset's caches; pass 2 decodes the body again and translates every access in every
 * mode, counting what the engine reports. Memory depends on the pages touched, never on
 * the trace's length, and nothing is allocated per access. */
#include "vmsim_replay.h"
#include "cache.h"
#include "cost_params.h"
#include "dcache.h"
#include "experiment.h"
#include "json.h"
#include "model.h"
#include "trace.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __EMSCRIPTEN__
#include <emscripten.h>
#define EXPORT EMSCRIPTEN_KEEPALIVE
#else
#define EXPORT
#endif

/* The layout of the guest (docs/replay.md, "The machine"). */
#define GUEST_TABLE_BASE 0x1000000ull       /* 16 MiB: guest page tables */
#define DATA_GPA 0x4000000ull               /* 64 MiB: the program's pages from here */
#define HOST_BASE 0x100000000ull            /* guest RAM at 4 GiB of host memory */
#define HOST_TABLES 0x800000000ull          /* nested, shadow or flat tables */
#define MAX_PAGES (1u << 20)                /* 4 GiB of distinct 4 KiB pages */
#define MAX_TABLE_FRAMES 4096u              /* guest page tables per mode (16 MiB) */
#define MAX_GUEST_RAM (8ull << 30)          /* what the layout may need: the flat table stays 16 MiB */
_Static_assert(HOST_TABLES + (16ull << 30) < DCACHE_HPA_LIMIT, "the data caches tell every host address apart");
#define SLOT_PAGES (1u << 19)               /* 4 KiB frames per mapping of a memory slot (scenario.c takes 2^20) */
#define BATCH 8192u                /* the one-thread replay's batch (replay.md, "The one-thread replay's batch") */

enum { M_NATIVE, M_EPT, M_NPT, M_SHADOW, M_FLAT, M_AGILE, N_REPLAY_MODES };
static const char *const replay_mode_names[] = {"native", "ept", "npt", "shadow", "flat", "agile"};
/* The modes a replay runs unless told: agile only when asked for (a trace has no
 * page-table writes, so agile's VMM keeps its switch where the option puts it). */
#define DEFAULT_REPLAY_MODES ((1u << M_AGILE) - 1)
static const char *const preset_names[] = {"x86-server", "sunway-1621"};
static const char *const kind_names[] = {"load", "store", "fetch", "modify"};
enum { EXIT_HPF, EXIT_PT_WRITE, EXIT_CR3, EXIT_REFLECTED, EXIT_EPT_VIOLATION, EXIT_EPT_MISCONFIG, EXIT_NPT_FAULT,
       EXIT_FLAT_FILL, N_EXIT_KINDS };
static const char *const exit_kind_names[] = {"hidden_page_fault", "pt_write", "cr3_write", "reflected_page_fault",
                                              "ept_violation", "ept_misconfig", "npt_fault", "flat_fill"};

enum { FMT_JSON, FMT_TABLE, FMT_CSV };

typedef struct replay_opts {
    unsigned modes;                 /* bit per mode: the modes the report covers */
    unsigned part;                  /* bit per mode: the modes this handle replays (the others' counts are merged in) */
    int preset;                     /* 0 x86-server, 1 sunway-1621 */
    bool guest_2m, host_4k, warm;
    bool on_demand;                 /* tables filled on demand (model.md 5, "Tables at the start") */
    uint32_t huge_min;
    int format;
    double cycles_per_access, cycles_per_ref, cycles_per_exit, refill_trap;
    bool flat_ref;                  /* cycles_per_ref given: every reference costs it, wherever found */
    bool mine;                      /* "machine": the learner's machine's costs, beside the preset's */
    double mine_exit, mine_ref;     /* < 0: not measured, the preset's stands */
    char mine_label[128], mine_exit_from[160], mine_ref_from[200];
    bool mine_in_vm;
    double where[DC_WHERE + 1];     /* cycles of a reference found in L1, L2, LLC, memory, a walk cache */
    double exit_kind[8];            /* cycles of an exit by kind (exit_kind_names) */
    int agile_switch_level;         /* mode agile: guest levels walked nested (0 all shadow .. 4 all nested) */
    bool l1_per_mode;               /* "l1": "per-mode": each mode's L1 data cache kept by the mode (the same
                                       figures as the shared L1: a check of it) */
    uint64_t l1_leave_at;           /* "l1_leave_at" N: each mode leaves the shared L1s before its Nth access
                                       (the same figures: a check of the leaving; 0 never) */
} replay_opts;

/* Pages whose last access in a mode was answered by its TLB, and the TLB line that
 * answered. Until that TLB is filled again (any access it does not answer may fill it),
 * another access of the same kind to the page is answered by the same line: the replay
 * then only marks the line used, as the lookup would, and counts a hit. This is the
 * TLB's own behaviour, taken without a call per access (tests/engine/test_replay.py
 * checks every counter against `vmsim run`). */
#define MEMO_SLOTS 1024u
typedef struct tlb_memo {
    uint64_t key;           /* page | gen << 36 (pages are below 2^35) */
    uint32_t ops;           /* bit per vm_op that hit */
    uint64_t *age;          /* the line's age in the TLB (cache.h) */
    uint64_t hpa_page;      /* where the page is in host memory (for the data caches) */
} tlb_memo;
#define MEMO_KEY(page, gen) ((page) | (uint64_t)(gen) << 36)

typedef struct mode_memo {
    uint32_t gen;           /* bumped whenever the TLB may have been filled */
    tlb_memo slot[MEMO_SLOTS];
} mode_memo;

/* ---- One L1 data cache for the modes (replay.md, "One L1 for the modes") ----
 * A program's loads and stores are the same accesses in every mode, and an L1 set is
 * picked by the line's place within its page (64 sets of 64-byte lines: the page's 4 KiB),
 * so as long as a mode's pages sit at distinct host pages, its L1 finds or misses each
 * load and store exactly as an L1 fed with the guest's virtual addresses does: its lines
 * are that L1's, each page renamed. Only the page-table entries a mode's walks read differ
 * between modes (a few thousand on a program's trace). So the replay keeps that one L1
 * (SL1: per set its lines, the most recent first), runs each batch's loads and stores
 * through it once, and a mode takes its answers for every set but those its walks have
 * touched: a walk's entry read into a set first copies the shared set, as it stood at that
 * access, into the mode's own L1 (renamed to host lines), which then keeps that set itself
 * until, at the end of a batch, it holds the same lines in the same order as the shared
 * one again. A mode whose load or store faults, or whose pages share a host page, keeps
 * all its sets itself from there on. */
#define SL1_SETS 64u
#define SL1_WAYS 16u
#define SL1_MAX_PAGES 16384u        /* larger traces: each mode's L1 on its own (the maps below) */
#define SL1_CHECK 32768u            /* accesses between a mode's checks for sets it can give back */

/* a mode's pages: virtual page + 1 -> host page, and host page + 1 -> virtual page */
typedef struct page_map {
    uint64_t *key, *val;
    uint32_t cap;
} page_map;

/* The shared L1s: per set its lines (virtual line + 1), the most recent first, 0 none;
 * and the last line each L1 was used for. [DC_DATA] the data cache, [DC_CODE] the
 * instruction cache. */
typedef struct sl1_state {
    uint64_t line[2][SL1_SETS * SL1_WAYS];
    uint64_t last[2];
} sl1_state;

/* what the shared L1s answered: bit 0 the access missed its L1, bit 1 some access from
 * it to the end of its run of one page and kind did */
#define SL1_MISS 1u
#define SL1_RUN_MISSES 2u

/* A run of a batch (compute_runs): its accesses' page, kind and count, whether the shared
 * L1 missed any of them, and the lines of the page they read (bit per line, which is
 * also the L1 set: SL1_SETS lines a page). Built once per batch for every mode: a mode's
 * hot loop goes run by run, the run's first access where the last one ended. */
typedef struct run_rec {
    uint64_t w;             /* page << 19 | count << 3 | RR_MISSES | vm_op */
    uint64_t lines;
} run_rec;
#define RR_MISSES 4u
#define RR_PAGE(w) ((w) >> 19)
#define RR_COUNT(w) ((uint32_t)((w) >> 3) & 0xFFFF)
#define RR_OP(w) ((enum vm_op)((w)&3))
#define RR_MAKE(addr, count, op, lines_) \
    ((run_rec){.w = (addr) >> 12 << 19 | (uint64_t)(count) << 3 | (op), .lines = (lines_)})

/* The runs grouped by page (replay.md, "Runs by page"): a batch's runs cut into segments
 * of at most SEG_PAGES pages each, and for each segment its pages, each with the kinds of
 * its runs and where its last run ends (accesses from the segment's start), in that
 * order. Where the memo answers each page of a segment for each of its kinds, and the
 * shared L1s found every line, a mode takes the segment at once: every run's TLB line
 * marked used as the runs would have left it (the last use of each page), the accesses
 * counted, without a look at each run. Built once a batch for every mode. */
#define SEG_PAGES 8u
#define SEG_MAX (VMSIM_REPLAY_BATCH / 16u)
typedef struct run_seg {
    uint32_t x1;            /* its runs: from the segment before's x1 to this one */
    uint32_t count;         /* their accesses */
    uint32_t pg0, npages;   /* its pages: seg_set.pg[pg0 ..], 0: none (the runs one by one) */
    uint64_t data_lines;    /* the lines its load and store runs read */
    uint32_t misses, fetch; /* a run the shared L1s missed in; a fetch run */
} run_seg;
typedef struct seg_page {
    uint64_t page;
    uint32_t last;          /* where its last run ends, in accesses from the segment's start */
    uint32_t ops;           /* bit per vm_op of its runs */
} seg_page;
typedef struct seg_set {
    uint32_t n, npages;             /* the segments, and the pages of all of them */
    run_seg seg[SEG_MAX];
    seg_page pg[SEG_MAX * SEG_PAGES];
} seg_set;

typedef struct batch_in {
    const seg_set *segs;            /* the runs by page; NULL: none */
    const uint16_t *off;            /* each access's offset in its page (its run's) */
    const uint16_t *nxt;
    const run_rec *runs;            /* the runs in order, nruns of them */
    size_t nruns;
    const uint8_t *miss;            /* the shared L1s' answers (SL1_*); NULL: not shared */
    const sl1_state *before, *after;    /* the shared L1s before and after the batch */
    size_t n;
} batch_in;

typedef struct mode_share {
    page_map fwd, back;
    struct vmsim_replay *r;
    int mode;
    const batch_in *in;             /* where the mode is: the batch and the access (take_set) */
    size_t pos;
    uint64_t since_check;
} mode_share;

typedef struct mode_stats {
    uint64_t accesses, refs, guest_refs, nested_refs, ad_writes, exits, exits_ok, tlb_misses, pwc_hits, ntlb_hits;
    uint64_t outcomes[OUT_COUNT];
} mode_stats;

/* What the report reads of a mode once pass 2 is over: its counters, the exits and fills
 * its machine counted while the trace was counted, and where its references and accesses
 * found their lines. A mode replayed by another handle (another thread or worker) arrives
 * as these numbers (vmsim_replay_counts, vmsim_replay_merge). */
typedef struct mode_counts {
    mode_stats st;
    uint64_t shadow_exits[4];       /* machine.exit_counts since counting began */
    uint64_t fills;                 /* nested fills since counting began */
    uint64_t refs[DC_WHERE], data[DC_WHERE];
} mode_counts;

/* The pages touched: open addressing on page + 1, with the kinds each page saw
 * (bit 0 read, 1 write, 2 fetch). */
#define RECENT 256u      /* the set's memory of the pages added last (page_set.recent_key) */
typedef struct page_set {
    uint64_t *keys;
    uint8_t *kinds;
    uint32_t cap, used;
    /* pass 1 reports a page each time a stream leaves it, and a program goes back to the
     * same few pages all the time (the billion-access python run: 182 M reports of 1,403
     * pages): the pages added last, each with kinds the set holds already, by page mod
     * RECENT; page + 1, 0 none */
    uint64_t recent_key[RECENT];
    uint8_t recent_kinds[RECENT];
} page_set;

/* A point of the body where pass 2 may start decoding: a record boundary, and the decoder's
 * state there (replay.md, "Pass 2 in chunks"). */
typedef struct replay_mark {
    uint64_t consumed, count, page[2];
    uint32_t off[2];
} replay_mark;

struct vmsim_replay {
    int status;
    char err[512];
    replay_opts o;
    trace_header h;
    uint64_t body_offset;
    trace_decoder dec;
    int pass;                       /* 1 scanning, 2 replaying, 3 done */
    page_set ps;
    /* the layout */
    uint64_t *pages;                /* sorted */
    uint32_t npages, n2m, n4k, table_frames;
    uint64_t ram_bytes;
    /* the machines */
    scenario sc[N_REPLAY_MODES];
    machine m[N_REPLAY_MODES];
    bool built[N_REPLAY_MODES];
    uint32_t exit_base[N_REPLAY_MODES][4];
    uint32_t fill_base[N_REPLAY_MODES];     /* nested fills before counting */
    mode_stats st[N_REPLAY_MODES];
    mode_counts cnt[N_REPLAY_MODES];
    bool have[N_REPLAY_MODES];      /* cnt[mode] holds the mode's figures */
    mode_memo memo[N_REPLAY_MODES];
    dcache dc[N_REPLAY_MODES];      /* each mode's data caches, sized from the preset */
    vm_result *r;
    vm_result *mres[N_REPLAY_MODES];    /* each mode's own: modes may run on threads of their own */
    trace_access batch[BATCH];
    uint16_t off[BATCH], nxt[BATCH];
    run_rec runs[BATCH];
    /* the shared L1s (above); sl1_ways 0: not shared */
    uint32_t sl1_ways;
    sl1_state sl1, sl1_before;
    uint8_t miss[BATCH];
    seg_set segs;                   /* the runs by page of the batch run here (run_all, take) */
    mode_share sh[N_REPLAY_MODES];
    uint64_t end_page[2];
    uint32_t end_off[2];
    /* the page's shared decoder: what this handle decodes, also handed out in batches */
    vmsim_replay_batch *share;
    uint64_t shared_at;         /* pass 1: the accesses scanned when the last batch of pages went out */
    vmsim_replay_sink sink;
    void *sink_ctx;
    vmsim_replay_ask group_ask;     /* pass 2: whether a batch goes out with its segments */
    void *group_ctx;
    /* pass 2 in chunks (vmsim_replay_chunked): where pass 1's decoder stood at a record
     * boundary near each piece's start */
    bool marking;
    replay_mark *marks;
    size_t nmarks, cap_marks;
    uint64_t mark_apart;            /* the least bytes between two marks */
    uint64_t body_bytes;            /* the inflated body's length, from pass 1 */
};

static int failf(vmsim_replay *r, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int sl1_start(vmsim_replay *r);
static int failf(vmsim_replay *r, int status, const char *fmt, ...)
{
    if (r->status)
        return r->status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, sizeof r->err, fmt, ap);
    va_end(ap);
    r->status = status;
    return status;
}

/* ---- options ---- */

static bool opt_enum(vmsim_replay *r, const json_value *root, const char *key, const char *const *names, int n, int *out)
{
    const json_value *v = json_get(root, key);
    if (!v)
        return true;
    for (int i = 0; i < n; i++)
        if (v->type == JSON_STRING && !strcmp(v->str, names[i])) {
            *out = i;
            return true;
        }
    char list[160] = "";
    for (int i = 0; i < n; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", names[i]);
    failf(r, VMSIM_REPLAY_BAD_TRACE, "option %s must be one of %s", key, list);
    return false;
}

static bool opt_number(vmsim_replay *r, const json_value *root, const char *key, double lo, double hi, double *out)
{
    const json_value *v = json_get(root, key);
    if (!v)
        return true;
    if (v->type != JSON_NUMBER || v->number < lo || v->number > hi) {
        failf(r, VMSIM_REPLAY_BAD_TRACE, "option %s must be a number from %g to %g", key, lo, hi);
        return false;
    }
    *out = v->number;
    return true;
}

/* The cycles of a page-table entry read by where it is found (model.md 5c). */
static void set_where(replay_opts *o)
{
    bool sw = o->preset == 1;
    o->where[DC_L1] = sw ? COST_SUNWAY_L1_CYCLES : COST_X86_L1_CYCLES;
    o->where[DC_L2] = sw ? COST_SUNWAY_L2_CYCLES : COST_X86_L2_CYCLES;
    o->where[DC_LLC] = sw ? 0 : COST_X86_LLC_CYCLES;
    o->where[DC_MEMORY] = sw ? COST_SUNWAY_MEMORY_CYCLES : COST_X86_MEMORY_CYCLES;
    o->where[DC_WHERE] = COST_WALK_CACHE_HIT_CYCLES;
}

/* The cycles of each kind of exit (model.md 5c); --cycles-per-exit sets them all. */
static void set_exit_kinds(replay_opts *o, bool all_one)
{
    static const double k[] = {COST_EXIT_HIDDEN_PAGE_FAULT_CYCLES, COST_EXIT_PT_WRITE_CYCLES, COST_EXIT_CR3_WRITE_CYCLES,
                               COST_EXIT_HIDDEN_PAGE_FAULT_CYCLES, COST_EXIT_EPT_VIOLATION_CYCLES,
                               COST_EXIT_EPT_MISCONFIG_CYCLES, COST_EXIT_NPT_FAULT_CYCLES, COST_EXIT_FLAT_FILL_CYCLES};
    for (int i = 0; i < 8; i++)
        o->exit_kind[i] = all_one ? o->cycles_per_exit : k[i];
}

/* The first key of object o that is not among keys (NULL-ended), or NULL. */
static const char *unknown_key(const json_value *o, const char *const *keys)
{
    for (const json_value *c = o->first_child; c; c = c->next) {
        int i = 0;
        while (keys[i] && strcmp(c->key, keys[i]))
            i++;
        if (!keys[i])
            return c->key;
    }
    return NULL;
}

/* {"label", "cycles_per_exit"?, "exit_from"?, "cycles_per_ref"?, "ref_from"?, "in_vm"?}: the
 * learner's machine (vmsim replay --machine, the page's "your machine"). */
static bool parse_machine(vmsim_replay *r, const json_value *m)
{
    replay_opts *o = &r->o;
    o->mine_exit = o->mine_ref = -1;
    if (!m)
        return true;
    static const char *const keys[] = {"label", "cycles_per_exit", "exit_from", "cycles_per_ref", "ref_from", "in_vm", NULL};
    if (m->type != JSON_OBJECT) {
        failf(r, VMSIM_REPLAY_BAD_TRACE, "option machine must be an object (label, cycles_per_exit, cycles_per_ref)");
        return false;
    }
    const char *unknown = unknown_key(m, keys);
    if (unknown) {
        failf(r, VMSIM_REPLAY_BAD_TRACE, "unknown key machine.%.40s", unknown);
        return false;
    }
    const json_value *v;
    struct { const char *key; char *dst; size_t n; } strs[] = {{"label", o->mine_label, sizeof o->mine_label},
        {"exit_from", o->mine_exit_from, sizeof o->mine_exit_from}, {"ref_from", o->mine_ref_from, sizeof o->mine_ref_from}};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        if ((v = json_get(m, strs[i].key))) {
            if (v->type != JSON_STRING) {
                failf(r, VMSIM_REPLAY_BAD_TRACE, "machine.%s must be a string", strs[i].key);
                return false;
            }
            snprintf(strs[i].dst, strs[i].n, "%s", v->str);
        }
    if ((v = json_get(m, "cycles_per_exit"))) {
        if (v->type != JSON_NUMBER || v->number < 0 || v->number > 1e9) {
            failf(r, VMSIM_REPLAY_BAD_TRACE, "machine.cycles_per_exit must be a number from 0 to 1e9");
            return false;
        }
        o->mine_exit = v->number;
    }
    if ((v = json_get(m, "cycles_per_ref"))) {
        if (v->type != JSON_NUMBER || v->number < 0 || v->number > 1e6) {
            failf(r, VMSIM_REPLAY_BAD_TRACE, "machine.cycles_per_ref must be a number from 0 to 1e6");
            return false;
        }
        o->mine_ref = v->number;
    }
    o->mine_in_vm = (v = json_get(m, "in_vm")) && v->type == JSON_BOOL && v->boolean;
    o->mine = true;
    return true;
}

/* A list of modes (option modes, or part: the modes this handle replays itself) as bits;
 * absent: *out unchanged. part may be empty: the page's shared decoder that replays no
 * mode itself (vmsim_replay_share). */
static bool mode_list(vmsim_replay *r, const json_value *v, const char *key, unsigned *out)
{
    if (!v)
        return true;
    if (v->type != JSON_ARRAY || (!v->count && strcmp(key, "part"))) {
        failf(r, VMSIM_REPLAY_BAD_TRACE, "option %s must be a non-empty list of native, ept, npt, shadow, flat, agile", key);
        return false;
    }
    *out = 0;
    for (const json_value *m = v->first_child; m; m = m->next) {
        int k = -1;
        for (int i = 0; i < N_REPLAY_MODES; i++)
            if (m->type == JSON_STRING && !strcmp(m->str, replay_mode_names[i]))
                k = i;
        if (k < 0) {
            failf(r, VMSIM_REPLAY_BAD_TRACE, "option %s: \"%.20s\" is not a mode; use native, ept, npt, shadow, flat, agile",
                  key, m->type == JSON_STRING ? m->str : "?");
            return false;
        }
        *out |= 1u << k;
    }
    return true;
}

static bool parse_options(vmsim_replay *r, const char *text, size_t len)
{
    replay_opts *o = &r->o;
    experiment_opts e;
    experiment_defaults(&e);
    *o = (replay_opts){.modes = DEFAULT_REPLAY_MODES, .huge_min = 1, .format = FMT_JSON,
                       .cycles_per_access = e.cycles_per_access, .cycles_per_ref = e.cycles_per_ref,
                       .cycles_per_exit = e.cycles_per_exit, .refill_trap = e.refill_trap_cycles};
    set_where(o);
    set_exit_kinds(o, false);
    o->mine_exit = o->mine_ref = -1;
    if (!text || !len)
        return true;
    json_doc doc;
    if (!json_parse(text, len, &doc)) {
        failf(r, VMSIM_REPLAY_BAD_TRACE, "the replay options are not valid JSON");
        return false;
    }
    static const char *const keys[] = {"modes", "preset", "guest_pages", "huge_min", "host_pages", "start", "format",
                                       "cycles_per_access", "cycles_per_ref", "cycles_per_exit", "refill_trap", "tables", "machine",
                                       "agile_switch_level", "part", "l1", "l1_leave_at", NULL};
    bool ok = false;
    const json_value *root = doc.root;
    if (root->type != JSON_OBJECT) {
        failf(r, VMSIM_REPLAY_BAD_TRACE, "the replay options must be a JSON object");
        goto out;
    }
    const char *unknown = unknown_key(root, keys);
    if (unknown) {
        failf(r, VMSIM_REPLAY_BAD_TRACE, "unknown replay option \"%.40s\"", unknown);
        goto out;
    }
    if (!mode_list(r, json_get(root, "modes"), "modes", &o->modes))
        goto out;
    o->part = o->modes;
    if (!mode_list(r, json_get(root, "part"), "part", &o->part))
        goto out;
    if (o->part & ~o->modes) {
        failf(r, VMSIM_REPLAY_BAD_TRACE, "option part names a mode that option modes does not");
        goto out;
    }
    static const char *const gp[] = {"4k", "2m"}, *const hp[] = {"2m", "4k"}, *const st[] = {"cold", "warm"},
                             *const fm[] = {"json", "table", "csv"}, *const tb[] = {"built", "on-demand"},
                             *const l1[] = {"shared", "per-mode"};
    int g = 0, hpi = 0, s = 0, tbi = 0, l1i = 0;
    double huge = 1, agile_sw = 0, leave_at = 0;
    if (!opt_enum(r, root, "preset", preset_names, 2, &o->preset) || !opt_enum(r, root, "guest_pages", gp, 2, &g) ||
        !opt_enum(r, root, "host_pages", hp, 2, &hpi) || !opt_enum(r, root, "start", st, 2, &s) ||
        !opt_enum(r, root, "format", fm, 3, &o->format) || !opt_enum(r, root, "tables", tb, 2, &tbi) || !opt_number(r, root, "huge_min", 1, 512, &huge) ||
        !opt_number(r, root, "cycles_per_access", 0, 1e6, &o->cycles_per_access) ||
        !opt_number(r, root, "cycles_per_ref", 0, 1e6, &o->cycles_per_ref) ||
        !opt_number(r, root, "cycles_per_exit", 0, 1e9, &o->cycles_per_exit) ||
        !opt_number(r, root, "refill_trap", 0, 1e6, &o->refill_trap) ||
        !opt_number(r, root, "agile_switch_level", 0, 4, &agile_sw) || !opt_enum(r, root, "l1", l1, 2, &l1i) ||
        !opt_number(r, root, "l1_leave_at", 0, 1e15, &leave_at))
        goto out;
    o->l1_leave_at = (uint64_t)leave_at;
    o->l1_per_mode = l1i == 1;
    if (agile_sw != (int)agile_sw) {
        failf(r, VMSIM_REPLAY_BAD_TRACE, "option agile_switch_level must be a whole number from 0 to 4");
        goto out;
    }
    o->agile_switch_level = (int)agile_sw;
    o->guest_2m = g == 1;
    o->host_4k = hpi == 1;
    o->warm = s == 1;
    o->on_demand = tbi == 1;
    o->flat_ref = json_get(root, "cycles_per_ref") != NULL;
    set_exit_kinds(o, json_get(root, "cycles_per_exit") != NULL);
    if (!parse_machine(r, json_get(root, "machine")))
        goto out;
    set_where(o);
    o->huge_min = (uint32_t)huge;
    ok = true;
out:
    json_free(&doc);
    return ok;
}

/* ---- pass 1: the pages touched ---- */

static uint32_t page_hash(uint64_t key, uint32_t cap)
{
    return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

static bool ps_grow(page_set *ps)
{
    uint32_t ncap = ps->cap ? ps->cap * 2 : 1024;
    uint64_t *nk = calloc(ncap, sizeof *nk);
    uint8_t *nb = calloc(ncap, 1);
    if (!nk || !nb) {
        free(nk);
        free(nb);
        return false;
    }
    for (uint32_t i = 0; i < ps->cap; i++) {
        if (!ps->keys[i])
            continue;
        uint32_t j = page_hash(ps->keys[i], ncap);
        while (nk[j])
            j = (j + 1) & (ncap - 1);
        nk[j] = ps->keys[i];
        nb[j] = ps->kinds[i];
    }
    free(ps->keys);
    free(ps->kinds);
    ps->keys = nk;
    ps->kinds = nb;
    ps->cap = ncap;
    return true;
}

/* *added: whether the set changed (a new page, or a kind new to it) */
static int ps_add(vmsim_replay *r, uint64_t page, uint8_t bits, bool *added)
{
    page_set *ps = &r->ps;
    uint64_t key = page + 1;
    uint32_t i = 0;
    *added = true;
    if (ps->cap) {
        i = page_hash(key, ps->cap);
        while (ps->keys[i] && ps->keys[i] != key)
            i = (i + 1) & (ps->cap - 1);
        if (ps->keys[i]) {
            *added = (ps->kinds[i] | bits) != ps->kinds[i];
            ps->kinds[i] |= bits;
            return 0;
        }
    }
    /* a page not seen before */
    if (ps->used >= MAX_PAGES)
        return failf(r, VMSIM_REPLAY_BAD_TRACE,
                     "the trace touches more than %u distinct 4 KiB pages (%u MiB): too large to replay here; record "
                     "a shorter run (hw-lab/run trace --limit N) or a smaller input",
                     MAX_PAGES, MAX_PAGES / 256);
    if ((ps->used + 1) * 2 > ps->cap) {
        if (!ps_grow(ps))
            return failf(r, VMSIM_REPLAY_NO_MEMORY, "out of memory collecting the trace's pages");
        i = page_hash(key, ps->cap);
        while (ps->keys[i])
            i = (i + 1) & (ps->cap - 1);
    }
    ps->keys[i] = key;
    ps->used++;
    ps->kinds[i] |= bits;
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* ---- the machines ---- */

/* Guest RAM from gpa 0 at hpa HOST_BASE as a list of mappings of 4 KiB frames (page: the
 * nested tables' "page" field, or NULL), at most SLOT_PAGES frames each. */
static void ram_mappings(strbuf *sb, uint64_t frames, const char *page)
{
    sb_putc(sb, '[');
    for (uint64_t f = 0; f < frames; f += SLOT_PAGES) {
        uint64_t n = frames - f < SLOT_PAGES ? frames - f : SLOT_PAGES;
        sb_printf(sb, "%s{\"gpa\":\"0x%llx\",\"hpa\":\"0x%llx\",", f ? "," : "", (unsigned long long)(f << 12),
                  (unsigned long long)(HOST_BASE + (f << 12)));
        if (page)
            sb_printf(sb, "\"page\":\"%s\",", page);
        sb_printf(sb, "\"pages\":%llu}", (unsigned long long)n);
    }
    sb_putc(sb, ']');
}

static char *skeleton_json(const vmsim_replay *r, int mode)
{
    strbuf sb;
    sb_init(&sb);
    sb_printf(&sb, "{\"name\":\"replay\",\"mode\":\"%s\",\"guest\":{\"paging\":\"4level\",\"table_base\":\"0x%llx\","
                   "\"mappings\":[]}",
              replay_mode_names[mode], (unsigned long long)GUEST_TABLE_BASE);
    uint64_t frames = r->ram_bytes >> 12;
    if (mode == M_EPT || mode == M_NPT || mode == M_AGILE) {
        sb_printf(&sb, ",\"nested\":{\"table_base\":\"0x%llx\",\"on_demand\":%s,\"mappings\":", (unsigned long long)HOST_TABLES,
                  r->o.on_demand ? "true" : "false");
        if (!r->o.host_4k)
            sb_printf(&sb, "[{\"gpa\":\"0x0\",\"hpa\":\"0x%llx\",\"page\":\"2M\",\"pages\":%llu}]",
                      (unsigned long long)HOST_BASE, (unsigned long long)(r->ram_bytes >> 21));
        else
            ram_mappings(&sb, frames, "4K");
        sb_putc(&sb, '}');
    } else if (mode == M_FLAT) {
        sb_printf(&sb, ",\"flat\":{\"table_base\":\"0x%llx\",\"guest_ram\":\"0x%llx\",\"prefill\":%s,\"mappings\":",
                  (unsigned long long)HOST_TABLES, (unsigned long long)r->ram_bytes, r->o.on_demand ? "false" : "true");
        ram_mappings(&sb, frames, NULL);
        sb_putc(&sb, '}');
    }
    if (mode == M_AGILE)
        sb_printf(&sb, ",\"agile\":{\"table_base\":\"0x%llx\",\"switch_level\":%d,\"prefill\":%s}",
                  (unsigned long long)(HOST_TABLES + (1ull << 30)), r->o.agile_switch_level, r->o.on_demand ? "false" : "true");
    else if (mode == M_SHADOW) {
        sb_printf(&sb, ",\"shadow\":{\"table_base\":\"0x%llx\",\"prefill\":%s,\"mappings\":", (unsigned long long)HOST_TABLES,
                  r->o.on_demand ? "false" : "true");
        ram_mappings(&sb, frames, NULL);
        sb_putc(&sb, '}');
    }
    sb_printf(&sb, ",\"caches\":{\"preset\":\"%s\"},\"accesses\":[]}", preset_names[r->o.preset]);
    return sb_take(&sb);
}

/* The guest mappings: 2 MiB pages (each touched region with at least huge_min touched
 * pages, when asked for) at gpa DATA_GPA onward in gva order, then the remaining 4 KiB
 * pages right after them in gva order; runs of consecutive pages are one mapping. */
static guest_map *make_mappings(vmsim_replay *r, uint32_t *n_out)
{
    uint32_t n = r->npages;
    guest_map *maps = malloc((n ? n : 1) * sizeof *maps);
    bool *huge = calloc(n ? n : 1, sizeof *huge);
    if (!maps || !huge) {
        free(maps);
        free(huge);
        return NULL;
    }
    /* which pages lie in a huge region */
    r->n2m = 0;
    for (uint32_t i = 0; i < n;) {
        uint32_t j = i;
        while (j < n && r->pages[j] >> 9 == r->pages[i] >> 9)
            j++;
        if (r->o.guest_2m && j - i >= r->o.huge_min) {
            for (uint32_t k = i; k < j; k++)
                huge[k] = true;
            r->n2m++;
        }
        i = j;
    }
    r->n4k = 0;
    for (uint32_t i = 0; i < n; i++)
        r->n4k += !huge[i];
    uint64_t gpa2m = DATA_GPA, gpa4k = DATA_GPA + ((uint64_t)r->n2m << 21);
    uint32_t nm = 0;
    for (uint32_t i = 0; i < n;) {
        if (huge[i]) {
            uint64_t region = r->pages[i] >> 9;
            guest_map *last = nm ? &maps[nm - 1] : NULL;
            if (last && last->page == PAGE_2M && last->gva + ((uint64_t)last->pages << 21) == region << 21 &&
                last->gpa + ((uint64_t)last->pages << 21) == gpa2m)
                last->pages++;
            else
                maps[nm++] = (guest_map){.gva = region << 21, .gpa = gpa2m, .page = PAGE_2M, .pages = 1, .writable = true,
                                         .user = true};
            gpa2m += 1ull << 21;
            while (i < n && r->pages[i] >> 9 == region)
                i++;
            continue;
        }
        uint64_t gva = r->pages[i] << 12;
        guest_map *last = nm ? &maps[nm - 1] : NULL;
        if (last && last->page == PAGE_4K && last->gva + ((uint64_t)last->pages << 12) == gva &&
            last->gpa + ((uint64_t)last->pages << 12) == gpa4k)
            last->pages++;
        else
            maps[nm++] = (guest_map){.gva = gva, .gpa = gpa4k, .page = PAGE_4K, .pages = 1, .writable = true, .user = true};
        gpa4k += 4096;
        i++;
    }
    free(huge);
    r->ram_bytes = (gpa4k + (2ull << 20) - 1) & ~((2ull << 20) - 1);
    *n_out = nm;
    return maps;
}

/* Guest table frames the mappings need: the root, and one table per distinct 512 GiB,
 * 1 GiB and (for 4 KiB pages) 2 MiB region. */
static uint32_t count_tables(const vmsim_replay *r, const guest_map *maps, uint32_t nm)
{
    uint64_t last[3] = {~0ull, ~0ull, ~0ull};
    uint32_t t = 1;
    for (uint32_t i = 0; i < nm; i++) {
        uint64_t size = maps[i].page == PAGE_2M ? 1ull << 21 : 1ull << 12;
        for (uint32_t k = 0; k < maps[i].pages; k++) {
            uint64_t gva = maps[i].gva + k * size;
            uint64_t key[3] = {gva >> 39, gva >> 30, gva >> 21};
            for (int l = 0; l < 3; l++) {
                if (l == 2 && maps[i].page == PAGE_2M)
                    break;
                if (key[l] != last[l]) {
                    last[l] = key[l];
                    t++;
                }
            }
        }
    }
    (void)r;
    return t;
}

/* The mode whose scenario gives the report its caches' sizes: the first built, or for a
 * shared decoder that replays no mode itself (part []), the first of modes, parsed only. */
static int sizes_mode(const vmsim_replay *r)
{
    unsigned m = r->o.part ? r->o.part : r->o.modes;
    return m ? __builtin_ctz(m) : -1;
}

static int build_machines(vmsim_replay *r)
{
    uint32_t n = r->ps.used;
    r->pages = malloc((n ? n : 1) * sizeof *r->pages);
    if (!r->pages)
        return failf(r, VMSIM_REPLAY_NO_MEMORY, "out of memory laying out the trace's pages");
    uint32_t k = 0;
    for (uint32_t i = 0; i < r->ps.cap; i++)
        if (r->ps.keys[i])
            r->pages[k++] = r->ps.keys[i] - 1;
    qsort(r->pages, n, sizeof *r->pages, cmp_u64);
    r->npages = n;
    uint32_t nm;
    guest_map *maps = make_mappings(r, &nm);
    if (!maps)
        return failf(r, VMSIM_REPLAY_NO_MEMORY, "out of memory laying out the trace's pages");
    r->table_frames = count_tables(r, maps, nm);
    if (r->table_frames > MAX_TABLE_FRAMES) {
        free(maps);
        return failf(r, VMSIM_REPLAY_BAD_TRACE,
                     "the trace's %u pages are spread so thinly that the guest's page tables would take %u frames "
                     "(%u MiB) per mode, more than the %u this replay allows: record a smaller run",
                     r->npages, r->table_frames, r->table_frames / 256, MAX_TABLE_FRAMES);
    }
    if (r->ram_bytes > MAX_GUEST_RAM) {
        free(maps);
        return failf(r, VMSIM_REPLAY_BAD_TRACE,
                     "with 2 MiB pages the trace's %u regions need %llu MiB of guest memory, more than the %llu MiB this "
                     "replay builds: raise --huge-min (regions with fewer touched pages keep 4 KiB pages) or use 4 KiB pages",
                     r->n2m, (unsigned long long)(r->ram_bytes >> 20), (unsigned long long)(MAX_GUEST_RAM >> 20));
    }
    for (int mode = 0; mode < N_REPLAY_MODES; mode++) {
        bool mine = r->o.part & (1u << mode);
        if (!mine && sizes_mode(r) != mode)
            continue;
        char *json = skeleton_json(r, mode);
        char err[400];
        if (!json || !scenario_parse(json, strlen(json), &r->sc[mode], err, sizeof err)) {
            free(json);
            free(maps);
            return failf(r, VMSIM_REPLAY_NO_MEMORY, "building mode %s: %s", replay_mode_names[mode], json ? err : "out of memory");
        }
        free(json);
        if (!mine)
            continue;
        /* the modes share one list of mappings, needed only while the tables are built
         * (up to 32 MiB for a million scattered pages) */
        free(r->sc[mode].gmaps);
        r->sc[mode].gmaps = maps;
        r->sc[mode].n_gmaps = nm;
        bool built = machine_build(&r->m[mode], &r->sc[mode], err, sizeof err);
        r->sc[mode].gmaps = NULL;
        r->sc[mode].n_gmaps = 0;
        if (!built) {
            free(maps);
            return failf(r, VMSIM_REPLAY_BAD_TRACE, "building the guest's tables for mode %s: %s", replay_mode_names[mode], err);
        }
        r->built[mode] = true;
        bool sw = r->o.preset == 1;
        const uint32_t bytes[3] = {sw ? COST_SUNWAY_L1_BYTES : COST_X86_L1_BYTES, sw ? COST_SUNWAY_L2_BYTES : COST_X86_L2_BYTES,
                                   sw ? 0 : COST_X86_LLC_BYTES};
        const uint32_t ways[3] = {sw ? COST_SUNWAY_L1_WAYS : COST_X86_L1_WAYS, sw ? COST_SUNWAY_L2_WAYS : COST_X86_L2_WAYS,
                                  sw ? 1 : COST_X86_LLC_WAYS};
        if (!dcache_init(&r->dc[mode], bytes, ways, sw ? COST_SUNWAY_L1I_BYTES : COST_X86_L1I_BYTES,
                         sw ? COST_SUNWAY_L1I_WAYS : COST_X86_L1I_WAYS)) {
            free(maps);
            return failf(r, VMSIM_REPLAY_NO_MEMORY, "out of memory for the data caches of mode %s", replay_mode_names[mode]);
        }
        r->m[mode].dc = &r->dc[mode];
        if (!(r->mres[mode] = malloc(sizeof *r->mres[mode]))) {
            free(maps);
            return failf(r, VMSIM_REPLAY_NO_MEMORY, "out of memory for mode %s", replay_mode_names[mode]);
        }
    }
    free(maps);
    return 0;
}

/* Warm start: every page once with each kind of access it saw (fetch, read, write), in
 * gva order, before counting: A/D bits set, shadow entries filled, as after a first run. */
static void warm_up(vmsim_replay *r)
{
    static const enum vm_op ops[3] = {OP_FETCH, OP_READ, OP_WRITE};
    static const uint8_t bit[3] = {4, 1, 2};
    for (int mode = 0; mode < N_REPLAY_MODES; mode++) {
        if (!r->built[mode])
            continue;
        for (uint32_t i = 0; i < r->npages; i++) {
            uint64_t key = r->pages[i] + 1;
            uint32_t j = page_hash(key, r->ps.cap);
            while (r->ps.keys[j] != key)
                j = (j + 1) & (r->ps.cap - 1);
            for (int o = 0; o < 3; o++)
                if (r->ps.kinds[j] & bit[o]) {
                    vm_access a = {.gva = r->pages[i] << 12, .op = ops[o], .user = true};
                    r->r->record = false;
                    translate(&r->m[mode], &a, r->r);
                }
        }
    }
}

/* ---- the API ---- */

EXPORT vmsim_replay *vmsim_replay_open(const uint8_t *bytes, size_t n, double file_size, const char *options,
                                       size_t options_len)
{
    vmsim_replay *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->r = malloc(sizeof *r->r);
    if (!r->r) {
        failf(r, VMSIM_REPLAY_NO_MEMORY, "out of memory");
        return r;
    }
    if (!parse_options(r, options, options_len))
        return r;
    char err[400];
    if (!trace_open(bytes, n, file_size > 0 ? (uint64_t)file_size : 0, &r->h, &r->body_offset, err, sizeof err)) {
        failf(r, VMSIM_REPLAY_BAD_TRACE, "%s", err);
        return r;
    }
    trace_decoder_init(&r->dec);
    r->pass = 1;
    return r;
}

EXPORT int vmsim_replay_status(const vmsim_replay *r)
{
    return r ? r->status : VMSIM_REPLAY_NO_MEMORY;
}

EXPORT const char *vmsim_replay_error(const vmsim_replay *r)
{
    return !r ? "out of memory" : r->status ? r->err : "";
}

EXPORT double vmsim_replay_body_offset(const vmsim_replay *r)
{
    return r ? (double)r->body_offset : 0;
}

EXPORT double vmsim_replay_accesses(const vmsim_replay *r)
{
    return r ? (double)r->h.accesses : 0;
}

EXPORT double vmsim_replay_done(const vmsim_replay *r)
{
    return r ? (double)r->dec.count : 0;
}

static int decoder_failed(vmsim_replay *r)
{
    return failf(r, VMSIM_REPLAY_BAD_TRACE, "%s", r->dec.err);
}

/* More accesses than the header announced: refused as soon as it shows. */
static int fail_overrun(vmsim_replay *r)
{
    return failf(r, VMSIM_REPLAY_BAD_TRACE, "the trace is corrupt: its body holds more than the %llu accesses its "
                                            "header announces", (unsigned long long)r->h.accesses);
}

static int check_overrun(vmsim_replay *r)
{
    return r->dec.count > r->h.accesses ? fail_overrun(r) : 0;
}

/* Pass 2 decoded other accesses than pass 1 scanned. */
static int fail_changed(vmsim_replay *r)
{
    return failf(r, VMSIM_REPLAY_BAD_TRACE, "the trace's body differed between the two passes (was the file changed "
                                            "while it was replayed?)");
}

/* Pages from pass 1 into the set, with what each needs: read, write, fetch (from the
 * kinds seen, a bit per trace kind; a modify reads and writes). With keep, the entries
 * that changed the set are copied there, in order (keep may be pages itself), and *kept
 * says how many: what another handle's set needs to end up the same (the shared decoder
 * hands out only those). */
static int add_pages(vmsim_replay *r, const trace_page *pages, size_t n, trace_page *keep, size_t *kept)
{
    page_set *ps = &r->ps;
    bool added;
    for (size_t i = 0; i < n; i++) {
        uint64_t page = pages[i].page;
        unsigned k = pages[i].kinds;
        uint8_t bits = (uint8_t)(((k & 1) ? 1 : 0) | ((k & 2) ? 2 : 0) | ((k & 4) ? 4 : 0) | ((k & 8) ? 3 : 0));
        uint32_t slot = (uint32_t)page & (RECENT - 1);
        if (ps->recent_key[slot] == page + 1 && (ps->recent_kinds[slot] | bits) == ps->recent_kinds[slot])
            continue;       /* in the set with these kinds already */
        if (page >= TRACE_USER_PAGES)
            return failf(r, VMSIM_REPLAY_BAD_TRACE,
                         "the trace has an access at 0x%llx, above the 47-bit user half of x86-64 4-level paging that "
                         "the replay models", (unsigned long long)(page << 12));
        if (ps_add(r, page, bits, &added))
            return r->status;
        if (keep && added)
            keep[(*kept)++] = pages[i];
        if (ps->recent_key[slot] != page + 1) {
            ps->recent_key[slot] = page + 1;
            ps->recent_kinds[slot] = 0;
        }
        ps->recent_kinds[slot] |= bits;
    }
    return 0;
}

static int share_pages(vmsim_replay *r, const trace_page *pages, size_t n);
static int share_out(vmsim_replay *r, bool last);

static bool add_mark(vmsim_replay *r);
static int scan_piece(vmsim_replay *r, const uint8_t *body, size_t n);

/* Where pass 2 in chunks may start: MARK_STEP bytes after the last where pass 1 scans in
 * order (MARK_LEAST on where the last was noted further back), at each 65,534 bytes where
 * it scans ahead (trace_scan_ahead), at least MARK_APART apart. */
#define MARK_STEP (64u << 10)
#define MARK_APART (16u << 10)
#define MARK_LEAST (4u << 10)

EXPORT int vmsim_replay_scan(vmsim_replay *r, const uint8_t *body, size_t n)
{
    if (!r || r->status)
        return vmsim_replay_status(r);
    if (r->pass != 1)
        return failf(r, VMSIM_REPLAY_BAD_TRACE, "vmsim_replay_scan after the first pass ended");
    if (!r->marking)
        return scan_piece(r, body, n);
    for (size_t at = 0; at < n;) {
        /* the next mark MARK_STEP after the last (which a scan ahead joined may have noted
         * anywhere before here), so that the chunks are alike: a chunk twice as long holds
         * the other threads up (docs/replay.md, "Pass 1 in order where it can") */
        uint64_t since = r->dec.consumed - (r->nmarks ? r->marks[r->nmarks - 1].consumed : 0);
        size_t k = since + MARK_LEAST < MARK_STEP ? (size_t)(MARK_STEP - since) : MARK_LEAST;
        if (k > n - at)
            k = n - at;
        if (scan_piece(r, body + at, k))
            return r->status;
        /* a record across the boundary: finished first (at most MAX_RECORD bytes) */
        for (at += k; r->dec.ncarry && at < n; at++)
            if (scan_piece(r, body + at, 1))
                return r->status;
        add_mark(r);
    }
    return 0;
}

static int scan_piece(vmsim_replay *r, const uint8_t *body, size_t n)
{
    const uint8_t *p = body, *end = body + n;
    trace_page *pages = (trace_page *)r->batch;
    size_t max = sizeof r->batch / sizeof *pages;
    while (p < end || r->dec.ncarry) {
        const uint8_t *before = p;
        size_t got = trace_scan(&r->dec, &p, end, pages, max);
        if (r->dec.failed)
            return decoder_failed(r);
        if (check_overrun(r))
            return r->status;
        size_t kept = 0;
        if (add_pages(r, pages, got, r->share ? pages : NULL, &kept) || (r->share && share_pages(r, pages, kept)))
            return r->status;
        if (p == before && !got)
            break;
    }
    /* the pages that changed the set go out when a batch is full, and at the end of a
     * piece once a 256th of the trace was scanned since the last batch (the others'
     * progress through pass 1 is the state a batch carries) */
    if (r->share && r->dec.count - r->shared_at > r->h.accesses / 256 && share_out(r, false))
        return r->status;
    return 0;
}

struct vmsim_replay_ahead {
    trace_ahead t;
};

/* A mark for pass 2 in chunks, at least mark_apart bytes after the last. At most MAX_MARKS
 * (3 MiB): then every other one goes and the marks are twice as far apart, so that memory
 * does not grow with the trace's length (chunks of 64 KiB up to about 4 GB of body). */
#define MAX_MARKS 65536u
static bool note_mark(vmsim_replay *r, replay_mark m)
{
    if (r->nmarks && m.consumed < r->marks[r->nmarks - 1].consumed + r->mark_apart)
        return false;
    if (r->nmarks == MAX_MARKS) {
        for (size_t i = 0; i < MAX_MARKS / 2; i++)
            r->marks[i] = r->marks[2 * i];
        r->nmarks = MAX_MARKS / 2;
        r->mark_apart *= 2;
        return note_mark(r, m);
    }
    if (r->nmarks == r->cap_marks) {
        size_t cap = r->cap_marks ? 2 * r->cap_marks : 1024;
        replay_mark *g = realloc(r->marks, cap * sizeof *g);
        if (!g) {
            failf(r, VMSIM_REPLAY_NO_MEMORY, "out of memory noting where pass 2 may start");
            return false;
        }
        r->marks = g;
        r->cap_marks = cap;
    }
    r->marks[r->nmarks++] = m;
    return true;
}

/* Where pass 1's decoder stands, as a mark for pass 2 in chunks, when it is on a record
 * boundary: true when noted. */
static bool add_mark(vmsim_replay *r)
{
    const trace_decoder *d = &r->dec;
    if (!r->marking || r->status || r->pass != 1 || d->ncarry || d->ended || d->failed)
        return false;
    replay_mark m = {.consumed = d->consumed, .count = d->count};
    memcpy(m.page, d->page, sizeof m.page);
    memcpy(m.off, d->off, sizeof m.off);
    return note_mark(r, m);
}

EXPORT vmsim_replay_ahead *vmsim_replay_ahead_new(void)
{
    return calloc(1, sizeof(vmsim_replay_ahead));
}

EXPORT void vmsim_replay_ahead_free(vmsim_replay_ahead *a)
{
    free(a);
}

/* The bytes of *a another handle's scan_joined reads (its pages, not the scan's own
 * table of the pages it left lately): copied from a's address into another handle's
 * vmsim_replay_ahead, in a module of the same build. */
EXPORT size_t vmsim_replay_ahead_bytes(const vmsim_replay_ahead *a)
{
    size_t np = a->t.npages < TRACE_AHEAD_PAGES ? a->t.npages : TRACE_AHEAD_PAGES;
    return offsetof(vmsim_replay_ahead, t.pages) + np * sizeof(trace_page);
}

EXPORT void vmsim_replay_scan_ahead(vmsim_replay_ahead *a, const uint8_t *piece, size_t n)
{
    trace_scan_ahead(&a->t, piece, n);
}

/* The bytes before the scanned-ahead part scanned here; the part joined when they end on a
 * record boundary and it refuses nothing (the scan then finds the refusal, with the message
 * and at the point it would have anyway); the bytes after it scanned here. */
EXPORT int vmsim_replay_scan_joined(vmsim_replay *r, const uint8_t *piece, size_t n, const vmsim_replay_ahead *a)
{
    bool marked = r && add_mark(r);
    if (!r || r->status || r->pass != 1 || !a || a->t.stop > n || a->t.stop <= a->t.start ||
        a->t.npages > TRACE_AHEAD_PAGES)
        return vmsim_replay_scan(r, piece, n);
    const trace_ahead *t = &a->t;
    if (vmsim_replay_scan(r, piece, t->start))
        return r->status;
    if (!marked)
        add_mark(r);
    trace_decoder next;
    trace_page *pages = (trace_page *)r->batch;
    size_t np = 0;
    _Static_assert(sizeof r->batch >= TRACE_AHEAD_PAGES * sizeof(trace_page), "the joined pages fit in the batch");
    bool ok = !r->dec.ncarry && !r->dec.ended && !r->dec.failed && trace_ahead_join(&r->dec, t, &next, pages, &np) &&
              next.count <= r->h.accesses && r->ps.used + np <= MAX_PAGES;
    for (size_t i = 0; ok && i < np; i++)
        ok = pages[i].page < TRACE_USER_PAGES;
    if (!ok)
        return vmsim_replay_scan(r, piece + t->start, n - t->start);
    for (size_t i = 0; r->marking && i < t->nmarks && t->marks[i].at <= t->stop; i++) {
        const struct trace_ahead_mark *e = &t->marks[i];
        replay_mark m = {.consumed = r->dec.consumed + (e->at - t->start), .count = r->dec.count + e->count};
        for (int s = 0; s < 2; s++) {
            m.page[s] = r->dec.page[s] + e->page[s];
            m.off[s] = (uint32_t)((int64_t)r->dec.off[s] + e->off[s]);
        }
        if (e->at + r->mark_apart <= n)
            note_mark(r, m);
    }
    r->dec = next;
    size_t kept = 0;
    if (add_pages(r, pages, np, r->share ? pages : NULL, &kept) || (r->share && share_pages(r, pages, kept)))
        return r->status;
    return vmsim_replay_scan(r, piece + t->stop, n - t->stop);
}

EXPORT int vmsim_replay_scan_end(vmsim_replay *r)
{
    if (!r || r->status)
        return vmsim_replay_status(r);
    if (r->pass != 1)
        return failf(r, VMSIM_REPLAY_BAD_TRACE, "vmsim_replay_scan_end called twice");
    if (!trace_decoder_finish(&r->dec))
        return decoder_failed(r);
    if (r->dec.count != r->h.accesses)
        return failf(r, VMSIM_REPLAY_BAD_TRACE, "the trace is corrupt: its header announces %llu accesses, its body holds %llu",
                     (unsigned long long)r->h.accesses, (unsigned long long)r->dec.count);
    for (int k = 0; k < 4; k++)
        if (r->dec.kinds[k] != r->h.counts[k])
            return failf(r, VMSIM_REPLAY_BAD_TRACE, "the trace is corrupt: its header counts %llu %ss, its body holds %llu",
                         (unsigned long long)r->h.counts[k], kind_names[k], (unsigned long long)r->dec.kinds[k]);
    if (r->ps.used != r->h.pages)
        return failf(r, VMSIM_REPLAY_BAD_TRACE, "the trace is corrupt: its header announces %llu distinct pages, its body "
                     "touches %u", (unsigned long long)r->h.pages, r->ps.used);
    memcpy(r->end_page, r->dec.page, sizeof r->end_page);
    memcpy(r->end_off, r->dec.off, sizeof r->end_off);
    r->body_bytes = r->dec.consumed;
    if (build_machines(r))
        return r->status;
    if (r->o.warm)
        warm_up(r);
    for (int mode = 0; mode < N_REPLAY_MODES; mode++)
        if (r->built[mode]) {
            memcpy(r->exit_base[mode], r->m[mode].exit_counts, sizeof r->exit_base[mode]);
            r->fill_base[mode] = r->m[mode].nested_fills;
            memset(r->dc[mode].refs, 0, sizeof r->dc[mode].refs);     /* the warm-up's reads warmed the caches only */
            memset(r->dc[mode].data, 0, sizeof r->dc[mode].data);
            r->memo[mode].gen = 1;      /* every slot (gen 0) invalid */
        }
    if (sl1_start(r))
        return r->status;
    trace_decoder_init(&r->dec);
    r->pass = 2;
    return 0;
}

static const enum vm_op op_of[4] = {OP_READ, OP_WRITE, OP_FETCH, OP_WRITE};

/* The TLB line that just answered gva (the lookup of translate.c: page sizes smallest
 * first, tagged by address space and EPTP index), or NULL. Finding it again only marks
 * it used once more: it is already the most recently used line of its set. */
static cache_line *hit_line(machine *m, uint64_t gva)
{
    uint32_t tag = (m->s->pcid ? m->asid : 0) | (m->eptp_index << 16);
    for (uint32_t shifts = m->tlb_shifts & (uint32_t)bits_range(30, 12); shifts; shifts &= shifts - 1) {
        uint32_t sh = (uint32_t)__builtin_ctz(shifts);
        cache_line *c = cache_find(m->tlb, ((uint64_t)sh << 58) | (gva >> sh), tag);
        if (c)
            return c;
    }
    return NULL;
}


/* ---- the shared L1 (see "One L1 for the modes" above) ---- */

static bool pm_init(page_map *m, uint32_t cap)
{
    m->cap = cap;
    m->key = calloc(cap, sizeof *m->key);
    m->val = calloc(cap, sizeof *m->val);
    return m->key && m->val;
}

static void pm_free(page_map *m)
{
    free(m->key);
    free(m->val);
    memset(m, 0, sizeof *m);
}

/* k -> v; false when k is already there with another value (or the map is full) */
static bool pm_put(page_map *m, uint64_t k, uint64_t v)
{
    uint32_t j = page_hash(k + 1, m->cap);
    for (uint32_t probes = 0; probes < m->cap; probes++, j = (j + 1) & (m->cap - 1)) {
        if (m->key[j] == k + 1)
            return m->val[j] == v;
        if (!m->key[j]) {
            m->key[j] = k + 1;
            m->val[j] = v;
            return true;
        }
    }
    return false;
}

static bool pm_get(const page_map *m, uint64_t k, uint64_t *v)
{
    uint32_t j = page_hash(k + 1, m->cap);
    for (uint32_t probes = 0; probes < m->cap && m->key[j]; probes++, j = (j + 1) & (m->cap - 1))
        if (m->key[j] == k + 1) {
            *v = m->val[j];
            return true;
        }
    return false;
}

/* key (a line + 1) used in the set at s (ways lines, the most recent first): moved or put
 * first, the least recent falling out when the set is full. True if it was there. */
static inline bool sl1_use(uint64_t *s, uint32_t ways, uint64_t key)
{
    uint32_t k = 0;
    while (k < ways - 1 && s[k] != key && s[k])
        k++;
    bool hit = s[k] == key;
    for (; k; k--)
        s[k] = s[k - 1];
    s[0] = key;
    return hit;
}

/* The batch's accesses through the shared L1s (nxt, runs: compute_runs'): miss[j]
 * SL1_*, and RR_MISSES on the runs with a miss. Run by run, the first access of each line
 * only: the others read the line the access before them read, the most recent of its set. */
static void sl1_run(vmsim_replay *r, const trace_access *a, const uint16_t *nxt, run_rec *runs, size_t n,
                    uint8_t *miss)
{
    sl1_state *st = &r->sl1;
    uint32_t ways = r->sl1_ways;
    memset(miss, 0, n);
    for (size_t i = 0; i < n; runs++) {
        uint64_t w = runs->w;
        size_t stop = i + RR_COUNT(w), last_miss = 0;
        int which = RR_OP(w) == OP_FETCH ? DC_CODE : DC_DATA;
        uint64_t *lines = st->line[which], last = st->last[which];
        if (!(runs->lines & (runs->lines - 1))) {
            /* one line: its first access only */
            uint64_t key = (a[i].addr >> 6) + 1;
            if (key != last) {
                st->last[which] = key;
                if (!sl1_use(lines + ((key - 1) & (SL1_SETS - 1)) * ways, ways, key)) {
                    miss[i] = SL1_MISS | SL1_RUN_MISSES;
                    runs->w = w | RR_MISSES;
                }
            }
            i = stop;
            continue;
        }
        for (size_t j = i; j < stop; j = nxt[j]) {
            uint64_t key = (a[j].addr >> 6) + 1;
            if (key == last)        /* the L1's last line (from a run before this one) */
                continue;
            last = key;
            if (!sl1_use(lines + ((key - 1) & (SL1_SETS - 1)) * ways, ways, key)) {
                miss[j] = SL1_MISS;
                last_miss = j + 1;
            }
        }
        st->last[which] = last;
        for (size_t j = i; j < last_miss; j++)
            miss[j] |= SL1_RUN_MISSES;
        if (last_miss)
            runs->w |= RR_MISSES;
        i = stop;
    }
}

/* A shared L1's line (virtual line + 1) as the mode's L1 keeps it (host line + 1); false
 * when the mode has not translated its page (then on host page 0). */
static bool host_key(const mode_share *sh, uint64_t key, uint32_t *out)
{
    uint64_t host = 0;
    bool found = pm_get(&sh->fwd, (key - 1) >> 6, &host);
    *out = (uint32_t)((host << 6 | ((key - 1) & 63)) + 1);
    return found;
}

/* Set `set` of shared L1 `which` as it stood before access pos of the batch, in the
 * mode's host lines (line + 1, the most recent first); how many. */
static uint32_t sl1_set_at(vmsim_replay *r, int mode, int which, uint32_t set, const batch_in *in, size_t pos,
                           uint32_t *out)
{
    uint32_t ways = r->sl1_ways;
    uint64_t s[SL1_WAYS];
    memcpy(s, in->before->line[which] + set * ways, ways * sizeof *s);
    const run_rec *run = in->runs;
    for (size_t i = 0; i < pos; run++) {
        uint64_t w = run->w;
        size_t stop = i + RR_COUNT(w) < pos ? i + RR_COUNT(w) : pos;
        if ((RR_OP(w) == OP_FETCH) == (which == DC_CODE) && run->lines >> set & 1)
            for (size_t j = i; j < stop; j++)
                if ((uint32_t)(in->off[j] >> 6) == set)
                    sl1_use(s, ways, (RR_PAGE(w) << 6 | in->off[j] >> 6) + 1);
        i += RR_COUNT(w);
    }
    uint32_t n = 0;
    for (; n < ways && s[n]; n++)
        host_key(&r->sh[mode], s[n], &out[n]);      /* every page there was translated before pos */
    return n;
}

/* A walk's entry read into a set the mode does not keep: the shared set copied in first. */
static void take_set(dcache *d, uint32_t set)
{
    mode_share *sh = d->take_ctx;
    uint32_t keys[SL1_WAYS];
    uint32_t n = sl1_set_at(sh->r, sh->mode, DC_DATA, set, sh->in, sh->pos, keys);
    dcache_l1_set_load(d, DC_DATA, set, keys, n);
    d->own |= 1ull << set;
}

/* The mode keeps both its L1s itself from access pos on. */
static void sl1_leave(vmsim_replay *r, int mode)
{
    dcache *d = &r->dc[mode];
    mode_share *sh = &r->sh[mode];
    for (uint32_t set = 0; set < SL1_SETS; set++) {
        if (!(d->own >> set & 1))
            take_set(d, set);
        uint32_t keys[SL1_WAYS];
        uint32_t n = sl1_set_at(r, mode, DC_CODE, set, sh->in, sh->pos, keys);
        dcache_l1_set_load(d, DC_CODE, set, keys, n);
    }
    d->take = NULL;
    d->own = ~0ull;
}

/* At the end of a batch: the sets the mode keeps that hold what the shared L1 holds, in
 * the same order, given back (checked every SL1_CHECK accesses). */
static void sl1_give_back(vmsim_replay *r, int mode, const batch_in *in)
{
    dcache *d = &r->dc[mode];
    mode_share *sh = &r->sh[mode];
    if (!d->take || !d->own || (sh->since_check += in->n) < SL1_CHECK)
        return;
    sh->since_check = 0;
    uint32_t ways = r->sl1_ways;
    bool gave = false;
    for (uint32_t set = 0; set < SL1_SETS; set++) {
        if (!(d->own >> set & 1))
            continue;
        uint32_t mine[SL1_WAYS], theirs;
        uint32_t n = dcache_l1_set_read(d, DC_DATA, set, mine), k = 0;
        const uint64_t *s = in->after->line[DC_DATA] + set * ways;
        while (k < n && s[k] && host_key(sh, s[k], &theirs) && theirs == mine[k])
            k++;
        if (k == n && (n == ways || !s[n])) {
            d->own &= ~(1ull << set);
            gave = true;
        }
    }
    if (gave)
        d->l1[DC_DATA].last_key[0] = d->l1[DC_DATA].last_key[1] = 0;
}

/* Pass 2 begins: the shared L1 empty, each mode keeping the sets its warm start filled. */
static int sl1_start(vmsim_replay *r)
{
    /* from the preset, not the modes' caches: a shared decoder's lead may build no mode
     * and still seals the batches */
    bool sw = r->o.preset == 1;
    uint32_t sets = (uint32_t)((sw ? COST_SUNWAY_L1_BYTES : COST_X86_L1_BYTES) / 64 / (sw ? COST_SUNWAY_L1_WAYS : COST_X86_L1_WAYS));
    uint32_t ways = (uint32_t)(sw ? COST_SUNWAY_L1_WAYS : COST_X86_L1_WAYS);
    uint32_t isets = (uint32_t)((sw ? COST_SUNWAY_L1I_BYTES : COST_X86_L1I_BYTES) / 64 / (sw ? COST_SUNWAY_L1I_WAYS : COST_X86_L1I_WAYS));
    uint32_t iways = (uint32_t)(sw ? COST_SUNWAY_L1I_WAYS : COST_X86_L1I_WAYS);
    r->sl1_ways = 0;
    if (r->o.l1_per_mode || sets != SL1_SETS || isets != SL1_SETS || iways != ways || ways < 2 || ways > SL1_WAYS ||
        r->npages > SL1_MAX_PAGES)
        return 0;
    r->sl1_ways = ways;
    memset(&r->sl1, 0, sizeof r->sl1);
    uint32_t cap = 64;
    while (cap < 2 * r->npages)
        cap <<= 1;
    for (int mode = 0; mode < N_REPLAY_MODES; mode++) {
        if (!r->built[mode])
            continue;
        mode_share *sh = &r->sh[mode];
        if (!pm_init(&sh->fwd, cap) || !pm_init(&sh->back, cap))
            return failf(r, VMSIM_REPLAY_NO_MEMORY, "out of memory for the shared L1 of mode %s", replay_mode_names[mode]);
        sh->r = r;
        sh->mode = mode;
        dcache *d = &r->dc[mode];
        d->own = 0;
        bool code = false;      /* (walks read through the data cache only: the instruction cache is empty) */
        for (uint32_t set = 0; set < SL1_SETS; set++) {
            uint32_t keys[SL1_WAYS];
            if (dcache_l1_set_read(d, DC_DATA, set, keys))
                d->own |= 1ull << set;
            code |= dcache_l1_set_read(d, DC_CODE, set, keys) != 0;
        }
        if (code)       /* otherwise the mode keeps its own L1s */
            continue;
        d->take = take_set;
        d->take_ctx = sh;
    }
    return 0;
}

/* The slow path of one access in one mode: translate it, count, remember a TLB hit. */
static void translate_one(machine *m, mode_memo *mm, vm_result *res, mode_stats *st, uint64_t gva, enum vm_op op,
                          tlb_memo *e, mode_share *sh)
{
    vm_access a = {.gva = gva, .op = op, .user = true};
    res->record = false;
    translate(m, &a, res);
    if (m->dc->take) {
        /* the shared L1 holds this access's line as a load or store that was made: a mode
         * that does not make it, or whose pages meet at one host page, leaves it */
        if (res->outcome != OUT_OK || !res->hpa_valid || !pm_put(&sh->fwd, gva >> 12, res->hpa >> 12) ||
            !pm_put(&sh->back, res->hpa >> 12, gva >> 12))
            sl1_leave(sh->r, sh->mode);
    }
    st->refs += res->memory_refs;
    st->guest_refs += res->guest_refs;
    st->nested_refs += res->nested_refs;
    st->ad_writes += res->ad_writes;
    st->exits += res->exits;
    st->pwc_hits += res->pwc_hits;
    st->ntlb_hits += res->ntlb_hits;
    st->outcomes[res->outcome]++;
    if (res->outcome == OUT_OK) {
        st->exits_ok += res->exits;
        if (res->hpa_valid) {
            dcache *dc = m->dc;
            if (dc->take && (op == OP_FETCH || !(dc->own >> (gva >> 6 & (SL1_SETS - 1)) & 1)))
                dc->data[sh->in->miss[sh->pos] & SL1_MISS ? dcache_below(dc, res->hpa) : DC_L1]++;
            else
                dc->data[dcache_lookup(dc, res->hpa, op == OP_FETCH ? DC_CODE : DC_DATA)]++;
        }
    }
    if (res->tlb_hit != 1) {
        st->tlb_misses += res->tlb_hit == 0;
        if (++mm->gen == 1u << 27) {     /* the key's 27 bits of generation wrap: forget every slot */
            memset(mm->slot, 0, sizeof mm->slot);
            mm->gen = 1;
        }
        return;
    }
    cache_line *line = hit_line(m, gva);
    if (!line)
        return;
    uint64_t key = MEMO_KEY(gva >> 12, mm->gen);
    if (e->key != key)
        *e = (tlb_memo){.key = key};
    e->ops |= 1u << op;
    e->age = &m->tlb->age[line - m->tlb->lines];
    e->hpa_page = res->hpa & ~0xFFFull;
}

/* hit_run's accesses one line at a time (some may miss the L1, or read sets the mode keeps). */
static __attribute__((noinline)) uint64_t hit_lines(dcache *dc, const batch_in *in, size_t i, uint32_t k, int which,
                                                    uint64_t base)
{
    const uint16_t *off = in->off;
    const uint16_t *nxt = in->nxt;
    const uint8_t *miss = in->miss;
    uint64_t same = k;
    const uint32_t *last = &dc->l1[which].last_key[0];
    if (dc->take && which == DC_CODE) {
        for (size_t j = i, stop = i + k; j < stop; j = nxt[j])
            if (miss[j] & SL1_MISS) {
                same--;
                dc->data[dcache_below(dc, base | off[j])]++;
            }
    } else if (dc->take) {
        /* the shared L1's answer, in the sets the mode does not keep itself */
        uint64_t own = dc->own;
        for (size_t j = i, stop = i + k; j < stop; j = nxt[j]) {
            uint64_t hpa = base | off[j];
            if (!(own >> (off[j] >> 6) & 1)) {
                if (miss[j] & SL1_MISS) {
                    same--;
                    dc->data[dcache_below(dc, hpa)]++;
                }
            } else if ((uint32_t)(hpa >> 6) + 1 != *last) {
                same--;
                dc->data[dcache_lookup(dc, hpa, DC_DATA)]++;
            }
        }
    } else {
        for (size_t j = i, stop = i + k; j < stop; j = nxt[j]) {
            uint64_t hpa = base | off[j];
            same--;
            if ((uint32_t)(hpa >> 6) + 1 == *last)
                same++;
            else
                dc->data[dcache_lookup(dc, hpa, which)]++;
        }
    }
    return same;
}

/* A run of k accesses from i that the memo answered: the TLB line marked used as often
 * (by the caller), and each access's line read through the mode's data caches; how many
 * were L1 hits found without a lookup. `lines`: the sets the run reads (a superset does:
 * ~0 takes the exact path). Each access still reads its own line. One that reads the same
 * line as the access before it reads its L1's last line, which changes nothing there
 * (dcache.h): counted as an L1 hit without a lookup. The first of each line (nxt: where
 * the next line starts, the same in every mode) is looked up; it too is often the L1's
 * last line, also found without a search. */
static inline __attribute__((always_inline)) uint64_t hit_run(dcache *dc, const batch_in *in, size_t i, uint32_t k,
                                                              enum vm_op op, uint64_t base, bool misses,
                                                              uint64_t lines, bool take, uint64_t own)
{
    int which = op == OP_FETCH ? DC_CODE : DC_DATA;
    if (take && !misses && (which == DC_CODE || !(lines & own)))
        return k;       /* every access of the run found by the shared L1 */
    return hit_lines(dc, in, i, k, which, base);
}

/* What run_runs keeps in registers, in memory across its slow path. */
typedef struct run_acc {
    uint64_t ok, l1;        /* l1: the L1 hits counted without a lookup, added at the end */
    uint32_t tick;
} run_acc;

/* A run whose first access the memo does not answer: that access translated, and the rest
 * of the run (the same page and kind) tried again, until the memo answers or the run ends. */
static __attribute__((noinline)) void miss_run(vmsim_replay *r, int mode, const batch_in *in, size_t i, uint32_t k,
                                               uint64_t page, enum vm_op op, uint64_t lines, run_acc *acc)
{
    machine *m = &r->m[mode];
    mode_memo *mm = &r->memo[mode];
    cache *tlb = m->tlb;
    dcache *dc = m->dc;
    tlb_memo *e = &mm->slot[page & (MEMO_SLOTS - 1)];
    do {
        if (tlb)
            tlb->tick = acc->tick;
        r->sh[mode].pos = i;
        translate_one(m, mm, r->mres[mode], &r->st[mode], page << 12 | in->off[i], op, e, &r->sh[mode]);
        if (tlb)
            acc->tick = tlb->tick;
        i++;
        if (!--k)
            return;
    } while (!(e->key == MEMO_KEY(page, mm->gen) && (e->ops >> op & 1)));
    acc->tick += k;
    *e->age = (uint64_t)acc->tick << 1 | 1;
    acc->ok += k;
    acc->l1 += hit_run(dc, in, i, k, op, e->hpa_page, in->miss && in->miss[i] & SL1_RUN_MISSES, lines, dc->take,
                       dc->own);
}

/* Whether the memo answers a run and the shared L1s found all its lines (a load or store
 * run reading none of the sets the mode keeps: own_data, ~0 where the mode keeps its own
 * L1s; a fetch run: own_code, 0 or ~0 likewise). */
#define MEMO_HIT(e, page, gkey, op) ((e)->key == ((page) | (gkey)) && ((e)->ops >> (op)&1))
#define LINES_FOUND(w, lines, own_data, own_code) \
    (!((w)&RR_MISSES) && !((lines) & (RR_OP(w) == OP_FETCH ? (own_code) : (own_data))))
#define RUN_FAST(e, page, gkey, w, lines, own_data, own_code) \
    (MEMO_HIT(e, page, gkey, RR_OP(w)) && LINES_FOUND(w, lines, own_data, own_code))

/* The hot loop: runs[x..] while RUN_FAST, each marking its TLB line used as often as it
 * has accesses (cache.c's find: its last use is what the line keeps), all of them L1
 * hits; returns the first run that needs more, with acc and *pi past those before it.
 * Without a call in it: V8 keeps no register across a call in WebAssembly, so a loop
 * that may call spills its values to the stack at every turn. */
static __attribute__((noinline)) size_t fast_runs(const run_rec *runs, size_t x, size_t nr, const tlb_memo *slot,
                                                  uint64_t gkey, uint64_t own_data, uint64_t own_code, run_acc *acc,
                                                  size_t *pi)
{
    uint32_t tick = acc->tick;
    uint64_t ok = 0;
    for (; x < nr; x++) {
        uint64_t w = runs[x].w, page = RR_PAGE(w);
        const tlb_memo *e = &slot[page & (MEMO_SLOTS - 1)];
        if (!RUN_FAST(e, page, gkey, w, runs[x].lines, own_data, own_code))
            break;
        tick += RR_COUNT(w);
        *e->age = (uint64_t)tick << 1 | 1;
        ok += RR_COUNT(w);
    }
    acc->tick = tick;
    acc->ok += ok;
    acc->l1 += ok;
    *pi += ok;
    return x;
}

/* Whether the memo answers each page of a segment for each kind of its runs. */
static inline __attribute__((always_inline)) bool seg_hit(const seg_page *pg, uint32_t n, const tlb_memo *slot,
                                                          uint64_t gkey)
{
    for (uint32_t k = 0; k < n; k++) {
        const tlb_memo *e = &slot[pg[k].page & (MEMO_SLOTS - 1)];
        if (e->key != (pg[k].page | gkey) || (e->ops & pg[k].ops) != pg[k].ops)
            return false;
    }
    return true;
}

/* A segment's TLB lines marked used as its runs would have left them: each page's at its
 * last run (in the order of those, so that pages on one TLB line leave it the latest). */
static inline __attribute__((always_inline)) void seg_mark(const seg_page *pg, uint32_t n, const tlb_memo *slot,
                                                           uint32_t tick)
{
    for (uint32_t k = 0; k < n; k++)
        *slot[pg[k].page & (MEMO_SLOTS - 1)].age = (uint64_t)(tick + pg[k].last) << 1 | 1;
}

/* Whether the shared L1s found every line of a segment (LINES_FOUND for each run). */
#define SEG_FOUND(s, own_data, own_code) \
    (!(s)->misses && !((s)->data_lines & (own_data)) && !((s)->fetch && (own_code)))

/* The hot loop by segments: segs from g on while each is whole for the memo and the shared
 * L1s; returns the first that is not, acc and *pi past those before it. Without a call in
 * it, as fast_runs. */
static __attribute__((noinline)) size_t fast_segs(const seg_set *ss, size_t g, const tlb_memo *slot, uint64_t gkey,
                                                  uint64_t own_data, uint64_t own_code, run_acc *acc, size_t *pi)
{
    uint32_t tick = acc->tick;
    uint64_t ok = 0;
    for (size_t ng = ss->n; g < ng; g++) {
        const run_seg *s = &ss->seg[g];
        const seg_page *pg = ss->pg + s->pg0;
        if (!s->npages || !SEG_FOUND(s, own_data, own_code) || !seg_hit(pg, s->npages, slot, gkey))
            break;
        seg_mark(pg, s->npages, slot, tick);
        tick += s->count;
        ok += s->count;
    }
    acc->tick = tick;
    acc->ok += ok;
    acc->l1 += ok;
    *pi += ok;
    return g;
}

/* One batch through one mode, by segments (batch_in.segs) and run by run (batch_in.runs).
 * Mode by mode rather than access by access: one mode's TLB and memo stay in the
 * processor's caches for the whole batch (measured: the WebAssembly build gains most).
 * The segments fast_segs takes whole go there; a segment the memo answers whose lines
 * are not all found goes here, its TLB part at once and its lines run by run; the runs of
 * other segments (or of a batch without them) go through fast_runs, and the runs it does
 * not take here: a run whose lines go one by one (hit_lines) or that the memo does not
 * answer (miss_run, out of line). What a translation may change (the memo's generation,
 * the TLB's tick, the sets the mode keeps) is read again after one. */
static __attribute__((noinline)) void run_runs(vmsim_replay *r, int mode, const batch_in *in)
{
    const run_rec *runs = in->runs;
    machine *m = &r->m[mode];
    mode_memo *mm = &r->memo[mode];
    cache *tlb = m->tlb;
    dcache *dc = m->dc;
    r->sh[mode].in = in;
    run_acc acc = {.tick = tlb ? tlb->tick : 0};
    uint64_t gkey = (uint64_t)mm->gen << 36;
    uint64_t own_data = dc->take ? dc->own : ~0ull, own_code = dc->take ? 0 : ~0ull;
    const tlb_memo *slot = mm->slot;
    const seg_set *ss = in->segs;
    size_t i = 0, nr = in->nruns, g = 0, ng = ss ? ss->n : 0;
    for (size_t x = 0; x < nr;) {
        size_t x1 = nr;
        if (g < ng) {
            size_t g1 = fast_segs(ss, g, slot, gkey, own_data, own_code, &acc, &i);
            if (g1 > g)
                x = ss->seg[g1 - 1].x1;
            if (g1 == ng)
                break;
            const run_seg *s = &ss->seg[g1];
            g = g1 + 1;
            x1 = s->x1;
            const seg_page *pg = ss->pg + s->pg0;
            if (s->npages && seg_hit(pg, s->npages, slot, gkey)) {
                /* the memo answers it: its TLB part at once, its lines run by run */
                seg_mark(pg, s->npages, slot, acc.tick);
                acc.tick += s->count;
                acc.ok += s->count;
                for (; x < x1; x++) {
                    uint64_t w = runs[x].w;
                    uint32_t k = RR_COUNT(w);
                    if (LINES_FOUND(w, runs[x].lines, own_data, own_code))
                        acc.l1 += k;
                    else
                        acc.l1 += hit_lines(dc, in, i, k, RR_OP(w) == OP_FETCH ? DC_CODE : DC_DATA,
                                            slot[RR_PAGE(w) & (MEMO_SLOTS - 1)].hpa_page);
                    i += k;
                }
                continue;
            }
        }
        /* runs x .. x1 one by one */
        while (x < x1) {
            x = fast_runs(runs, x, x1, slot, gkey, own_data, own_code, &acc, &i);
            for (; x < x1; x++) {
                uint64_t w = runs[x].w, page = RR_PAGE(w);
                uint32_t k = RR_COUNT(w);
                enum vm_op op = RR_OP(w);
                const tlb_memo *e = &slot[page & (MEMO_SLOTS - 1)];
                if (MEMO_HIT(e, page, gkey, op)) {
                    if (LINES_FOUND(w, runs[x].lines, own_data, own_code))
                        break;      /* back to fast_runs */
                    acc.tick += k;
                    *e->age = (uint64_t)acc.tick << 1 | 1;
                    acc.ok += k;
                    acc.l1 += hit_lines(dc, in, i, k, op == OP_FETCH ? DC_CODE : DC_DATA, e->hpa_page);
                } else {
                    miss_run(r, mode, in, i, k, page, op, runs[x].lines, &acc);
                    gkey = (uint64_t)mm->gen << 36;
                    own_data = dc->take ? dc->own : ~0ull;
                    own_code = dc->take ? 0 : ~0ull;
                }
                i += k;
            }
        }
    }
    if (tlb)
        tlb->tick = acc.tick;
    dc->data[DC_L1] += acc.l1;
    r->st[mode].outcomes[OUT_OK] += acc.ok;
    r->st[mode].accesses += in->n;
}

/* Accesses from..n of a batch through one mode, access by access (a range that may end
 * within a run: the l1_leave_at check). */
static void __attribute__((noinline)) run_part(vmsim_replay *r, int mode, const batch_in *in, size_t from, size_t n)
{
    machine *m = &r->m[mode];
    mode_memo *mm = &r->memo[mode];
    cache *tlb = m->tlb;
    dcache *dc = m->dc;
    mode_share *sh = &r->sh[mode];
    sh->in = in;
    uint64_t ok = 0, l1 = 0;
    uint32_t gen = mm->gen, tick = tlb ? tlb->tick : 0;
    const run_rec *run = in->runs;
    for (size_t start = 0; start < n; start += RR_COUNT(run->w), run++) {
        size_t end = start + RR_COUNT(run->w) < n ? start + RR_COUNT(run->w) : n;
        uint64_t page = RR_PAGE(run->w);
        enum vm_op op = RR_OP(run->w);
        tlb_memo *e = &mm->slot[page & (MEMO_SLOTS - 1)];
        for (size_t i = start > from ? start : from; i < end; i++) {
            if (e->key == MEMO_KEY(page, gen) && (e->ops >> op & 1)) {
                /* the rest of the run (to n) */
                uint32_t k = (uint32_t)(end - i);
                tick += k;
                *e->age = (uint64_t)tick << 1 | 1;
                ok += k;
                l1 += hit_run(dc, in, i, k, op, e->hpa_page, in->miss && in->miss[i] & SL1_RUN_MISSES, ~0ull, dc->take,
                              dc->own);
                break;
            }
            if (tlb)
                tlb->tick = tick;
            sh->pos = i;
            translate_one(m, mm, r->mres[mode], &r->st[mode], page << 12 | in->off[i], op, e, sh);
            gen = mm->gen;
            if (tlb)
                tick = tlb->tick;
        }
    }
    if (tlb)
        tlb->tick = tick;
    dc->data[DC_L1] += l1;
    r->st[mode].outcomes[OUT_OK] += ok;
    r->st[mode].accesses += n - from;
}

#ifdef __EMSCRIPTEN__
/* Binaryen (emcc's wasm-opt) inlines a function called from one place whatever its size
 * and whatever the C says; V8 then allocates registers for the whole, and the hot loop
 * spills to the stack. A function whose address is taken is not inlined that way. */
__attribute__((used)) void *volatile replay_out_of_line[] = {(void *)miss_run, (void *)run_runs, (void *)fast_runs,
                                                             (void *)fast_segs};
#endif

static void run_batch(vmsim_replay *r, int mode, const batch_in *in)
{
    dcache *dc = &r->dc[mode];
    uint64_t at = r->o.l1_leave_at - 1 - r->st[mode].accesses;     /* the option's access, in this batch */
    if (dc->take && r->o.l1_leave_at && at < in->n) {
        run_part(r, mode, in, 0, at);
        r->sh[mode].pos = at;
        sl1_leave(r, mode);
        run_part(r, mode, in, at, in->n);
    } else {
        run_runs(r, mode, in);
    }
    if (dc->take)
        sl1_give_back(r, mode, in);
}

/* off[i]: access i's offset in its page; nxt[i]: the first access after i that is not in
 * its run (of one page and kind) or reads another 64-byte line (the same in every mode: a
 * run stays on one page). */
static size_t compute_runs(const trace_access *b, uint16_t *off, uint16_t *nxt, run_rec *runs, size_t n)
{
    if (!n)
        return 0;
    /* from the end, the access after i in locals (off and nxt may alias for the compiler:
     * reading them back would wait for each store); the runs written from the end of runs
     * as each one's first access is found: they are runs[returned .. n-1] */
    uint64_t after = b[n - 1].addr, lines = 1ull << (after >> 6 & (SL1_SETS - 1));
    enum vm_op op_after = op_of[b[n - 1].kind];
    uint32_t r = 1, x = (uint32_t)n;
    run_rec *out = runs + n;
    off[n - 1] = (uint16_t)(after & 0xFFF);
    nxt[n - 1] = (uint16_t)n;
    for (size_t i = n - 1; i-- > 0;) {
        uint64_t a = b[i].addr, bit = 1ull << (a >> 6 & (SL1_SETS - 1));
        enum vm_op op = op_of[b[i].kind];
        bool more = (a ^ after) >> 12 == 0 && op == op_after;
        if (!more)      /* the run from i + 1 is whole */
            *--out = RR_MAKE(after, r, op_after, lines);
        lines = more ? lines | bit : bit;
        r = more ? r + 1 : 1;
        x = more && (a ^ after) >> 6 == 0 ? x : (uint32_t)(i + 1);
        off[i] = (uint16_t)(a & 0xFFF);
        nxt[i] = (uint16_t)x;
        after = a;
        op_after = op;
    }
    *--out = RR_MAKE(after, r, op_after, lines);
    return (size_t)(out - runs);
}

/* The runs by page (seg_set): each segment as many runs as keep it within SEG_PAGES
 * pages; when the set is full, the rest of the runs in one segment without pages. */
static void build_segs(const run_rec *runs, size_t nr, seg_set *ss)
{
    uint32_t ns = 0, np = 0;
    for (size_t x = 0; x < nr; ns++) {
        run_seg *s = &ss->seg[ns];
        if (ns == SEG_MAX - 1) {
            *s = (run_seg){.x1 = (uint32_t)nr};
            ns++;
            break;
        }
        seg_page *pg = &ss->pg[np];
        uint32_t n = 0, count = 0, misses = 0, fetch = 0, k1 = 0, k2 = 0;
        uint64_t data = 0, p1 = ~0ull, p2 = ~0ull;     /* the pages of the last two runs, at pg[k1], pg[k2] */
        for (; x < nr; x++) {
            uint64_t w = runs[x].w, page = RR_PAGE(w);
            uint32_t k;
            if (page == p2) {       /* a program's fetches and data alternate: the run before last's page */
                k = k2;
            } else if (page == p1) {
                k = k1;
            } else {
                k = 0;
                while (k < n && pg[k].page != page)
                    k++;
                if (k == n) {
                    if (n == SEG_PAGES)
                        break;
                    pg[n++] = (seg_page){.page = page};
                }
            }
            p2 = p1;
            k2 = k1;
            p1 = page;
            k1 = k;
            count += RR_COUNT(w);
            pg[k].last = count;
            pg[k].ops |= 1u << RR_OP(w);
            misses |= (uint32_t)(w & RR_MISSES);
            if (RR_OP(w) == OP_FETCH)
                fetch = 1;
            else
                data |= runs[x].lines;
        }
        for (uint32_t a = 1; a < n; a++)        /* by their last runs */
            for (uint32_t b = a; b && pg[b - 1].last > pg[b].last; b--) {
                seg_page t = pg[b];
                pg[b] = pg[b - 1];
                pg[b - 1] = t;
            }
        *s = (run_seg){.x1 = (uint32_t)x, .count = count, .pg0 = np, .npages = n, .data_lines = data,
                       .misses = misses, .fetch = fetch};
        np += n;
    }
    ss->n = ns;
    ss->npages = np;
}

/* The runs by page of a batch about to go through this handle's modes (none built: no
 * segments), after the shared L1s have marked their misses on its runs. */
static void segment(vmsim_replay *r, batch_in *in)
{
    if (vmsim_replay_modes_here(r)) {
        build_segs(in->runs, in->nruns, &r->segs);
        in->segs = &r->segs;
    }
}

static void run_all(vmsim_replay *r, const trace_access *b, size_t n)
{
    size_t run0 = compute_runs(b, r->off, r->nxt, r->runs, n);
    batch_in in = {.off = r->off, .nxt = r->nxt, .runs = r->runs + run0, .nruns = n - run0, .n = n};
    if (r->sl1_ways) {
        r->sl1_before = r->sl1;
        sl1_run(r, b, r->nxt, r->runs + run0, n, r->miss);
        in.miss = r->miss;
        in.before = &r->sl1_before;
        in.after = &r->sl1;
    }
    segment(r, &in);
    for (int mode = 0; mode < N_REPLAY_MODES; mode++)
        if (r->built[mode])
            run_batch(r, mode, &in);
}

static int share_feed(vmsim_replay *r, const uint8_t *p, const uint8_t *end);

EXPORT int vmsim_replay_feed(vmsim_replay *r, const uint8_t *body, size_t n)
{
    if (!r || r->status)
        return vmsim_replay_status(r);
    if (r->pass != 2)
        return failf(r, VMSIM_REPLAY_BAD_TRACE, "vmsim_replay_feed before vmsim_replay_scan_end");
    const uint8_t *p = body, *end = body + n;
    if (r->share)
        return share_feed(r, p, end);
    while (p < end || r->dec.ncarry) {
        const uint8_t *before = p;
        size_t got = trace_decode(&r->dec, &p, end, r->batch, BATCH);
        if (r->dec.failed)
            return decoder_failed(r);
        if (check_overrun(r))
            return r->status;
        run_all(r, r->batch, got);
        if (p == before && !got)
            break;
    }
    return 0;
}

/* ---- pass 2 by batches (the CLI's threads, in chunks below; the page's shared decoder):
 * the body decoded into batches, each sealed (its runs, then the shared L1s in the
 * batches' order), maybe grouped by page, and run through each mode, a mode's batches in
 * order; a mode's state is its own (machine, caches, memo, counters, scratch result), so
 * two modes run at once on different threads never touch the same memory. ---- */

/* A batch as the page's shared decoder hands it to another module (vmsim_replay_share):
 * this head, then pass 1's pages, or pass 2's runs, the shared L1s before and after the
 * batch, and each access's offset in its page, nxt and the shared L1s' answer: what the
 * modes read, not the decoded accesses (a third of the bytes). The pass, whether this is
 * its last batch, and where the decoder stood after it (what a handle fed by batches
 * checks at the end of each pass as if it had decoded the body itself). */
typedef struct wire_head {
    uint32_t pass, last, n, nruns, sl1_ways, ended;
    uint32_t off[2];
    uint64_t count, kinds[4], page[2];
    uint32_t nsegs, npages;         /* pass 2: the segments after the rest, and their pages (0: none) */
} wire_head;

/* What is handed out, in the order handed out, so that it is one span of memory: the head
 * written just before the first page or run (room: before runs[0]; the runs end at
 * runs[VMSIM_REPLAY_BATCH - 1], compute_runs writing them from the end), to the end; then
 * (pass 2, grouped) nsegs run_seg and npages seg_page, written into the decoded accesses
 * that follow the struct in vmsim_replay_batch (the modes read the wire's arrays, not those),
 * and only where the whole fits in a batch_wire: what a ring's slot holds. */
typedef struct batch_wire {
    unsigned char room[sizeof(wire_head)];
    union {
        run_rec runs[VMSIM_REPLAY_BATCH];       /* pass 2 */
        trace_page pg[VMSIM_REPLAY_BATCH];      /* pass 1: pages as trace_scan reports them */
    };
    /* pass 2: the shared L1s before and after the batch (sl1_ways 0: not shared) */
    sl1_state before, after;
    uint16_t off[VMSIM_REPLAY_BATCH], nxt[VMSIM_REPLAY_BATCH];
    uint8_t miss[VMSIM_REPLAY_BATCH];       /* the shared L1s' answers (SL1_*) */
} batch_wire;
#define WIRE_TAIL (sizeof(batch_wire) - offsetof(batch_wire, before))
_Static_assert(offsetof(batch_wire, before) == offsetof(batch_wire, runs) + sizeof(run_rec) * VMSIM_REPLAY_BATCH,
               "what follows the runs starts where they end");
_Static_assert(sizeof(wire_head) % 16 == 0 && sizeof(trace_page) == sizeof(run_rec) && sizeof(sl1_state) % 8 == 0,
               "the head, the pages and the runs keep what follows them aligned");
_Static_assert(VMSIM_REPLAY_BATCH <= 65535, "an offset and an index in the batch are kept in 16 bits");

struct vmsim_replay_batch {
    size_t n;
    uint32_t run0, sl1_ways;        /* the runs: w.runs[run0 .. VMSIM_REPLAY_BATCH - 1] */
    bool grouped;                   /* segs holds this batch's runs by page */
    batch_wire w;
    trace_access a[VMSIM_REPLAY_BATCH];     /* pass 2, as decoded; once sealed, the wire's segments */
    seg_set segs;                   /* vmsim_replay_batch_group's */
};
_Static_assert(offsetof(vmsim_replay_batch, a) == offsetof(vmsim_replay_batch, w) + sizeof(batch_wire),
               "the segments handed out follow the rest of the wire");
_Static_assert(sizeof(trace_access) * VMSIM_REPLAY_BATCH >= sizeof(run_rec) * VMSIM_REPLAY_BATCH,
               "the accesses hold the most segments a batch_wire has room for");

vmsim_replay_batch *vmsim_replay_batch_new(void)
{
    return calloc(1, sizeof(vmsim_replay_batch));
}

EXPORT void vmsim_replay_batch_free(void *b)
{
    free(b);
}

size_t vmsim_replay_batch_size(const vmsim_replay_batch *b)
{
    return b->n;
}

void vmsim_replay_batch_clear(vmsim_replay_batch *b)
{
    b->n = 0;
    b->grouped = false;
}

/* Accesses decoded with d into the room left in b, from *pp on (a record split between
 * pieces carried over), until b is full, the piece is used up, d fails or has decoded more
 * than `most` accesses. */
static size_t decode_batch(trace_decoder *d, uint64_t most, const uint8_t **pp, const uint8_t *end,
                           vmsim_replay_batch *b)
{
    const uint8_t *p = *pp;
    size_t start = b->n;
    while ((p < end || d->ncarry) && b->n < VMSIM_REPLAY_BATCH) {
        const uint8_t *before = p;
        size_t got = trace_decode(d, &p, end, b->a + b->n, VMSIM_REPLAY_BATCH - b->n);
        b->n += got;
        if (d->failed || d->count > most || (p == before && !got))
            break;
    }
    *pp = p;
    return b->n - start;
}

size_t vmsim_replay_decode(vmsim_replay *r, const uint8_t **pp, const uint8_t *end, vmsim_replay_batch *b)
{
    if (!r || r->status)
        return 0;
    if (r->pass != 2) {
        failf(r, VMSIM_REPLAY_BAD_TRACE, "vmsim_replay_decode before vmsim_replay_scan_end");
        return 0;
    }
    size_t got = decode_batch(&r->dec, r->h.accesses, pp, end, b);
    if (r->dec.failed)
        decoder_failed(r);
    else
        check_overrun(r);
    return got;
}

void vmsim_replay_batch_runs(vmsim_replay_batch *b)
{
    /* the runs end at the array's end, whatever n: what follows them is handed out with them */
    size_t skip = VMSIM_REPLAY_BATCH - b->n;
    b->run0 = (uint32_t)(skip + compute_runs(b->a, b->w.off, b->w.nxt, b->w.runs + skip, b->n));
    b->sl1_ways = 0;
    b->grouped = false;
}

void vmsim_replay_batch_sl1(vmsim_replay *r, vmsim_replay_batch *b)
{
    b->sl1_ways = r ? r->sl1_ways : 0;
    if (b->sl1_ways) {
        b->w.before = r->sl1;
        sl1_run(r, b->a, b->w.nxt, b->w.runs + b->run0, b->n, b->w.miss);
        b->w.after = r->sl1;
    }
}

void vmsim_replay_batch_seal(vmsim_replay *r, vmsim_replay_batch *b)
{
    vmsim_replay_batch_runs(b);
    vmsim_replay_batch_sl1(r, b);
}

/* ---- pass 2 in chunks ---- */

struct vmsim_replay_cursor {
    trace_decoder dec;
    size_t chunk;
    bool overrun;
};

int vmsim_replay_chunked(vmsim_replay *r)
{
    if (!r || r->status)
        return vmsim_replay_status(r);
    if (r->pass != 1 || r->dec.consumed || r->dec.ncarry)
        return failf(r, VMSIM_REPLAY_BAD_TRACE, "vmsim_replay_chunked after the first piece");
    r->marking = true;
    r->mark_apart = MARK_APART;
    return 0;
}

size_t vmsim_replay_chunks(const vmsim_replay *r)
{
    return r && r->pass == 2 && !r->status ? r->nmarks : 0;
}

double vmsim_replay_chunk_bytes(const vmsim_replay *r, size_t k)
{
    if (!r || k >= r->nmarks)
        return 0;
    return (double)((k + 1 < r->nmarks ? r->marks[k + 1].consumed : r->body_bytes) - r->marks[k].consumed);
}

double vmsim_replay_chunk_accesses(const vmsim_replay *r, size_t k)
{
    if (!r || k >= r->nmarks)
        return 0;
    return (double)((k + 1 < r->nmarks ? r->marks[k + 1].count : r->h.accesses) - r->marks[k].count);
}

/* ---- Pass 1's findings, kept for another replay of the same file ----
 * What pass 1 finds that pass 2 and the layout use, whatever the options: the inflated
 * body's length, where each stream stood at its end, the pages with their kinds, and the
 * marks (docs/replay.md, "Again without pass 1"). Saved once pass 1 is over (scan_end
 * done), loaded into a handle opened on the same file before its first piece, in place of
 * pass 1: scan_end then lays the pages out and builds the machines as after a scan. In this
 * build's byte order: the page keeps it in its memory, for the File it came from. */
#define SCAN_MAGIC 0x31564e4143534d56ull     /* "VMSCANV1" */
#define SCAN_HEAD 14u                        /* u64s before the marks */

size_t vmsim_replay_scan_save(const vmsim_replay *r, uint8_t *out, size_t cap)
{
    if (!r || r->status || r->pass < 2)
        return 0;
    size_t words = SCAN_HEAD + 5 * r->nmarks + r->ps.used, need = words * 8;
    if (!out || cap < need)
        return need;
    uint64_t head[SCAN_HEAD] = {SCAN_MAGIC, r->h.accesses, r->h.pages, r->h.counts[0], r->h.counts[1], r->h.counts[2],
                                r->h.counts[3], r->h.body_bytes, r->body_bytes, r->end_page[0], r->end_page[1],
                                r->end_off[0] | (uint64_t)r->end_off[1] << 32, r->mark_apart, r->nmarks};
    uint8_t *q = out;
    memcpy(q, head, sizeof head);
    q += sizeof head;
    for (size_t i = 0; i < r->nmarks; i++) {
        const replay_mark *m = &r->marks[i];
        uint64_t w[5] = {m->consumed, m->count, m->page[0], m->page[1], m->off[0] | (uint64_t)m->off[1] << 32};
        memcpy(q, w, sizeof w);
        q += sizeof w;
    }
    for (uint32_t i = 0; i < r->ps.cap; i++)
        if (r->ps.keys[i]) {
            uint64_t w = (r->ps.keys[i] - 1) << 3 | r->ps.kinds[i];
            memcpy(q, &w, 8);
            q += 8;
        }
    return need;
}

static uint64_t scan_word(const uint8_t *in, size_t i)
{
    uint64_t w;
    memcpy(&w, in + 8 * i, 8);
    return w;
}

/* Two streams' offsets in one word (scan_save): each a place in a page. */
static bool scan_offs_ok(uint64_t w)
{
    return (uint32_t)w < 4096 && w >> 32 < 4096;
}

int vmsim_replay_scan_load(vmsim_replay *r, const uint8_t *in, size_t n)
{
    if (!r || r->status || r->pass != 1 || r->dec.consumed || r->dec.ncarry || r->ps.used || r->nmarks || r->share ||
        !in || n < SCAN_HEAD * 8 || n % 8)
        return -1;
    const trace_header *h = &r->h;
    uint64_t nm = scan_word(in, 13), body = scan_word(in, 8), offs = scan_word(in, 11);
    uint64_t want[8] = {SCAN_MAGIC, h->accesses, h->pages, h->counts[0], h->counts[1], h->counts[2], h->counts[3], h->body_bytes};
    for (size_t i = 0; i < 8; i++)
        if (scan_word(in, i) != want[i])
            return -1;      /* not this trace's */
    if (nm > MAX_MARKS || h->pages > MAX_PAGES || n / 8 != SCAN_HEAD + 5 * nm + h->pages || !body || !scan_offs_ok(offs) ||
        (nm && !scan_word(in, 12)) || (r->marking && !nm))
        return -1;
    replay_mark *marks = nm ? malloc(nm * sizeof *marks) : NULL;
    if (nm && !marks)
        return -1;
    /* the marks: in the body, in order, each stream's place a place in a page */
    for (uint64_t i = 0; i < nm; i++) {
        const uint8_t *m = in + 8 * (SCAN_HEAD + 5 * i);
        uint64_t o = scan_word(m, 4);
        marks[i] = (replay_mark){.consumed = scan_word(m, 0), .count = scan_word(m, 1),
                                 .page = {scan_word(m, 2), scan_word(m, 3)}, .off = {(uint32_t)o, (uint32_t)(o >> 32)}};
        if ((i && marks[i].consumed <= marks[i - 1].consumed) || marks[i].consumed >= body || marks[i].count > h->accesses ||
            !scan_offs_ok(o) || marks[i].page[0] >= TRACE_USER_PAGES || marks[i].page[1] >= TRACE_USER_PAGES) {
            free(marks);
            return -1;
        }
    }
    /* the pages, each once, each with a kind */
    const uint8_t *pg = in + 8 * (SCAN_HEAD + 5 * nm);
    bool added, ok = true;
    for (uint64_t i = 0; ok && i < h->pages; i++) {
        uint64_t w = scan_word(pg, i);
        ok = (w & 7) && w >> 3 < TRACE_USER_PAGES && !ps_add(r, w >> 3, (uint8_t)(w & 7), &added);
    }
    if (!ok || r->ps.used != h->pages) {     /* a page without a kind or above the user half, or twice */
        free(marks);
        if (r->status)      /* out of memory */
            return -1;
        free(r->ps.keys);
        free(r->ps.kinds);
        r->ps = (page_set){0};
        return -1;
    }
    free(r->marks);
    r->marks = marks;
    r->nmarks = r->cap_marks = nm;
    if (nm)
        r->mark_apart = scan_word(in, 12);
    /* the decoder as pass 1 leaves it: at the body's end, past its end record */
    trace_decoder_init(&r->dec);
    r->dec.page[0] = scan_word(in, 9);
    r->dec.page[1] = scan_word(in, 10);
    r->dec.off[0] = (uint32_t)offs;
    r->dec.off[1] = (uint32_t)(offs >> 32);
    r->dec.count = h->accesses;
    memcpy(r->dec.kinds, h->counts, sizeof r->dec.kinds);
    r->dec.consumed = body;
    r->dec.ended = true;
    return 0;
}

vmsim_replay_cursor *vmsim_replay_cursor_new(void)
{
    return calloc(1, sizeof(vmsim_replay_cursor));
}

void vmsim_replay_cursor_free(vmsim_replay_cursor *c)
{
    free(c);
}

void vmsim_replay_cursor_at(const vmsim_replay *r, vmsim_replay_cursor *c, size_t k)
{
    trace_decoder_init(&c->dec);
    c->chunk = k;
    c->overrun = false;
    if (!r || k >= r->nmarks)
        return;
    const replay_mark *m = &r->marks[k];
    c->dec.consumed = m->consumed;
    c->dec.count = m->count;
    memcpy(c->dec.page, m->page, sizeof m->page);
    memcpy(c->dec.off, m->off, sizeof m->off);
}

size_t vmsim_replay_decode_chunk(const vmsim_replay *r, vmsim_replay_cursor *c, const uint8_t **pp, const uint8_t *end,
                                 vmsim_replay_batch *b)
{
    if (c->dec.failed || c->overrun)
        return 0;
    size_t got = decode_batch(&c->dec, r->h.accesses, pp, end, b);
    c->overrun = c->dec.count > r->h.accesses;
    return got;
}

bool vmsim_replay_cursor_carry(const vmsim_replay_cursor *c)
{
    return c->dec.ncarry != 0;
}

int vmsim_replay_cursor_end(vmsim_replay *r, const vmsim_replay_cursor *c)
{
    if (!r || r->status)
        return vmsim_replay_status(r);
    if (c->dec.failed)
        return failf(r, VMSIM_REPLAY_BAD_TRACE, "%s", c->dec.err);
    if (c->overrun)
        return fail_overrun(r);
    size_t k = c->chunk;
    if (k + 1 < r->nmarks) {
        const replay_mark *m = &r->marks[k + 1];
        if (c->dec.ncarry || c->dec.ended || c->dec.consumed != m->consumed || c->dec.count != m->count ||
            memcmp(c->dec.page, m->page, sizeof m->page) || memcmp(c->dec.off, m->off, sizeof m->off))
            return fail_changed(r);
        r->dec.count = c->dec.count;
    } else {
        r->dec = c->dec;
    }
    return 0;
}

unsigned vmsim_replay_modes_here(const vmsim_replay *r)
{
    unsigned m = 0;
    for (int mode = 0; r && mode < N_REPLAY_MODES; mode++)
        m |= (unsigned)r->built[mode] << mode;
    return m;
}

static int run_sealed(vmsim_replay *r, int mode, const batch_in *in, uint32_t sl1_ways)
{
    if (!r || r->status)
        return vmsim_replay_status(r);
    if (sl1_ways != r->sl1_ways)
        return failf(r, VMSIM_REPLAY_BAD_TRACE, "a batch sealed with another shared L1 (%u ways, here %u)", sl1_ways,
                     r->sl1_ways);
    if (mode >= 0 && mode < N_REPLAY_MODES && r->built[mode] && in->n)
        run_batch(r, mode, in);
    return 0;
}

/* A batch's pass 2 from its runs on, laid out as batch_wire has it from there (in the
 * decoder's struct, or in a copy of what share_out handed out): nruns runs, then the rest. */
static batch_in batch_in_at(const unsigned char *runs, size_t nruns, size_t n, uint32_t sl1_ways)
{
    const unsigned char *tail = runs + nruns * sizeof(run_rec);     /* batch_wire.before */
#define AT(field) (tail + offsetof(batch_wire, field) - offsetof(batch_wire, before))
    batch_in in = {.runs = (const run_rec *)runs, .nruns = nruns, .n = n, .off = (const uint16_t *)AT(off),
                   .nxt = (const uint16_t *)AT(nxt)};
    if (sl1_ways) {
        in.before = (const sl1_state *)tail;
        in.after = in.before + 1;
        in.miss = AT(miss);
    }
#undef AT
    return in;
}

static batch_in batch_in_of(const vmsim_replay_batch *b)
{
    batch_in in = batch_in_at((const unsigned char *)(b->w.runs + b->run0), VMSIM_REPLAY_BATCH - b->run0, b->n,
                              b->sl1_ways);
    if (b->grouped)
        in.segs = &b->segs;
    return in;
}

void vmsim_replay_batch_group(vmsim_replay_batch *b)
{
    build_segs(b->w.runs + b->run0, VMSIM_REPLAY_BATCH - b->run0, &b->segs);
    b->grouped = true;
}

void vmsim_replay_run(vmsim_replay *r, int mode, const vmsim_replay_batch *b)
{
    batch_in in = batch_in_of(b);
    run_sealed(r, mode, &in, b->sl1_ways);
}

/* ---- the page's shared decoder: one worker inflates and decodes each pass once and
 * hands it out in batches (vmsim_replay_share); the other workers' handles take them
 * (vmsim_replay_take) instead of decoding the body themselves. ---- */

#ifdef __EMSCRIPTEN__
/* The page's worker says where a batch goes (js/replay.ts: the ring in a SharedArrayBuffer). */
EM_JS(int, js_replay_batch, (void *ctx, const void *wire, size_t bytes), {
    return Module['onReplayBatch'] ? Module['onReplayBatch'](wire, bytes) : 1;
});
/* ... and whether the next batch goes out with its segments (vmsim_replay_share_group). */
EM_JS(int, js_replay_group, (void *ctx), {
    return Module['onReplayGroup'] ? (Module['onReplayGroup']() ? 1 : 0) : 0;
});
#endif

/* The most a batch handed out takes (pass 2 with a run per access). */
EXPORT size_t vmsim_replay_batch_bytes(void)
{
    return sizeof(batch_wire);
}

int vmsim_replay_share_to(vmsim_replay *r, vmsim_replay_sink sink, void *ctx)
{
    if (!r || r->status)
        return vmsim_replay_status(r);
    /* at the start of either pass: the page's lead worker shares pass 2 only, when another
     * worker scans pass 1 and shares its pages */
    if (r->pass > 2 || r->dec.count || r->dec.consumed || r->share)
        return failf(r, VMSIM_REPLAY_BAD_TRACE, "vmsim_replay_share after a pass began");
    r->share = vmsim_replay_batch_new();
    if (!r->share)
        return failf(r, VMSIM_REPLAY_NO_MEMORY, "out of memory for the shared batch");
    r->sink = sink;
    r->sink_ctx = ctx;
    return 0;
}

void vmsim_replay_share_group(vmsim_replay *r, vmsim_replay_ask ask, void *ctx)
{
    if (r) {
        r->group_ask = ask;
        r->group_ctx = ctx;
    }
}

EXPORT int vmsim_replay_share(vmsim_replay *r)
{
#ifdef __EMSCRIPTEN__
    vmsim_replay_share_group(r, js_replay_group, NULL);
    return vmsim_replay_share_to(r, js_replay_batch, NULL);
#else
    return r ? failf(r, VMSIM_REPLAY_BAD_TRACE, "vmsim_replay_share: natively, use vmsim_replay_share_to") : 0;
#endif
}

/* A sealed batch through every mode this handle built. */
static int run_built(vmsim_replay *r, const batch_in *in, uint32_t sl1_ways)
{
    for (int mode = 0; mode < N_REPLAY_MODES && !r->status; mode++)
        run_sealed(r, mode, in, sl1_ways);
    return r->status;
}

/* The shared batch out: stamped with the decoder's state, its runs found (pass 2), handed
 * to the sink (the head and what follows it: batch_wire), then (pass 2) run through this
 * handle's own modes. */
static int share_out(vmsim_replay *r, bool last)
{
    vmsim_replay_batch *b = r->share;
    wire_head h = {.pass = (uint32_t)r->pass, .last = last, .n = (uint32_t)b->n, .count = r->dec.count,
                   .ended = r->dec.ended};
    memcpy(h.kinds, r->dec.kinds, sizeof h.kinds);
    memcpy(h.page, r->dec.page, sizeof h.page);
    memcpy(h.off, r->dec.off, sizeof h.off);
    unsigned char *at;
    size_t bytes;
    if (r->pass == 2) {
        vmsim_replay_batch_seal(r, b);
        h.nruns = VMSIM_REPLAY_BATCH - b->run0;
        h.sl1_ways = b->sl1_ways;
        at = (unsigned char *)(b->w.runs + b->run0);
        bytes = h.nruns * sizeof(run_rec) + WIRE_TAIL;
        if (b->n && r->group_ask && r->group_ask(r->group_ctx)) {
            vmsim_replay_batch_group(b);
            const seg_set *ss = &b->segs;
            size_t more = ss->n * sizeof(run_seg) + ss->npages * sizeof(seg_page);
            if (bytes + more <= sizeof(batch_wire) - sizeof(wire_head)) {
                unsigned char *out = (unsigned char *)b->a;
                memcpy(out, ss->seg, ss->n * sizeof(run_seg));
                memcpy(out + ss->n * sizeof(run_seg), ss->pg, ss->npages * sizeof(seg_page));
                h.nsegs = ss->n;
                h.npages = ss->npages;
                bytes += more;
            }
        }
    } else {
        at = (unsigned char *)b->w.pg;
        bytes = b->n * sizeof(trace_page);
    }
    memcpy(at - sizeof h, &h, sizeof h);
    if (r->sink(r->sink_ctx, at - sizeof h, sizeof h + bytes))
        return failf(r, VMSIM_REPLAY_NO_MEMORY, "the replay's other workers stopped taking the decoded trace");
    r->shared_at = r->dec.count;
    if (r->pass == 2) {
        batch_in in = batch_in_of(b);
        if (run_built(r, &in, b->sl1_ways))
            return r->status;
    }
    b->n = 0;
    return 0;
}

static int share_pages(vmsim_replay *r, const trace_page *pages, size_t n)
{
    while (n) {
        vmsim_replay_batch *b = r->share;
        size_t k = VMSIM_REPLAY_BATCH - b->n < n ? VMSIM_REPLAY_BATCH - b->n : n;
        memcpy(b->w.pg + b->n, pages, k * sizeof *pages);
        b->n += k;
        pages += k;
        n -= k;
        if (b->n == VMSIM_REPLAY_BATCH && share_out(r, false))
            return r->status;
    }
    return 0;
}

static int share_feed(vmsim_replay *r, const uint8_t *p, const uint8_t *end)
{
    while (p < end || r->dec.ncarry) {
        const uint8_t *before = p;
        size_t got = vmsim_replay_decode(r, &p, end, r->share);
        if (r->status)
            return r->status;
        if (r->share->n == VMSIM_REPLAY_BATCH && share_out(r, false))
            return r->status;
        if (p == before && !got)
            break;
    }
    return 0;
}

EXPORT int vmsim_replay_share_end(vmsim_replay *r)
{
    if (!r || r->status)
        return vmsim_replay_status(r);
    if (!r->share || r->pass > 2)
        return failf(r, VMSIM_REPLAY_BAD_TRACE, "vmsim_replay_share_end without vmsim_replay_share, or after the report");
    return share_out(r, true);
}

/* The segments a batch brought (after its runs and the rest) into this handle's set,
 * checked to stay within the batch's runs and their own pages. */
static int take_segs(vmsim_replay *r, const unsigned char *at, const wire_head *h)
{
    seg_set *ss = &r->segs;
    memcpy(ss->seg, at, h->nsegs * sizeof(run_seg));
    memcpy(ss->pg, at + h->nsegs * sizeof(run_seg), h->npages * sizeof(seg_page));
    uint32_t x = 0, pages = 0;
    for (uint32_t g = 0; g < h->nsegs; g++) {
        const run_seg *s = &ss->seg[g];
        if (s->x1 < x || s->x1 > h->nruns || s->npages > SEG_PAGES || (s->npages && s->pg0 != pages) ||
            (g + 1 == h->nsegs && s->x1 != h->nruns))
            return failf(r, VMSIM_REPLAY_BAD_TRACE, "vmsim_replay_take: a batch's segment %u does not fit its runs", g);
        x = s->x1;
        pages += s->npages;
    }
    if (pages != h->npages)
        return failf(r, VMSIM_REPLAY_BAD_TRACE, "vmsim_replay_take: a batch's segments have %u pages, its head says %u",
                     pages, h->npages);
    ss->n = h->nsegs;
    ss->npages = h->npages;
    return 0;
}

/* A batch another handle's share_out handed out, copied into this module's memory (at an
 * address aligned as malloc's: vmsim_replay_batch_alloc). */
EXPORT int vmsim_replay_take(vmsim_replay *r, const void *wire, size_t bytes)
{
    if (!r || r->status)
        return vmsim_replay_status(r);
    wire_head h;
    if (bytes < sizeof h)
        return failf(r, VMSIM_REPLAY_BAD_TRACE, "vmsim_replay_take: %zu bytes are not a batch", bytes);
    memcpy(&h, wire, sizeof h);
    const unsigned char *body = (const unsigned char *)wire + sizeof h;
    size_t want = h.pass == 1 ? (size_t)h.n * sizeof(trace_page)
                              : (size_t)h.nruns * sizeof(run_rec) + WIRE_TAIL + (size_t)h.nsegs * sizeof(run_seg) +
                                    (size_t)h.npages * sizeof(seg_page);
    if (h.pass != (uint32_t)r->pass || h.n > VMSIM_REPLAY_BATCH || h.nruns > h.n || (h.n && h.pass == 2 && !h.nruns) ||
        h.nsegs > SEG_MAX || h.npages > SEG_MAX * SEG_PAGES || (h.pass == 1 && (h.nsegs || h.npages)) ||
        bytes != sizeof h + want)
        return failf(r, VMSIM_REPLAY_BAD_TRACE, "vmsim_replay_take: a batch of pass %u (%zu bytes) in pass %d", h.pass,
                     bytes, r->pass);
    if (h.pass == 1) {
        if (add_pages(r, (const trace_page *)body, h.n, NULL, NULL))
            return r->status;
        memcpy(r->dec.kinds, h.kinds, sizeof h.kinds);
    } else {
        batch_in in = batch_in_at(body, h.nruns, h.n, h.sl1_ways);
        if (h.nsegs) {
            if (take_segs(r, body + h.nruns * sizeof(run_rec) + WIRE_TAIL, &h))
                return r->status;
            if (vmsim_replay_modes_here(r))
                in.segs = &r->segs;
        } else {
            segment(r, &in);
        }
        if (run_built(r, &in, h.sl1_ways))
            return r->status;
    }
    r->dec.count = h.count;
    memcpy(r->dec.page, h.page, sizeof h.page);
    memcpy(r->dec.off, h.off, sizeof h.off);
    r->dec.ended = h.ended;
    return check_overrun(r);
}

/* Room for a batch handed out (vmsim_replay_batch_bytes); vmsim_replay_batch_free frees it. */
EXPORT void *vmsim_replay_batch_alloc(void)
{
    return malloc(sizeof(batch_wire));
}

EXPORT int vmsim_replay_batch_info(const void *wire)
{
    wire_head h;
    memcpy(&h, wire, sizeof h);
    return (int)(h.pass << 1 | (h.last & 1) | (h.nsegs ? 8 : 0));
}

/* ---- the report ---- */

static const char *const where_names[] = {"l1", "l2", "llc", "memory", "walk_cache"};

typedef struct derived {
    double rpa, miss_pct, exits_per_k, cycles, cpa, overhead, ref_cycles, exit_cycles, mine_cycles, mine_overhead;
    uint64_t where[DC_WHERE + 1];   /* references by where found, then walk-cache and nested-TLB hits */
    bool has_overhead;
    uint64_t walks, faults, kinds[N_EXIT_KINDS];
} derived;

static void derive(const vmsim_replay *r, int mode, derived *d)
{
    const mode_stats *s = &r->cnt[mode].st;
    const replay_opts *o = &r->o;
    memset(d, 0, sizeof *d);
    double acc = s->accesses ? (double)s->accesses : 1;
    for (int k = 0; k < 4; k++)
        d->kinds[k] = r->cnt[mode].shadow_exits[k];
    uint64_t fills = r->cnt[mode].fills;     /* on demand: violations the VMM filled */
    d->kinds[EXIT_EPT_VIOLATION] = s->outcomes[OUT_EPT_VIOLATION] + (mode == M_EPT ? fills : 0);
    d->kinds[EXIT_EPT_MISCONFIG] = s->outcomes[OUT_EPT_MISCONFIG];
    d->kinds[EXIT_NPT_FAULT] = s->outcomes[OUT_NPT_FAULT] + (mode == M_NPT ? fills : 0);
    d->kinds[EXIT_FLAT_FILL] = mode == M_FLAT ? s->exits_ok : 0;
    /* a hidden page fault is filled and the walk retried: one more walk */
    d->walks = s->tlb_misses + (mode == M_SHADOW || mode == M_AGILE ? d->kinds[EXIT_HPF] : 0);
    d->faults = s->accesses - s->outcomes[OUT_OK];
    d->rpa = (double)s->refs / acc;
    d->miss_pct = 100.0 * (double)s->tlb_misses / acc;
    d->exits_per_k = 1000.0 * (double)s->exits / acc;
    memcpy(d->where, r->cnt[mode].refs, sizeof r->cnt[mode].refs);
    d->where[DC_WHERE] = s->pwc_hits + s->ntlb_hits;
    if (o->flat_ref)
        d->ref_cycles = (double)s->refs * o->cycles_per_ref;
    else
        for (int w = 0; w <= DC_WHERE; w++)
            d->ref_cycles += (double)d->where[w] * o->where[w];
    for (int k = 0; k < N_EXIT_KINDS; k++)
        d->exit_cycles += (double)d->kinds[k] * o->exit_kind[k];
    d->cycles = (double)s->accesses * o->cycles_per_access + d->ref_cycles + d->exit_cycles +
                (r->o.preset == 1 ? (double)s->tlb_misses * o->refill_trap : 0);
    d->cpa = d->cycles / acc;
    /* on the learner's machine: its exit and reference where it measured them, the rest the preset's */
    d->mine_cycles = (double)s->accesses * o->cycles_per_access +
                     (o->mine_ref >= 0 ? (double)s->refs * o->mine_ref : d->ref_cycles) +
                     (o->mine_exit >= 0 ? (double)s->exits * o->mine_exit : d->exit_cycles) +
                     (r->o.preset == 1 ? (double)s->tlb_misses * o->refill_trap : 0);
    if (r->have[M_NATIVE]) {
        derived nd;
        if (mode != M_NATIVE) {
            derive(r, M_NATIVE, &nd);
            d->overhead = nd.cycles > 0 ? 100.0 * (d->cycles - nd.cycles) / nd.cycles : 0;
            d->mine_overhead = nd.mine_cycles > 0 ? 100.0 * (d->mine_cycles - nd.mine_cycles) / nd.mine_cycles : 0;
        }
        d->has_overhead = true;
    }
}

static void report_json(const vmsim_replay *r, strbuf *sb)
{
    const trace_header *h = &r->h;
    const replay_opts *o = &r->o;
    sb_puts(sb, "{\"format\":\"vmsim-replay/1\",\"trace\":{\"program\":");
    sb_json_string(sb, h->program);
    sb_printf(sb, ",\"args\":%s,\"accesses\":%llu,\"pages\":%llu,\"counts\":{", h->args_json,
              (unsigned long long)h->accesses, (unsigned long long)h->pages);
    for (int k = 0; k < 4; k++)
        sb_printf(sb, "%s\"%s\":%llu", k ? "," : "", kind_names[k], (unsigned long long)h->counts[k]);
    sb_printf(sb, "},\"partial\":%s,\"partial_reason\":", h->partial ? "true" : "false");
    if (h->partial_reason)
        sb_json_string(sb, h->partial_reason);
    else
        sb_puts(sb, "null");
    const scenario *any = sizes_mode(r) >= 0 ? &r->sc[sizes_mode(r)] : NULL;
    sb_printf(sb, "},\"machine\":{\"preset\":\"%s\",\"guest_paging\":\"4level\",\"guest_pages\":\"%s\",\"huge_min\":%u,"
                  "\"host_pages\":\"%s\",\"start\":\"%s\",\"tables\":\"%s\",\"guest_4k_pages\":%u,\"guest_2m_pages\":%u,"
                  "\"guest_table_frames\":%u,\"guest_ram_bytes\":%llu,\"tlb_entries\":%u,\"pwc_entries\":%u,"
                  "\"ntlb_entries\":%u",
              preset_names[o->preset], o->guest_2m ? "2m" : "4k", o->huge_min, o->host_4k ? "4k" : "2m",
              o->warm ? "warm" : "cold", o->on_demand ? "on-demand" : "built", r->n4k, r->n2m, r->table_frames, (unsigned long long)r->ram_bytes,
              any ? any->tlb_entries : 0, any ? any->pwc_entries : 0, any ? any->ntlb_entries : 0);
    if (r->have[M_AGILE])
        sb_printf(sb, ",\"agile_switch_level\":%d", o->agile_switch_level);
    sb_puts(sb, "},");
    sb_printf(sb, "\"cost_model\":{\"cycles_per_access\":%g,\"cycles_per_ref\":%g,\"cycles_per_exit\":%g,\"refill_trap\":%g,"
                  "\"per_ref\":\"%s\",\"ref_cycles_by_where\":",
              o->cycles_per_access, o->cycles_per_ref, o->cycles_per_exit, o->preset == 1 ? o->refill_trap : 0.0,
              o->flat_ref ? "flat" : "by-where");
    if (o->flat_ref)
        sb_puts(sb, "null");
    else
        for (int w = 0; w <= DC_WHERE; w++)
            if (w != DC_LLC || o->preset != 1)
                sb_printf(sb, "%s\"%s\":%g", w ? "," : "{", where_names[w], o->where[w]);
    sb_puts(sb, o->flat_ref ? ",\"exit_cycles_by_kind\":{" : "},\"exit_cycles_by_kind\":{");
    for (int k = 0; k < N_EXIT_KINDS; k++)
        sb_printf(sb, "%s\"%s\":%g", k ? "," : "", exit_kind_names[k], o->exit_kind[k]);
    sb_puts(sb, "}},\"your_machine\":");
    if (!o->mine)
        sb_puts(sb, "null");
    else {
        sb_puts(sb, "{\"label\":");
        sb_json_string(sb, o->mine_label);
        sb_printf(sb, ",\"in_vm\":%s,\"cycles_per_exit\":", o->mine_in_vm ? "true" : "false");
        if (o->mine_exit >= 0) {
            sb_printf(sb, "%g,\"exit_from\":", o->mine_exit);
            sb_json_string(sb, o->mine_exit_from);
        } else
            sb_puts(sb, "null,\"exit_from\":null");
        sb_puts(sb, ",\"cycles_per_ref\":");
        if (o->mine_ref >= 0) {
            sb_printf(sb, "%g,\"ref_from\":", o->mine_ref);
            sb_json_string(sb, o->mine_ref_from);
        } else
            sb_puts(sb, "null,\"ref_from\":null");
        sb_putc(sb, '}');
    }
    sb_puts(sb, ",\"modes\":[");
    bool first = true;
    for (int mode = 0; mode < N_REPLAY_MODES; mode++) {
        if (!r->have[mode])
            continue;
        const mode_stats *s = &r->cnt[mode].st;
        derived d;
        derive(r, mode, &d);
        sb_printf(sb, "%s{\"mode\":\"%s\",\"accesses\":%llu,\"refs\":%llu,\"guest_refs\":%llu,\"nested_refs\":%llu,"
                      "\"refs_per_access\":%.4f,\"tlb_misses\":%llu,\"tlb_miss_pct\":%.4f,\"walks\":%llu,\"pwc_hits\":%llu,"
                      "\"ntlb_hits\":%llu,\"ad_writes\":%llu,\"exits\":%llu,\"exits_per_1k\":%.4f,\"exits_by_kind\":{",
                  first ? "" : ",", replay_mode_names[mode], (unsigned long long)s->accesses, (unsigned long long)s->refs,
                  (unsigned long long)s->guest_refs, (unsigned long long)s->nested_refs, d.rpa,
                  (unsigned long long)s->tlb_misses, d.miss_pct, (unsigned long long)d.walks,
                  (unsigned long long)s->pwc_hits, (unsigned long long)s->ntlb_hits, (unsigned long long)s->ad_writes,
                  (unsigned long long)s->exits, d.exits_per_k);
        for (int k = 0; k < N_EXIT_KINDS; k++)
            sb_printf(sb, "%s\"%s\":%llu", k ? "," : "", exit_kind_names[k], (unsigned long long)d.kinds[k]);
        sb_puts(sb, "},\"refs_by_where\":{");
        for (int w = 0; w <= DC_WHERE; w++)
            sb_printf(sb, "%s\"%s\":%llu", w ? "," : "", where_names[w], (unsigned long long)d.where[w]);
        sb_puts(sb, "},\"data_by_where\":{");
        for (int w = 0; w < DC_WHERE; w++)
            sb_printf(sb, "%s\"%s\":%llu", w ? "," : "", where_names[w], (unsigned long long)r->cnt[mode].data[w]);
        sb_printf(sb, "},\"faults\":%llu,\"ref_cycles\":%.0f,\"cycles\":%.0f,\"cycles_per_access\":%.4f,\"overhead_pct\":",
                  (unsigned long long)d.faults, d.ref_cycles, d.cycles, d.cpa);
        if (d.has_overhead)
            sb_printf(sb, "%.4f", d.overhead);
        else
            sb_puts(sb, "null");
        sb_puts(sb, ",\"overhead_pct_machine\":");
        if (d.has_overhead && o->mine)
            sb_printf(sb, "%.4f}", d.mine_overhead);
        else
            sb_puts(sb, "null}");
        first = false;
    }
    sb_puts(sb, "]}\n");
}

static void report_table(const vmsim_replay *r, strbuf *sb)
{
    const trace_header *h = &r->h;
    const replay_opts *o = &r->o;
    sb_printf(sb, "trace: %s\n  %llu accesses (%llu fetches, %llu loads, %llu stores, %llu modifies) on %llu pages of 4 KiB%s%s\n",
              h->command, (unsigned long long)h->accesses, (unsigned long long)h->counts[TRACE_FETCH],
              (unsigned long long)h->counts[TRACE_LOAD], (unsigned long long)h->counts[TRACE_STORE],
              (unsigned long long)h->counts[TRACE_MODIFY], (unsigned long long)h->pages,
              h->partial ? "\n  PARTIAL: " : "", h->partial ? h->partial_reason : "");
    sb_printf(sb, "machine: %s caches; guest 4-level paging, %u pages of 4 KiB and %u of 2 MiB; guest RAM on %s host pages; "
                  "%s start, tables %s\n",
              preset_names[o->preset], r->n4k, r->n2m, o->host_4k ? "4 KiB" : "2 MiB", o->warm ? "warm" : "cold",
              o->on_demand ? "filled on demand" : "built in advance");
    sb_printf(sb, "%-7s %9s %11s %10s %9s %9s %14s %9s%s\n", "mode", "refs/acc", "TLB miss %", "walks", "exits", "exits/1k",
              "cycles/access", "overhead", o->mine ? "   on yours" : "");
    for (int mode = 0; mode < N_REPLAY_MODES; mode++) {
        if (!r->have[mode])
            continue;
        derived d;
        derive(r, mode, &d);
        char over[32];
        if (d.has_overhead)
            snprintf(over, sizeof over, "%.2f%%", d.overhead);
        else
            snprintf(over, sizeof over, "-");
        sb_printf(sb, "%-7s %9.3f %11.3f %10llu %9llu %9.3f %14.2f %9s", replay_mode_names[mode], d.rpa, d.miss_pct,
                  (unsigned long long)d.walks, (unsigned long long)r->cnt[mode].st.exits, d.exits_per_k, d.cpa, over);
        if (o->mine && d.has_overhead)
            sb_printf(sb, " %10.2f%%", d.mine_overhead);
        sb_putc(sb, '\n');
    }
    for (int mode = 0; mode < N_REPLAY_MODES; mode++) {
        if (!r->have[mode] || !r->cnt[mode].st.exits)
            continue;
        derived d;
        derive(r, mode, &d);
        sb_printf(sb, "exits under %s:", replay_mode_names[mode]);
        for (int k = 0; k < N_EXIT_KINDS; k++)
            if (d.kinds[k])
                sb_printf(sb, " %llu %s", (unsigned long long)d.kinds[k], exit_kind_names[k]);
        sb_putc(sb, '\n');
    }
    for (int mode = 0; mode < N_REPLAY_MODES; mode++) {
        if (!r->have[mode])
            continue;
        derived d;
        derive(r, mode, &d);
        sb_printf(sb, "references under %s: %llu from a walk cache or the nested TLB, %llu L1, %llu L2, ", replay_mode_names[mode],
                  (unsigned long long)d.where[DC_WHERE], (unsigned long long)d.where[DC_L1],
                  (unsigned long long)d.where[DC_L2]);
        if (o->preset != 1)
            sb_printf(sb, "%llu LLC, ", (unsigned long long)d.where[DC_LLC]);
        sb_printf(sb, "%llu memory: %.0f cycles\n", (unsigned long long)d.where[DC_MEMORY], d.ref_cycles);
    }
    if (o->flat_ref)
        sb_printf(sb, "cost model: %g cycles per access, %g per page-walk reference wherever found, %g per VM exit",
                  o->cycles_per_access, o->cycles_per_ref, o->cycles_per_exit);
    else if (o->preset == 1)
        sb_printf(sb, "cost model: %g cycles per access; a page-walk reference %g from L1, %g L2, %g memory (%g a walk-cache "
                      "hit); %g per VM exit", o->cycles_per_access, o->where[DC_L1], o->where[DC_L2], o->where[DC_MEMORY],
                  o->where[DC_WHERE], o->cycles_per_exit);
    else
        sb_printf(sb, "cost model: %g cycles per access; a page-walk reference %g from L1, %g L2, %g LLC, %g memory (%g a "
                      "walk-cache or nested-TLB hit); %g per VM exit", o->cycles_per_access, o->where[DC_L1], o->where[DC_L2],
                  o->where[DC_LLC], o->where[DC_MEMORY], o->where[DC_WHERE], o->cycles_per_exit);
    if (o->preset == 1)
        sb_printf(sb, ", %g per software TLB refill (Sunway)", o->refill_trap);
    sb_puts(sb, "; overhead against native on the same machine\n");
    if (o->mine) {
        sb_printf(sb, "on yours (%s): ", o->mine_label[0] ? o->mine_label : "your machine");
        if (o->mine_exit >= 0)
            sb_printf(sb, "%g cycles per exit (%s)", o->mine_exit, o->mine_exit_from);
        else
            sb_printf(sb, "no exit measured (%s), the preset's %g", o->mine_in_vm ? "no cpuid sample" : "not run in a VM",
                      o->cycles_per_exit);
        if (o->mine_ref >= 0)
            sb_printf(sb, ", %g per page-walk reference (%s)", o->mine_ref, o->mine_ref_from);
        else
            sb_puts(sb, ", page-walk references priced as above (no pointer chase to take them from)");
        sb_puts(sb, "; the counts are the preset's\n");
    }
}

static void report_csv(const vmsim_replay *r, strbuf *sb)
{
    sb_puts(sb, "mode,accesses,refs,guest_refs,nested_refs,refs_per_access,tlb_misses,tlb_miss_pct,walks,pwc_hits,ntlb_hits,"
                "ad_writes,exits");
    for (int k = 0; k < N_EXIT_KINDS; k++)
        sb_printf(sb, ",%s", exit_kind_names[k]);
    sb_puts(sb, ",faults,cycles,cycles_per_access,overhead_pct,refs_walk_cache,refs_l1,refs_l2,refs_llc,refs_memory,ref_cycles\n");
    for (int mode = 0; mode < N_REPLAY_MODES; mode++) {
        if (!r->have[mode])
            continue;
        const mode_stats *s = &r->cnt[mode].st;
        derived d;
        derive(r, mode, &d);
        sb_printf(sb, "%s,%llu,%llu,%llu,%llu,%.4f,%llu,%.4f,%llu,%llu,%llu,%llu,%llu", replay_mode_names[mode],
                  (unsigned long long)s->accesses, (unsigned long long)s->refs, (unsigned long long)s->guest_refs,
                  (unsigned long long)s->nested_refs, d.rpa, (unsigned long long)s->tlb_misses, d.miss_pct,
                  (unsigned long long)d.walks, (unsigned long long)s->pwc_hits, (unsigned long long)s->ntlb_hits,
                  (unsigned long long)s->ad_writes, (unsigned long long)s->exits);
        for (int k = 0; k < N_EXIT_KINDS; k++)
            sb_printf(sb, ",%llu", (unsigned long long)d.kinds[k]);
        sb_printf(sb, ",%llu,%.0f,%.4f,", (unsigned long long)d.faults, d.cycles, d.cpa);
        if (d.has_overhead)
            sb_printf(sb, "%.4f", d.overhead);
        sb_printf(sb, ",%llu,%llu,%llu,%llu,%llu,%.0f\n", (unsigned long long)d.where[DC_WHERE],
                  (unsigned long long)d.where[DC_L1], (unsigned long long)d.where[DC_L2], (unsigned long long)d.where[DC_LLC],
                  (unsigned long long)d.where[DC_MEMORY], d.ref_cycles);
    }
}

/* ---- a replay in parts: the counts of the modes a handle replayed, merged into another ---- */

#define COUNTS_FORMAT "vmsim-replay-counts/1"
#define N_COUNTS (sizeof(mode_counts) / sizeof(uint64_t))
_Static_assert(sizeof(mode_counts) % sizeof(uint64_t) == 0, "mode_counts is numbers of 64 bits only");

/* The figures of the modes replayed here, once pass 2 is over. */
static void collect_counts(vmsim_replay *r)
{
    for (int mode = 0; mode < N_REPLAY_MODES; mode++) {
        if (!r->built[mode] || r->have[mode])
            continue;
        mode_counts *c = &r->cnt[mode];
        c->st = r->st[mode];
        for (int k = 0; k < 4; k++)
            c->shadow_exits[k] = r->m[mode].exit_counts[k] - r->exit_base[mode][k];
        c->fills = r->m[mode].nested_fills - r->fill_base[mode];
        memcpy(c->refs, r->dc[mode].refs, sizeof c->refs);
        memcpy(c->data, r->dc[mode].data, sizeof c->data);
        r->have[mode] = true;
    }
}

/* What two parts of one replay must agree on: the trace and the options that change a
 * count (the cost model only prices them, in the handle that writes the report). */
static uint64_t fingerprint(const vmsim_replay *r)
{
    char text[400];
    const replay_opts *o = &r->o;
    int n = snprintf(text, sizeof text, "%u %d %d %d %d %d %u %d %llu %llu %llu %llu %u", o->modes, o->preset, o->guest_2m,
                     o->host_4k, o->warm, o->on_demand, o->huge_min, o->agile_switch_level,
                     (unsigned long long)r->h.accesses, (unsigned long long)r->h.pages,
                     (unsigned long long)r->h.body_bytes, (unsigned long long)r->h.counts[TRACE_FETCH], (unsigned)N_COUNTS);
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < n && i < (int)sizeof text; i++)
        h = (h ^ (uint8_t)text[i]) * 0x100000001b3ull;
    return h;
}

EXPORT int vmsim_replay_counts(vmsim_replay *r, char **out)
{
    *out = NULL;
    if (!r || r->status)
        return vmsim_replay_status(r);
    if (r->pass != 2)
        return failf(r, VMSIM_REPLAY_BAD_TRACE, "vmsim_replay_counts before the second pass");
    if (!trace_decoder_finish(&r->dec))
        return decoder_failed(r);
    if (r->dec.count != r->h.accesses)
        return fail_changed(r);
    collect_counts(r);
    strbuf sb;
    sb_init(&sb);
    uint64_t fp = fingerprint(r);
    for (int mode = 0; mode < N_REPLAY_MODES; mode++) {
        if (!r->built[mode])
            continue;
        uint64_t v[N_COUNTS];
        memcpy(v, &r->cnt[mode], sizeof v);
        sb_printf(&sb, "%s %016llx %s", COUNTS_FORMAT, (unsigned long long)fp, replay_mode_names[mode]);
        for (size_t i = 0; i < N_COUNTS; i++)
            sb_printf(&sb, " %llu", (unsigned long long)v[i]);
        sb_putc(&sb, '\n');
    }
    *out = sb_take(&sb);
    if (!*out)
        return failf(r, VMSIM_REPLAY_NO_MEMORY, "out of memory writing the counts");
    return 0;
}

/* The next word of a line (cut off where it ends), or NULL. */
static char *next_token(char **pp)
{
    char *p = *pp;
    while (*p == ' ')
        p++;
    if (!*p)
        return NULL;
    char *t = p;
    while (*p && *p != ' ')
        p++;
    if (*p)
        *p++ = 0;
    *pp = p;
    return t;
}

EXPORT int vmsim_replay_merge(vmsim_replay *r, const char *text, size_t len)
{
    if (!r || r->status)
        return vmsim_replay_status(r);
    if (r->pass == 3)
        return failf(r, VMSIM_REPLAY_BAD_TRACE, "vmsim_replay_merge after vmsim_replay_finish");
    uint64_t fp = fingerprint(r);
    size_t at = 0;
    while (at < len) {
        size_t e = at;
        while (e < len && text[e] != '\n')
            e++;
        char line[1024];
        if (e - at >= sizeof line)
            return failf(r, VMSIM_REPLAY_BAD_TRACE, "counts to merge: a line longer than %zu bytes", sizeof line);
        memcpy(line, text + at, e - at);
        line[e - at] = 0;
        at = e + 1;
        if (!line[0])
            continue;
        char *save = line, *tok = next_token(&save);
        if (!tok || strcmp(tok, COUNTS_FORMAT))
            return failf(r, VMSIM_REPLAY_BAD_TRACE, "counts to merge: not %s", COUNTS_FORMAT);
        tok = next_token(&save);
        if (!tok || strtoull(tok, NULL, 16) != fp)
            return failf(r, VMSIM_REPLAY_BAD_TRACE, "counts to merge: from another trace or other options than this replay's");
        tok = next_token(&save);
        int mode = -1;
        for (int i = 0; tok && i < N_REPLAY_MODES; i++)
            if (!strcmp(tok, replay_mode_names[i]))
                mode = i;
        if (mode < 0 || !(r->o.modes >> mode & 1) || (r->o.part >> mode & 1) || r->have[mode])
            return failf(r, VMSIM_REPLAY_BAD_TRACE, "counts to merge: mode %.20s is not one this replay waits for",
                         tok ? tok : "?");
        uint64_t v[N_COUNTS];
        for (size_t i = 0; i < N_COUNTS; i++) {
            tok = next_token(&save);
            char *end;
            v[i] = tok ? strtoull(tok, &end, 10) : 0;
            if (!tok || *end)
                return failf(r, VMSIM_REPLAY_BAD_TRACE, "counts to merge: mode %s has fewer than %zu numbers",
                             replay_mode_names[mode], N_COUNTS);
        }
        if (next_token(&save))
            return failf(r, VMSIM_REPLAY_BAD_TRACE, "counts to merge: mode %s has more than %zu numbers",
                         replay_mode_names[mode], N_COUNTS);
        memcpy(&r->cnt[mode], v, sizeof v);
        if (r->cnt[mode].st.accesses != r->h.accesses)
            return failf(r, VMSIM_REPLAY_BAD_TRACE, "counts to merge: mode %s counted %llu accesses, the trace holds %llu",
                         replay_mode_names[mode], (unsigned long long)r->cnt[mode].st.accesses,
                         (unsigned long long)r->h.accesses);
        r->have[mode] = true;
    }
    return 0;
}

EXPORT int vmsim_replay_finish(vmsim_replay *r, char **out)
{
    *out = NULL;
    if (!r || r->status)
        return vmsim_replay_status(r);
    if (r->pass != 2)
        return failf(r, VMSIM_REPLAY_BAD_TRACE, "vmsim_replay_finish before vmsim_replay_scan_end");
    if (!trace_decoder_finish(&r->dec))
        return decoder_failed(r);
    if (r->dec.count != r->h.accesses || memcmp(r->dec.page, r->end_page, sizeof r->end_page) ||
        memcmp(r->dec.off, r->end_off, sizeof r->end_off))
        return fail_changed(r);
    collect_counts(r);
    for (int mode = 0; mode < N_REPLAY_MODES; mode++)
        if ((r->o.modes >> mode & 1) && !r->have[mode])
            return failf(r, VMSIM_REPLAY_BAD_TRACE, "the counts of mode %s were not merged in (vmsim_replay_merge): "
                         "the replay of that part did not finish", replay_mode_names[mode]);
    r->pass = 3;
    strbuf sb;
    sb_init(&sb);
    if (r->o.format == FMT_TABLE)
        report_table(r, &sb);
    else if (r->o.format == FMT_CSV)
        report_csv(r, &sb);
    else
        report_json(r, &sb);
    *out = sb_take(&sb);
    if (!*out)
        return failf(r, VMSIM_REPLAY_NO_MEMORY, "out of memory writing the report");
    return 0;
}

EXPORT void vmsim_replay_free_text(char *text)
{
    free(text);
}

EXPORT void vmsim_replay_close(vmsim_replay *r)
{
    if (!r)
        return;
    for (int mode = 0; mode < N_REPLAY_MODES; mode++) {
        if (r->built[mode])
            machine_free(&r->m[mode]);
        dcache_free(&r->dc[mode]);
        pm_free(&r->sh[mode].fwd);
        pm_free(&r->sh[mode].back);
        scenario_free(&r->sc[mode]);
        free(r->mres[mode]);
    }
    trace_header_free(&r->h);
    free(r->marks);
    free(r->ps.keys);
    free(r->ps.kinds);
    free(r->pages);
    free(r->r);
    free(r->share);
    free(r);
}

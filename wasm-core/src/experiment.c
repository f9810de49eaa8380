/* Workload experiments: a synthetic access stream run under every mode on the machine
 * presets, with references, TLB misses and exits counted by the engine itself and
 * turned into cycles by a small cost model. Nothing here is tabled: the orderings come
 * out of the walks, the caches and the exits. */
#include "experiment.h"
#include "cost_params.h"
#include "json.h"
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Each workload is named for what it is. The first names of three of them were programs
 * (mcf, gcc, memcached), but no published characterisation of those programs shaped
 * these streams, so those names stay only as aliases (experiment_workload). */
const char *const workload_names[] = {"sequential", "random", "ptrchase", "random-2g", "pt-writes", "cswitch", "gate",
                                      "agile", NULL};
const char *const workload_descriptions[] = {
    "sequential reads at a 64-byte stride",
    "uniform random reads",
    "a pointer chase, one node per page in one random cycle",
    "3 in 4 accesses at a random place, 1 in 4 next to the last one, 1 in 3 writes",
    "good locality (1 in 8 accesses jumps), 1 in 3 writes, a guest page-table write every 40 events",
    "uniform random over the footprint in several address spaces, a context switch every 100 events",
    "requests to an object only the gate's EPT maps",
    "a 2 MiB region whose page-table entries the guest keeps rewriting, and a 1 GiB region read at random",
    NULL};

static const struct {
    const char *alias;
    int workload;
} workload_aliases[] = {{"mcf", 3}, {"gcc", 4}, {"memcached", 5}};

int experiment_workload(const char *name)
{
    for (int k = 0; workload_names[k]; k++)
        if (!strcmp(name, workload_names[k]))
            return k;
    for (size_t i = 0; i < sizeof workload_aliases / sizeof workload_aliases[0]; i++)
        if (!strcmp(name, workload_aliases[i].alias))
            return workload_aliases[i].workload;
    return -1;
}

void experiment_defaults(experiment_opts *o)
{
    memset(o, 0, sizeof *o);
    o->workload = -1;               /* all */
    o->accesses = 1000000;
    o->seed = 1;
    o->footprint_mib = 0;           /* the workload's own */
    o->spaces = 8;
    /* The cost model's defaults and their sources: data/cost-model.json, model.md 5c. */
    o->cycles_per_access = COST_CYCLES_PER_ACCESS;
    o->cycles_per_ref = COST_CYCLES_PER_REF;
    o->cycles_per_exit = COST_CYCLES_PER_EXIT;          /* KVM's switch estimated from the cpuid runs */
    o->cycles_per_vmfunc = COST_CYCLES_PER_VMFUNC;      /* ELISA's 196 ns / 699 ns against the exit cost */
    o->refill_trap_cycles = COST_REFILL_TRAP_CYCLES;    /* Sunway: each TLB miss traps to HMcode */
}

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t next(rng *r)
{
    uint64_t x = r->s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return r->s = x;
}

#define BASE_GVA 0x40000000ull

typedef struct stream {
    int kind;
    rng r;
    uint64_t footprint, page;       /* bytes */
    uint64_t pages, cur, i;
    uint32_t *perm;                 /* ptrchase: next page of each page */
    uint32_t spaces, space;
    uint64_t pte_toggle;
} stream;

static uint64_t default_footprint_mib(int kind)
{
    static const uint64_t mib[] = {256, 1024, 1024, 2048, 64, 32};
    return mib[kind];
}

/* The next event of the stream: an access, or for gcc a guest page-table write, for
 * memcached a context switch. */
static void stream_next(stream *st, vm_access *a)
{
    uint64_t i = st->i++;
    memset(a, 0, sizeof *a);
    a->op = OP_READ;
    switch (st->kind) {
    case 0: /* sequential, cache-line stride */
        a->gva = BASE_GVA + (i * 64) % st->footprint;
        break;
    case 1: /* uniform random */
        a->gva = BASE_GVA + (next(&st->r) % st->footprint & ~7ull);
        break;
    case 2: /* pointer chase: one node per page, a random cycle */
        st->cur = st->perm[st->cur];
        a->gva = BASE_GVA + st->cur * st->page + (st->cur * 64) % st->page;
        break;
    case 3: /* random-2g: a large footprint with poor locality; a few hits next to the last access */
        if (next(&st->r) % 4 == 0)
            a->gva = (st->cur & ~7ull) + 8;
        else
            st->cur = a->gva = BASE_GVA + (next(&st->r) % st->footprint & ~7ull);
        if (next(&st->r) % 3 == 0)
            a->op = OP_WRITE;
        break;
    case 4: /* pt-writes: good locality, and the kernel rewrites page-table entries often */
        if (i % 40 == 39) {
            a->op = OP_PTE_WRITE;
            a->gva = BASE_GVA + (next(&st->r) % st->pages) * st->page;
            a->eptp_index = 1;
            st->pte_toggle ^= 1;
            /* an available-to-software bit: a real update that changes no translation */
            if (st->pte_toggle)
                a->set = BIT(9);
            else
                a->clear = BIT(9);
            break;
        }
        if (next(&st->r) % 8 == 0)
            st->cur = BASE_GVA + (next(&st->r) % st->footprint & ~7ull);
        else
            st->cur = BASE_GVA + ((st->cur - BASE_GVA + 64) % st->footprint);
        a->gva = st->cur;
        a->op = next(&st->r) % 3 == 0 ? OP_WRITE : OP_READ;
        break;
    default: /* cswitch: random accesses by many processes, a context switch every 100 */
        if (i % 100 == 99 && st->spaces > 1) {
            st->space = (st->space + 1) % st->spaces;
            a->op = OP_MOV_CR3;
            a->eptp_index = st->space;
            break;
        }
        a->gva = BASE_GVA + (next(&st->r) % st->footprint & ~7ull);
        a->op = next(&st->r) % 4 == 0 ? OP_WRITE : OP_READ;
        break;
    }
}

static bool stream_init(stream *st, int kind, const experiment_opts *o, uint64_t page)
{
    memset(st, 0, sizeof *st);
    st->kind = kind;
    st->r.s = o->seed * 0x9E3779B97F4A7C15ull + (uint64_t)kind + 1;
    st->page = page;
    st->footprint = (o->footprint_mib ? o->footprint_mib : default_footprint_mib(kind)) << 20;
    st->pages = st->footprint / page;
    st->cur = BASE_GVA;
    st->spaces = kind == 5 ? o->spaces : 1;
    if (kind == 2) {
        st->perm = malloc(st->pages * sizeof *st->perm);
        if (!st->perm)
            return false;
        /* Sattolo's algorithm: one cycle through every page */
        for (uint64_t k = 0; k < st->pages; k++)
            st->perm[k] = (uint32_t)k;
        for (uint64_t k = st->pages - 1; k > 0; k--) {
            uint64_t j = next(&st->r) % k;
            uint32_t t = st->perm[k];
            st->perm[k] = st->perm[j];
            st->perm[j] = t;
        }
        st->cur = 0;
    }
    return true;
}

typedef struct mode_cfg {
    const char *machine, *mode, *label;
    bool sunway;
} mode_cfg;

static const mode_cfg modes[] = {
    {"x86", "native", "native", false},
    {"x86", "shadow", "shadow", false},
    {"x86", "ept", "ept", false},
    {"x86", "npt", "npt", false},
    {"sunway", "native", "native", true},
    {"sunway", "flat", "flat", true},
};
#define N_MODES (sizeof modes / sizeof modes[0])

/* The machine as a scenario: the footprint mapped with base pages, guest RAM backed
 * 1:1 at 4 GiB in host memory, the preset's caches. */
static char *machine_json(const mode_cfg *mc, uint64_t footprint, uint32_t spaces, const experiment_opts *o)
{
    strbuf sb;
    sb_init(&sb);
    uint64_t page = mc->sunway ? 8192 : 4096;
    uint64_t ram = footprint + (64ull << 20) + BASE_GVA;    /* data at gpa = gva, tables below */
    sb_printf(&sb, "{\"name\":\"experiment\",\"mode\":\"%s\",\"guest\":{\"paging\":\"%s\",\"address_spaces\":%u,"
                   "\"table_base\":\"0x1000000\",\"mappings\":[{\"gva\":\"0x%llx\",\"gpa\":\"0x%llx\",\"page\":\"%s\","
                   "\"pages\":%llu}]}",
              mc->mode, mc->sunway ? "sunway" : "4level", spaces, (unsigned long long)BASE_GVA,
              (unsigned long long)BASE_GVA, mc->sunway ? "8K" : "4K", (unsigned long long)(footprint / page));
    const char *slots = "\"mappings\":[{\"gpa\":\"0x0\",\"hpa\":\"0x100000000\",\"pages\":%llu}]";
    char buf[160];
    snprintf(buf, sizeof buf, slots, (unsigned long long)(ram / page));
    /* KVM backs guest RAM with transparent huge pages where it can: 2 MiB nested pages. */
    if (!strcmp(mc->mode, "ept") || !strcmp(mc->mode, "npt"))
        sb_printf(&sb, ",\"nested\":{\"table_base\":\"0x800000000\",\"on_demand\":%s,\"mappings\":[{\"gpa\":\"0x0\","
                       "\"hpa\":\"0x100000000\",\"page\":\"2M\",\"pages\":%llu}]}",
                  o->on_demand ? "true" : "false", (unsigned long long)((ram + (2ull << 20) - 1) >> 21));
    else if (!strcmp(mc->mode, "flat"))
        sb_printf(&sb, ",\"flat\":{\"table_base\":\"0x800000000\",\"guest_ram\":\"0x%llx\",\"prefill\":%s,%s}",
                  (unsigned long long)((ram + (1ull << 30) - 1) & ~((1ull << 30) - 1)), o->on_demand ? "false" : "true",
                  buf);
    else if (!strcmp(mc->mode, "shadow"))
        sb_printf(&sb, ",\"shadow\":{\"table_base\":\"0x800000000\",\"cr3_targets\":%u,\"paravirt_cr3_cache\":%s,"
                       "\"prefill\":%s,%s}",
                  o->cr3_targets, o->paravirt_cr3 ? "true" : "false", o->on_demand ? "false" : "true", buf);
    sb_printf(&sb, ",\"caches\":{\"preset\":\"%s\"},\"accesses\":[]}", mc->sunway ? "sunway-1621" : "x86-server");
    return sb_take(&sb);
}

typedef struct run_stats {
    uint64_t events, accesses, refs, tlb_misses, exits, faults;
    uint64_t warmup_exits;          /* exits the warm-up pass paid filling tables (on demand) */
    double cycles;
} run_stats;

static bool run_mode(const mode_cfg *mc, int kind, const experiment_opts *o, run_stats *st, char *err, size_t errlen)
{
    memset(st, 0, sizeof *st);
    uint64_t page = mc->sunway ? 8192 : 4096;
    stream s;
    if (!stream_init(&s, kind, o, page)) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    char *json = machine_json(mc, s.footprint, s.spaces, o);
    scenario sc;
    machine m;
    bool ok = json && scenario_parse(json, strlen(json), &sc, err, errlen);
    free(json);
    if (!ok) {
        free(s.perm);
        return false;
    }
    if (!machine_build(&m, &sc, err, errlen)) {
        scenario_free(&sc);
        free(s.perm);
        return false;
    }
    vm_result *r = malloc(sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        ok = false;
        goto out;
    }
    /* Warm-up: one pass over the footprint, as a long-running program would have done,
     * so steady state is measured (A/D bits; with tables filled on demand, the nested,
     * shadow and flat fills, whose exits are counted apart). */
    for (uint64_t off = 0; off < s.footprint; off += page) {
        vm_access a = {.gva = BASE_GVA + off, .op = OP_WRITE};
        r->record = false;
        for (uint32_t sp = 0; sp < s.spaces; sp++) {
            vm_access cr = {.op = OP_MOV_CR3, .eptp_index = sp};
            if (s.spaces > 1)
                translate(&m, &cr, r);
            translate(&m, &a, r);
            st->warmup_exits += r->exits;
        }
    }
    if (s.spaces > 1) {
        vm_access cr = {.op = OP_MOV_CR3, .eptp_index = 0};
        translate(&m, &cr, r);
    }
    for (uint64_t n = 0; n < o->accesses; n++) {
        vm_access a;
        stream_next(&s, &a);
        r->record = false;
        translate(&m, &a, r);
        st->events++;
        if (a.op <= OP_FETCH) {
            st->accesses++;
            st->tlb_misses += r->tlb_hit == 0;
            if (mc->sunway && r->tlb_hit == 0)
                st->cycles += o->refill_trap_cycles;
        }
        st->refs += r->memory_refs;
        st->exits += r->exits;
        st->faults += r->outcome != OUT_OK;
    }
    st->cycles += (double)st->accesses * o->cycles_per_access + (double)st->refs * o->cycles_per_ref +
                  (double)st->exits * o->cycles_per_exit;
out:
    free(r);
    machine_free(&m);
    scenario_free(&sc);
    free(s.perm);
    return ok;
}

/* The ELISA comparison: each request reads 4 cache lines of a shared object. "shared"
 * maps it in the guest's own EPT (no isolation); "vmcall" asks the hypervisor, one exit
 * per request; "vmfunc" enters the gate EPT with VMFUNC(0, 1), reads, and returns with
 * VMFUNC(0, 0); "vmfunc-flush" does the same on a model that flushes the TLB and walk
 * caches on every EPTP switch. */
#define GATE_OBJ_GVA 0x500000ull
#define GATE_OBJ_PAGES 16u

static const char *const gate_modes[] = {"shared", "vmcall", "vmfunc", "vmfunc-flush"};

static bool run_gate(int variant, const experiment_opts *o, run_stats *st, char *err, size_t errlen)
{
    char json[1024];
    bool shared = variant == 0;
    snprintf(json, sizeof json,
             "{\"name\":\"gate\",\"mode\":\"ept\",\"guest\":{\"paging\":\"4level\",\"mappings\":["
             "{\"gva\":\"0x%llx\",\"gpa\":\"0x300000\",\"pages\":%u}]},\"nested\":{\"vmfunc\":true,"
             "\"mappings\":[{\"gpa\":\"0x0\",\"hpa\":\"0x80000000\",\"pages\":%u}],"
             "\"eptp_list\":[{\"mappings\":[{\"gpa\":\"0x0\",\"hpa\":\"0x80000000\",\"pages\":1024}]}]},"
             "\"caches\":{\"preset\":\"x86-server\",\"flush_on_eptp_switch\":%s},\"accesses\":[]}",
             (unsigned long long)GATE_OBJ_GVA, GATE_OBJ_PAGES, shared ? 1024u : 768u, variant == 3 ? "true" : "false");
    scenario sc;
    machine m;
    if (!scenario_parse(json, strlen(json), &sc, err, errlen))
        return false;
    if (!machine_build(&m, &sc, err, errlen)) {
        scenario_free(&sc);
        return false;
    }
    vm_result *r = malloc(sizeof *r);
    if (!r) {
        machine_free(&m);
        scenario_free(&sc);
        snprintf(err, errlen, "out of memory");
        return false;
    }
    memset(st, 0, sizeof *st);
    rng g = {.s = o->seed * 0x9E3779B97F4A7C15ull + 99};
    uint64_t requests = o->accesses / 4 ? o->accesses / 4 : 1;
    for (uint64_t q = 0; q < requests; q++) {
        uint64_t obj = GATE_OBJ_GVA + (next(&g) % GATE_OBJ_PAGES) * 4096;
        vm_access in = {.op = OP_VMFUNC, .eptp_index = 1}, back = {.op = OP_VMFUNC, .eptp_index = 0};
        vm_access call = {.op = OP_VMCALL};
        r->record = false;
        if (variant == 1) {
            translate(&m, &call, r);
            st->exits += r->exits;
            st->accesses += 4;      /* the hypervisor reads the object through its own mapping */
            st->events++;
            continue;
        }
        if (variant >= 2) {
            translate(&m, &in, r);
            st->refs += r->memory_refs;
            st->faults++;           /* counts VMFUNCs here */
        }
        for (int line = 0; line < 4; line++) {
            vm_access a = {.gva = obj + (uint64_t)line * 64, .op = OP_READ};
            translate(&m, &a, r);
            st->accesses++;
            st->refs += r->memory_refs;
            st->tlb_misses += r->tlb_hit == 0;
            st->exits += r->exits;
        }
        if (variant >= 2) {
            translate(&m, &back, r);
            st->refs += r->memory_refs;
            st->faults++;
        }
        st->events++;
    }
    st->cycles = (double)st->accesses * o->cycles_per_access + (double)st->refs * o->cycles_per_ref +
                 (double)st->exits * o->cycles_per_exit + (double)st->faults * o->cycles_per_vmfunc;
    free(r);
    machine_free(&m);
    scenario_free(&sc);
    return true;
}

static int gate_report(const experiment_opts *o, strbuf *out, bool first, char *err, size_t errlen)
{
    run_stats st[4];
    for (int v = 0; v < 4; v++) {
        if (o->progress)
            fprintf(stderr, "experiment: gate, %s...\n", gate_modes[v]);
        if (!run_gate(v, o, &st[v], err, errlen))
            return 1;
    }
    if (o->format == EXP_TABLE)
        sb_printf(out, "\nworkload gate: %llu requests of 4 cache lines each to an object only the gate's EPT maps\n"
                       "%-7s %-13s %10s %9s %9s %16s %9s\n",
                  (unsigned long long)st[0].events, "machine", "path", "refs/req", "exits", "vmfuncs", "cycles/request",
                  "vs shared");
    else if (o->format == EXP_JSON)
        sb_printf(out, "%s{\"workload\":\"gate\",\"requests\":%llu,\"modes\":[", first ? "" : ",",
                  (unsigned long long)st[0].events);
    for (int v = 0; v < 4; v++) {
        double req = st[v].events ? (double)st[v].events : 1;
        double over = 100.0 * (st[v].cycles - st[0].cycles) / st[0].cycles;
        if (o->format == EXP_TABLE)
            sb_printf(out, "%-7s %-13s %10.3f %9llu %9llu %16.1f %8.1f%%\n", "x86", gate_modes[v], st[v].refs / req,
                      (unsigned long long)st[v].exits, (unsigned long long)st[v].faults, st[v].cycles / req, over);
        else if (o->format == EXP_CSV)
            sb_printf(out, "gate,x86,%s,%llu,%llu,%llu,%.4f,%.3f,%llu,%.3f,%.3f\n", gate_modes[v],
                      (unsigned long long)st[v].accesses, (unsigned long long)st[v].events,
                      (unsigned long long)st[v].refs, st[v].refs / req,
                      st[v].accesses ? 100.0 * (double)st[v].tlb_misses / (double)st[v].accesses : 0.0,
                      (unsigned long long)st[v].exits, st[v].cycles / req, over);
        else
            sb_printf(out, "%s{\"machine\":\"x86\",\"mode\":\"%s\",\"accesses\":%llu,\"events\":%llu,\"refs\":%llu,"
                           "\"tlb_misses\":%llu,\"exits\":%llu,\"vmfuncs\":%llu,\"cycles\":%.0f,\"overhead_pct\":%.4f}",
                      v ? "," : "", gate_modes[v], (unsigned long long)st[v].accesses,
                      (unsigned long long)st[v].events, (unsigned long long)st[v].refs,
                      (unsigned long long)st[v].tlb_misses, (unsigned long long)st[v].exits,
                      (unsigned long long)st[v].faults, st[v].cycles, over);
    }
    if (o->format == EXP_JSON)
        sb_puts(out, "]}");
    return 0;
}

/* The agile paging experiment (Gandhi, Hill and Swift, ISCA 2016, in shape): one part
 * of the address space has page tables that change often (a 2 MiB region, one guest
 * page table, whose entries the guest rewrites every AGILE_PT_EVERY events), the other
 * misses the TLB (a 1 GiB region read at random). Shadow paging pays an exit per
 * page-table write, nested paging a 2-D walk per TLB miss; agile starts all shadow and
 * its VMM moves the churning table nested after AGILE_NESTED_AFTER write exits (back
 * after AGILE_QUIET quiet events), so misses in the big region keep shadow's short walk
 * and the writes stop exiting. Same machine as the other workloads (x86-server caches,
 * 2 MiB nested pages), same cost model. */
#define AGILE_HOT_GVA 0x40000000ull
#define AGILE_HOT_BYTES (2ull << 20)
#define AGILE_BIG_GVA 0x80000000ull
#define AGILE_BIG_BYTES (1ull << 30)
#define AGILE_PT_EVERY 20u
#define AGILE_NESTED_AFTER 4u
#define AGILE_QUIET 100000u

static const char *const agile_modes[] = {"native", "shadow", "ept", "agile"};

static char *agile_machine_json(const char *mode)
{
    strbuf sb;
    sb_init(&sb);
    uint64_t ram = AGILE_BIG_GVA + AGILE_BIG_BYTES;     /* data at gpa = gva, tables below */
    sb_printf(&sb, "{\"name\":\"experiment-agile\",\"mode\":\"%s\",\"guest\":{\"paging\":\"4level\","
                   "\"table_base\":\"0x1000000\",\"mappings\":[{\"gva\":\"0x%llx\",\"gpa\":\"0x%llx\",\"pages\":%llu},"
                   "{\"gva\":\"0x%llx\",\"gpa\":\"0x%llx\",\"pages\":%llu}]}",
              mode, (unsigned long long)AGILE_HOT_GVA, (unsigned long long)AGILE_HOT_GVA,
              (unsigned long long)(AGILE_HOT_BYTES >> 12), (unsigned long long)AGILE_BIG_GVA,
              (unsigned long long)AGILE_BIG_GVA, (unsigned long long)(AGILE_BIG_BYTES >> 12));
    if (!strcmp(mode, "shadow"))
        sb_printf(&sb, ",\"shadow\":{\"table_base\":\"0x800000000\",\"mappings\":[{\"gpa\":\"0x0\","
                       "\"hpa\":\"0x100000000\",\"pages\":%llu}]}",
                  (unsigned long long)(ram >> 12));
    else if (strcmp(mode, "native"))
        sb_printf(&sb, ",\"nested\":{\"table_base\":\"0x800000000\",\"mappings\":[{\"gpa\":\"0x0\","
                       "\"hpa\":\"0x100000000\",\"page\":\"2M\",\"pages\":%llu}]}",
                  (unsigned long long)(ram >> 21));
    if (!strcmp(mode, "agile"))
        sb_printf(&sb, ",\"agile\":{\"table_base\":\"0xc00000000\",\"nested_after_writes\":%u,"
                       "\"shadow_after_quiet\":%u}",
                  AGILE_NESTED_AFTER, AGILE_QUIET);
    sb_puts(&sb, ",\"caches\":{\"preset\":\"x86-server\"},\"accesses\":[]}");
    return sb_take(&sb);
}

static bool run_agile_mix(const char *mode, const experiment_opts *o, run_stats *st, uint32_t *to_nested, char *err,
                          size_t errlen)
{
    memset(st, 0, sizeof *st);
    char *json = agile_machine_json(mode);
    scenario sc;
    machine m;
    bool ok = json && scenario_parse(json, strlen(json), &sc, err, errlen);
    free(json);
    if (!ok)
        return false;
    if (!machine_build(&m, &sc, err, errlen)) {
        scenario_free(&sc);
        return false;
    }
    vm_result *r = malloc(sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        machine_free(&m);
        scenario_free(&sc);
        return false;
    }
    r->record = false;
    /* warm-up: every page written once, as for the other workloads */
    for (uint64_t off = 0; off < AGILE_HOT_BYTES + AGILE_BIG_BYTES; off += 4096) {
        vm_access a = {.gva = off < AGILE_HOT_BYTES ? AGILE_HOT_GVA + off : AGILE_BIG_GVA + off - AGILE_HOT_BYTES,
                       .op = OP_WRITE};
        translate(&m, &a, r);
    }
    rng g = {.s = o->seed * 0x9E3779B97F4A7C15ull + 77};
    uint64_t hot = AGILE_HOT_GVA, toggle = 0;
    for (uint64_t n = 0; n < o->accesses; n++) {
        vm_access a = {.op = OP_READ};
        if (n % AGILE_PT_EVERY == AGILE_PT_EVERY - 1) {
            /* the guest rewrites a PTE of the hot region (a software bit: no translation changes) */
            a.op = OP_PTE_WRITE;
            a.gva = AGILE_HOT_GVA + (next(&g) % (AGILE_HOT_BYTES >> 12)) * 4096;
            a.eptp_index = 1;
            toggle ^= 1;
            if (toggle)
                a.set = BIT(9);
            else
                a.clear = BIT(9);
        } else if (next(&g) % 2) {
            hot = AGILE_HOT_GVA + ((hot - AGILE_HOT_GVA + 64) % AGILE_HOT_BYTES);
            a.gva = hot;
        } else
            a.gva = AGILE_BIG_GVA + (next(&g) % AGILE_BIG_BYTES & ~7ull);
        translate(&m, &a, r);
        st->events++;
        if (a.op <= OP_FETCH) {
            st->accesses++;
            st->tlb_misses += r->tlb_hit == 0;
        }
        st->refs += r->memory_refs;
        st->exits += r->exits;
        st->faults += r->outcome != OUT_OK;
    }
    st->cycles = (double)st->accesses * o->cycles_per_access + (double)st->refs * o->cycles_per_ref +
                 (double)st->exits * o->cycles_per_exit;
    *to_nested = m.agile_to_nested;
    free(r);
    machine_free(&m);
    scenario_free(&sc);
    return true;
}

static int agile_report(const experiment_opts *o, strbuf *out, bool first, char *err, size_t errlen)
{
    run_stats st[4];
    uint32_t moved[4];
    for (int v = 0; v < 4; v++) {
        if (o->progress)
            fprintf(stderr, "experiment: agile under x86 %s...\n", agile_modes[v]);
        if (!run_agile_mix(agile_modes[v], o, &st[v], &moved[v], err, errlen))
            return 1;
    }
    if (o->format == EXP_TABLE)
        sb_printf(out, "\nworkload agile (%s): %llu events; a page-table write every %u events to the 2 MiB region, "
                       "half the accesses there (sequential), half at random over 1 GiB; agile: nested after %u "
                       "write exits to one table, back after %u quiet events\n"
                       "%-7s %-7s %10s %11s %9s %14s %9s\n",
                  workload_descriptions[7], (unsigned long long)o->accesses, AGILE_PT_EVERY, AGILE_NESTED_AFTER,
                  AGILE_QUIET, "machine", "mode", "refs/acc", "TLB miss %", "exits", "cycles/access", "overhead");
    else if (o->format == EXP_JSON)
        sb_printf(out, "%s{\"workload\":\"agile\",\"description\":\"%s\",\"footprint_mib\":%llu,"
                       "\"parameters\":{\"pt_write_every\":%u,\"nested_after_writes\":%u,\"shadow_after_quiet\":%u,"
                       "\"hot_region_mib\":2,\"big_region_mib\":1024},\"modes\":[",
                  first ? "" : ",", workload_descriptions[7],
                  (unsigned long long)((AGILE_HOT_BYTES + AGILE_BIG_BYTES) >> 20), AGILE_PT_EVERY, AGILE_NESTED_AFTER,
                  AGILE_QUIET);
    for (int v = 0; v < 4; v++) {
        double acc = st[v].accesses ? (double)st[v].accesses : 1;
        double cpa = st[v].cycles / acc, over = 100.0 * (st[v].cycles - st[0].cycles) / st[0].cycles;
        double rpa = (double)st[v].refs / acc, miss = 100.0 * (double)st[v].tlb_misses / acc;
        if (o->format == EXP_TABLE)
            sb_printf(out, "%-7s %-7s %10.3f %11.2f %9llu %14.2f %8.2f%%\n", "x86", agile_modes[v], rpa, miss,
                      (unsigned long long)st[v].exits, cpa, over);
        else if (o->format == EXP_CSV)
            sb_printf(out, "agile,x86,%s,%llu,%llu,%llu,%.4f,%.3f,%llu,%.3f,%.3f\n", agile_modes[v],
                      (unsigned long long)st[v].accesses, (unsigned long long)st[v].events,
                      (unsigned long long)st[v].refs, rpa, miss, (unsigned long long)st[v].exits, cpa, over);
        else
            sb_printf(out, "%s{\"machine\":\"x86\",\"mode\":\"%s\",\"accesses\":%llu,\"events\":%llu,\"refs\":%llu,"
                           "\"tlb_misses\":%llu,\"exits\":%llu,\"faults\":%llu,\"cycles\":%.0f,\"overhead_pct\":%.4f%s",
                      v ? "," : "", agile_modes[v], (unsigned long long)st[v].accesses,
                      (unsigned long long)st[v].events, (unsigned long long)st[v].refs,
                      (unsigned long long)st[v].tlb_misses, (unsigned long long)st[v].exits,
                      (unsigned long long)st[v].faults, st[v].cycles, over, v == 3 ? "" : "}");
        if (o->format == EXP_JSON && v == 3)
            sb_printf(out, ",\"to_nested\":%u}", moved[v]);
    }
    if (o->format == EXP_JSON)
        sb_puts(out, "]}");
    return 0;
}

bool experiment_overheads(int workload, uint64_t accesses, double overhead_pct[6], char *err, size_t errlen)
{
    experiment_opts o;
    experiment_defaults(&o);
    o.accesses = accesses;
    run_stats st[N_MODES];
    for (size_t i = 0; i < N_MODES; i++)
        if (!run_mode(&modes[i], workload, &o, &st[i], err, errlen))
            return false;
    for (size_t i = 0; i < N_MODES; i++) {
        const run_stats *native = &st[modes[i].sunway ? 4 : 0];
        overhead_pct[i] = 100.0 * (st[i].cycles - native->cycles) / native->cycles;
    }
    return true;
}

int experiment_run(const experiment_opts *o, strbuf *out, char *err, size_t errlen)
{
    int first = o->workload < 0 ? 0 : o->workload, last = o->workload < 0 ? 7 : o->workload;
    if (o->format == EXP_JSON)
        sb_printf(out, "{\"format\":\"vmsim-experiment/1\",\"accesses\":%llu,\"seed\":%llu,\"tables\":\"%s\",\"cost_model\":{"
                       "\"cycles_per_access\":%g,\"cycles_per_ref\":%g,\"cycles_per_exit\":%g,\"cycles_per_vmfunc\":%g,"
                       "\"refill_trap_cycles\":%g},"
                       "\"workloads\":[",
                  (unsigned long long)o->accesses, (unsigned long long)o->seed, o->on_demand ? "on-demand" : "built",
                  o->cycles_per_access, o->cycles_per_ref,
                  o->cycles_per_exit, o->cycles_per_vmfunc, o->refill_trap_cycles);
    else if (o->format == EXP_CSV)
        sb_puts(out, "workload,machine,mode,accesses,events,refs,refs_per_access,tlb_miss_pct,exits,cycles_per_access,"
                     "overhead_pct\n");
    for (int k = first; k <= last; k++) {
        if (k == 6) {
            if (gate_report(o, out, k == first, err, errlen))
                return 1;
            continue;
        }
        if (k == 7) {
            if (agile_report(o, out, k == first, err, errlen))
                return 1;
            continue;
        }
        run_stats st[N_MODES];
        for (size_t i = 0; i < N_MODES; i++) {
            if (o->progress)
                fprintf(stderr, "experiment: %s under %s %s...\n", workload_names[k], modes[i].machine, modes[i].mode);
            if (!run_mode(&modes[i], k, o, &st[i], err, errlen))
                return 1;
        }
        uint64_t fp = o->footprint_mib ? o->footprint_mib : default_footprint_mib(k);
        if (o->format == EXP_TABLE)
            sb_printf(out, "\nworkload %s (%s): %llu events over %llu MiB (steady state after a warm-up pass; tables %s)\n"
                           "%-7s %-7s %10s %11s %9s %14s %9s\n",
                      workload_names[k], workload_descriptions[k], (unsigned long long)o->accesses,
                      (unsigned long long)fp, o->on_demand ? "filled on demand" : "built in advance", "machine", "mode",
                      "refs/acc", "TLB miss %", "exits", "cycles/access", "overhead");
        else if (o->format == EXP_JSON)
            sb_printf(out, "%s{\"workload\":\"%s\",\"description\":\"%s\",\"footprint_mib\":%llu,\"modes\":[",
                      k > first ? "," : "", workload_names[k], workload_descriptions[k], (unsigned long long)fp);
        for (size_t i = 0; i < N_MODES; i++) {
            const run_stats *native = &st[modes[i].sunway ? 4 : 0];
            double acc = st[i].accesses ? (double)st[i].accesses : 1;
            double cpa = st[i].cycles / acc, overhead = 100.0 * (st[i].cycles - native->cycles) / native->cycles;
            double rpa = (double)st[i].refs / acc, miss = 100.0 * (double)st[i].tlb_misses / acc;
            if (o->format == EXP_TABLE)
                sb_printf(out, "%-7s %-7s %10.3f %11.2f %9llu %14.2f %8.2f%%\n", modes[i].machine, modes[i].label, rpa,
                          miss, (unsigned long long)st[i].exits, cpa, overhead);
            else if (o->format == EXP_CSV)
                sb_printf(out, "%s,%s,%s,%llu,%llu,%llu,%.4f,%.3f,%llu,%.3f,%.3f\n", workload_names[k], modes[i].machine,
                          modes[i].label, (unsigned long long)st[i].accesses, (unsigned long long)st[i].events,
                          (unsigned long long)st[i].refs, rpa, miss, (unsigned long long)st[i].exits, cpa, overhead);
            else
                sb_printf(out, "%s{\"machine\":\"%s\",\"mode\":\"%s\",\"accesses\":%llu,\"events\":%llu,\"refs\":%llu,"
                               "\"tlb_misses\":%llu,\"exits\":%llu,\"faults\":%llu,\"warmup_exits\":%llu,\"cycles\":%.0f,"
                               "\"overhead_pct\":%.4f}",
                          i ? "," : "", modes[i].machine, modes[i].label, (unsigned long long)st[i].accesses,
                          (unsigned long long)st[i].events, (unsigned long long)st[i].refs,
                          (unsigned long long)st[i].tlb_misses, (unsigned long long)st[i].exits,
                          (unsigned long long)st[i].faults, (unsigned long long)st[i].warmup_exits, st[i].cycles,
                          overhead);
        }
        if (o->format == EXP_JSON)
            sb_puts(out, "]}");
    }
    if (o->format == EXP_JSON)
        sb_puts(out, "]}\n");
    else if (o->format == EXP_TABLE)
        sb_printf(out, "\ncost model: %g cycles per access, %g per page-walk reference, %g per VM exit, %.0f per VMFUNC, "
                       "%g per Sunway software TLB refill trap\n",
                  o->cycles_per_access, o->cycles_per_ref, o->cycles_per_exit, o->cycles_per_vmfunc,
                  o->refill_trap_cycles);
    return 0;
}

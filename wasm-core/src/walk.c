/* The walk the modes share: the guest walk, the nested walk of each gpa it touches,
 * the A/D updates, the faults with their exit information (docs/model.md section 4),
 * the TLB and walk-cache fills, and the events of a machine with no VMM in the way.
 * No allocation here: the trace goes into the caller's vm_result. */
#include "walk.h"
#include "nested_entry.h"
#include "guest_entry.h"

#include <stddef.h>
#include <string.h>

#define X86_A BIT(5)
#define X86_D BIT(6)

static bool nested_ad_on(const machine *m)
{
    return m->nf == &nested_npt || m->s->ept_ad;
}

/* PERM_* bits a nested walk must find for an access of kind op. */
static unsigned nested_need(const machine *m, enum vm_op op)
{
    if (m->nf == &nested_ept)
        return op == OP_READ ? PERM_R : op == OP_WRITE ? PERM_W : PERM_X;
    /* NPT: every nested access is a user access (APM 15.25.5). */
    return PERM_U | (op == OP_WRITE ? PERM_W : 0) | (op == OP_FETCH ? PERM_X : 0);
}

static inline nested_req final_req(const machine *m, enum vm_op op)
{
    nested_req q = {.need = nested_need(m, op), .write = op == OP_WRITE, .final = true, .stage = 0};
    q.qual_access = op == OP_READ ? 1 : op == OP_WRITE ? 2 : 4;
    q.npt_err = (op == OP_WRITE ? 2 : 0) |
                (op == OP_FETCH && (m->s->host_nxe || m->s->host_smep) ? 0x10 : 0);
    return q;
}

/* Guest paging-structure reads are writes as far as the nested table is concerned with
 * EPT A/D on (SDM 29.3.3.2) and always under NPT. */
static inline nested_req table_req(const machine *m, int stage)
{
    bool w = nested_ad_on(m);
    nested_req q = {.need = nested_need(m, w ? OP_WRITE : OP_READ), .write = w, .final = false, .stage = stage};
    q.qual_access = w ? 3 : 1;
    q.npt_err = 2;
    return q;
}

static inline nested_req ad_write_req(const machine *m, int stage)
{
    nested_req q = {.need = nested_need(m, OP_WRITE), .write = true, .final = false, .stage = stage};
    q.qual_access = 3;      /* a locked read-modify-write of the entry */
    q.npt_err = 2;
    return q;
}

static void nested_fault(const machine *m, vm_result *r, const nested_req *q, uint64_t gpa, int level,
                         enum vm_reason reason, int detail, unsigned perms)
{
    vm_fault *f = &r->fault;
    f->dim = DIM_NESTED;
    f->level = (uint8_t)level;
    f->stage = (uint8_t)q->stage;
    f->reason = (uint8_t)reason;
    f->detail = (uint8_t)detail;
    f->fault_gpa = gpa;
    r->exits++;
    if (m->nf == &nested_ept) {
        if (reason == REASON_MISCONFIG) {
            r->outcome = OUT_EPT_MISCONFIG;
            return;
        }
        r->outcome = OUT_EPT_VIOLATION;
        f->qualification = q->qual_access | ((uint64_t)(perms & 7u) << 3) | BIT(7) | (q->final ? BIT(8) : 0);
        return;
    }
    r->outcome = OUT_NPT_FAULT;
    f->exitinfo1 = (reason != REASON_NOT_PRESENT ? 1 : 0) | q->npt_err | 4 |
                   (reason == REASON_RESERVED ? 8 : 0) | (q->final ? BIT(32) : BIT(33));
}

static inline enum vm_step_result nested_result(enum nested_check c)
{
    return c == NC_TABLE ? RES_TABLE : c == NC_LEAF ? RES_PAGE : c == NC_NOT_PRESENT ? RES_NOT_PRESENT
           : c == NC_RESERVED ? RES_RESERVED : RES_MISCONFIG;
}

/* A nested walk that ended on a bad entry (c), or on the leaf without the rights q needs. */
static __attribute__((noinline)) bool nested_walk_fault(machine *m, vm_result *r, const nested_req *q, uint64_t gpa,
                                                        int level, enum nested_check c, int detail, unsigned perms)
{
    if (c == NC_NOT_PRESENT)
        nested_fault(m, r, q, gpa, level, REASON_NOT_PRESENT, 0, 0);
    else if (c == NC_RESERVED)
        nested_fault(m, r, q, gpa, level, REASON_RESERVED, 0, perms);
    else if (c == NC_MISCONFIG)
        nested_fault(m, r, q, gpa, level, REASON_MISCONFIG, detail, 0);
    else
        nested_fault(m, r, q, gpa, level, REASON_PERMISSION, 0, perms);
    return false;
}


/* AMD's A bit says that the table the entry points to has been read (APM vol. 2,
 * 5.4.1, "Accessed (A) Bit": "set to 1 by the processor the first time the table or
 * physical page is either read from or written to"): when an NPT walk faults, the
 * entries above the last one read still get A, for the tables below them were read.
 * The leaf's A (and D) stay for a walk that reaches the page. */
static void npt_table_a_bits(machine *m, vm_step **steps, const uint64_t *addrs, const uint64_t *vals, int count,
                             const bool record)
{
    for (int j = 0; j < count; j++) {
        if (vals[j] & BIT(5))
            continue;
        uint64_t cur = mem_read(&m->mem, addrs[j], 8);
        if (cur & BIT(5))
            continue;
        mem_write_existing(&m->mem, addrs[j], 8, cur | BIT(5));
        if (record && steps[j])
            steps[j]->ad_set = 1;
    }
}

/* One nested walk. `ept` and `record` are constants in each of the instantiations
 * below, so the entry checks inline, the walk makes no indirect calls, and a walk whose
 * caller wants no steps carries no trace code. */
static inline __attribute__((always_inline)) bool nested_walk_impl(machine *m, vm_result *r, uint64_t gpa,
                                                                   const nested_req *q, nested_out *o,
                                                                   const bool ept, const bool record)
{
    const scenario *s = m->s;
    vm_step *steps[5];
    uint64_t addrs[5], vals[5];
    unsigned level_perms[6];
    int n = 0;
    unsigned perms = PERM_R | PERM_W | PERM_X | PERM_U;
    uint64_t table = m->nested_root;
    int top = s->nested_levels;
    /* Nested page-walk cache: the deepest cached upper entry for this gpa skips the
     * levels above it. */
    if (m->npwc) {
        for (int l = 2; l <= s->nested_levels; l++) {
            cache_line *c = cache_find(m->npwc, ((uint64_t)l << 58) | (gpa >> (12 + 9 * (l - 1))), m->eptp_index);
            if (!c)
                continue;
            table = c->value;
            perms = c->aux;
            top = l - 1;
            r->pwc_hits++;
            if (record && r->nsteps < VM_MAX_STEPS)
                r->steps[r->nsteps++] = (vm_step){.kind = STEP_PWC_HIT, .dim = DIM_NESTED, .level = (uint8_t)l,
                                                  .stage = (uint8_t)q->stage, .gpa_valid = true, .gpa = gpa,
                                                  .table = table, .entry = table, .result = RES_TABLE};
            break;
        }
    }
    /* Read table entries down to the first entry that is not one (the leaf, or a bad
     * entry), with the quick test; the counters are added once at the end (a step's ref
     * is its number among all references of the access). */
    const table_test tt = ept ? ept_table_test(s) : npt_table_test(s);
    int level = top;
    uint64_t e;
    vm_step *st = NULL;
    for (;; level--) {
        uint32_t idx = (uint32_t)(gpa >> (12 + 9 * (level - 1))) & 511u;
        uint64_t ea = table + 8u * idx;
        e = mem_read_entry(&m->mem, table, 8u * idx);      /* tables are 4 KiB aligned */
        dc_ref(m, ea);
        if (record && (st = record_step(r)))
            *st = (vm_step){.kind = STEP_READ, .dim = DIM_NESTED, .level = (uint8_t)level, .stage = (uint8_t)q->stage,
                            .gpa_valid = true, .gpa = gpa, .table = table, .index = idx, .entry_hpa = ea, .entry = e,
                            .ref = (uint16_t)(r->memory_refs + n + 1), .result = RES_TABLE};
        steps[n] = st;
        vals[n] = e;
        addrs[n++] = ea;
        if (!(ept ? ept_entry_is_table(tt, e, level) : npt_entry_is_table(tt, e, level)))
            break;                      /* level 1 never holds a table entry */
        perms &= ept ? ept_entry_perms(s, e) : npt_entry_perms(s, e);
        level_perms[level] = perms;
        table = e & bits_range(51, 12);
    }
    r->memory_refs += (uint32_t)n;
    r->nested_refs += (uint32_t)n;
    /* The last entry read: the full check tells a leaf from a fault. */
    int detail = MC_NONE;
    enum nested_check c = ept ? ept_entry_check(s, e, level, &detail) : npt_entry_check(s, e, level, &detail);
    if (st)
        st->result = (uint8_t)nested_result(c);
    if (!ept && (c != NC_LEAF || (perms & npt_entry_perms(s, e) & q->need) != q->need))
        npt_table_a_bits(m, steps, addrs, vals, n - 1, record);
    if (c != NC_LEAF)
        return nested_walk_fault(m, r, q, gpa, level, c, detail,
                                 c == NC_RESERVED ? perms & (ept ? ept_entry_perms(s, e) : npt_entry_perms(s, e)) : 0);
    perms &= ept ? ept_entry_perms(s, e) : npt_entry_perms(s, e);
    if ((perms & q->need) != q->need)
        return nested_walk_fault(m, r, q, gpa, level, NC_LEAF, 0, perms);
    if (!ept || s->ept_ad) {
        const uint64_t abit = ept ? BIT(8) : BIT(5), dbit = ept ? BIT(9) : BIT(6);
        for (int j = 0; j < n; j++) {
            uint64_t want = abit | (j == n - 1 && q->write ? dbit : 0);
            if ((vals[j] & want) == want)
                continue;   /* A/D only ever get set, so memory has them too */
            uint64_t cur = mem_read(&m->mem, addrs[j], 8);
            uint64_t set = want & ~cur;
            if (set) {
                mem_write_existing(&m->mem, addrs[j], 8, cur | set);
                if (record && steps[j])
                    steps[j]->ad_set = (uint8_t)(((set & abit) ? 1 : 0) | ((set & dbit) ? 2 : 0));
            }
        }
    }
    if (m->npwc)
        for (int j = 0; j < n - 1; j++) {
            int l = top - j;
            cache_fill(m->npwc, ((uint64_t)l << 58) | (gpa >> (12 + 9 * (l - 1))), m->eptp_index,
                       vals[j] & bits_range(51, 12), 0, (uint16_t)level_perms[l]);
        }
    uint64_t size = 1ull << (12 + 9 * (level - 1));
    o->hpa = nested_entry_page_addr(e, level) | (gpa & (size - 1));
    o->page_size = size;
    o->perms = perms;
    o->leaf_level = level;
    return true;
}

/* The four instantiations. Each is a function of its own (noinline): inlined together
 * into one caller they would share one register allocation, and every walk would pay
 * for the traced variant's live values. */
static __attribute__((noinline)) bool nested_walk_ept(machine *m, vm_result *r, uint64_t gpa, const nested_req *q,
                                                      nested_out *o)
{
    return nested_walk_impl(m, r, gpa, q, o, true, false);
}

static __attribute__((noinline)) bool nested_walk_ept_traced(machine *m, vm_result *r, uint64_t gpa,
                                                             const nested_req *q, nested_out *o)
{
    return nested_walk_impl(m, r, gpa, q, o, true, true);
}

static __attribute__((noinline)) bool nested_walk_npt(machine *m, vm_result *r, uint64_t gpa, const nested_req *q,
                                                      nested_out *o)
{
    return nested_walk_impl(m, r, gpa, q, o, false, false);
}

static __attribute__((noinline)) bool nested_walk_npt_traced(machine *m, vm_result *r, uint64_t gpa,
                                                             const nested_req *q, nested_out *o)
{
    return nested_walk_impl(m, r, gpa, q, o, false, true);
}

#define NTLB_DIRTY 0x10u

static nested_walk_fn *nested_walker_built(const machine *m, bool record)
{
    if (m->nf == &nested_ept)
        return record ? nested_walk_ept_traced : nested_walk_ept;
    return record ? nested_walk_npt_traced : nested_walk_npt;
}

/* nested.on_demand: a not-present entry is an EPT violation (NPT fault) the VMM answers
 * by filling the leaf from its memory slots; the walk is then retried. The exit and the
 * references of both walks count. */
static __attribute__((noinline)) bool nested_walk_demand(machine *m, vm_result *r, uint64_t gpa, const nested_req *q,
                                                         nested_out *o)
{
    nested_walk_fn *walk = nested_walker_built(m, r->record);
    if (walk(m, r, gpa, q, o))
        return true;
    uint64_t ea, leaf;
    if ((r->outcome != OUT_EPT_VIOLATION && r->outcome != OUT_NPT_FAULT) || r->fault.reason != REASON_NOT_PRESENT ||
        !nested_demand_fill(m, gpa, &ea, &leaf))
        return false;
    m->nested_fills++;
    r->outcome = OUT_OK;
    r->fault = (vm_fault){0};
    vm_step *st = record_step(r);
    if (st)
        *st = (vm_step){.kind = STEP_VMM_FILL, .dim = DIM_NESTED, .level = 1, .stage = (uint8_t)q->stage,
                        .gpa_valid = true, .gpa = gpa, .table = ea & ~0xFFFull, .index = (uint32_t)((ea & 0xFFF) / 8),
                        .entry_hpa = ea, .entry = leaf, .result = RES_WRITTEN};
    return walk(m, r, gpa, q, o);
}

/* The nested walk proper: the mode's (the format's, with or without steps, or on
 * demand; the flat table's), set when the machine was built (walk_nested_setup). */
static inline nested_walk_fn *nested_walker(const machine *m, bool record)
{
    return m->nwalk[record];
}

void walk_nested_setup(machine *m)
{
    for (int record = 0; record < 2; record++)
        m->nwalk[record] = m->s->nested_on_demand ? nested_walk_demand : nested_walker_built(m, record);
}

/* The nested TLB caches gpa -> hpa per nested page, tagged by EPT: a hit replaces the
 * whole nested walk. A write needs an entry filled by a write (the dirty bit). */
static __attribute__((noinline)) bool nested_walk_ntlb(machine *m, vm_result *r, uint64_t gpa, const nested_req *q,
                                                       nested_out *o)
{
    /* each page size present in the nested TLB, smallest first */
    for (uint32_t shifts = m->ntlb_shifts & (uint32_t)bits_range(30, 12); shifts; shifts &= shifts - 1) {
        uint32_t sh = (uint32_t)__builtin_ctz(shifts);
        cache_line *c = cache_find(m->ntlb, ((uint64_t)sh << 58) | (gpa >> sh), m->eptp_index);
        /* with nested A/D on, a write must find the dirty bit already set */
        if (!c || (c->aux & q->need) != q->need || (q->write && nested_ad_on(m) && !(c->aux & NTLB_DIRTY)))
            continue;
        uint64_t size = 1ull << sh;
        *o = (nested_out){.hpa = c->value | (gpa & (size - 1)), .page_size = size, .perms = c->aux & 0xFu,
                          .leaf_level = (int)c->value2};
        r->ntlb_hits++;
        if (r->record && r->nsteps < VM_MAX_STEPS)
            r->steps[r->nsteps++] = (vm_step){.kind = STEP_NTLB_HIT, .dim = DIM_NESTED, .level = (uint8_t)c->value2,
                                              .stage = (uint8_t)q->stage, .gpa_valid = true, .gpa = gpa,
                                              .table = 0, .entry = c->value, .result = RES_PAGE};
        return true;
    }
    bool ok = nested_walker(m, r->record)(m, r, gpa, q, o);
    if (ok) {
        uint32_t sh = (uint32_t)__builtin_ctzll(o->page_size);
        m->ntlb_shifts |= 1u << sh;
        cache_fill(m->ntlb, ((uint64_t)sh << 58) | (gpa >> sh), m->eptp_index, o->hpa & ~(o->page_size - 1),
                   (uint64_t)o->leaf_level, (uint16_t)(o->perms | (q->write ? NTLB_DIRTY : 0)));
    }
    return ok;
}

/* How the guest walk translates each gpa: through the nested TLB when there is one. */
static nested_walk_fn *nested_walk_for(const machine *m, bool record)
{
    return m->ntlb ? nested_walk_ntlb : nested_walker(m, record);
}

void report_guest_fault(const machine *m, const vm_access *a, vm_result *r, int level, enum vm_reason reason,
                        uint64_t code)
{
    const scenario *s = m->s;
    r->outcome = OUT_GUEST_PF;
    vm_fault *f = &r->fault;
    f->dim = DIM_GUEST;
    f->level = (uint8_t)level;
    f->stage = (uint8_t)level;
    f->reason = (uint8_t)reason;
    bool id = a->op == OP_FETCH && (s->cr4_smep || (m->gf->has_xd && s->efer_nxe));
    if (!m->gf->has_ad) {
        /* Sunway-style memory-management fault code: TNV 0, ACV 1, FOR/FOW/FOE 2-4 */
        f->error_code = reason == REASON_NOT_PRESENT ? 0 : reason == REASON_RESERVED ? 1 : code;
        return;
    }
    f->error_code = (reason != REASON_NOT_PRESENT ? 1u : 0u) | (a->op == OP_WRITE ? 2u : 0u) | (a->user ? 4u : 0u) |
                    (reason == REASON_RESERVED ? 8u : 0u) | (id ? 0x10u : 0u);
}

typedef struct walked {
    uint64_t gpa, hpa, table;
    uint32_t index;
    int level, nleaf;
    unsigned nperms;
    uint16_t rights;        /* combined RW | US << 1 | XD << 2 down to this level */
} walked;

static uint64_t gpwc_key(const guest_format *gf, uint64_t gva, int level)
{
    return ((uint64_t)level << 58) | (gva >> (gf->page_shift + gf->index_bits * (level - 1)));
}

/* A TLB entry remembers which of the six (op, user) combinations the walk allowed, so a
 * hit needs no rights check of its own; anything else walks again and faults there. */
uint16_t tlb_rights(const machine *m, uint64_t leaf, bool rw, bool us, bool xd, unsigned nperms)
{
    const bool x86 = m->gf->access_fault == x86_access_fault;
    uint16_t bits = 0;
    for (int op = OP_READ; op <= OP_FETCH; op++) {
        unsigned need = nested_need(m, (enum vm_op)op);
        bool nested_ok = !machine_two_d(m) || (nperms & need) == need;
        for (int user = 0; user <= 1; user++) {
            uint64_t code;
            bool ok = nested_ok && (x86 ? x86_rights_fault(m->s, op, user, rw, us, xd)
                                        : m->gf->access_fault(m->s, leaf, op, user, rw, us, xd, &code)) < 0;
            if (ok)
                bits |= (uint16_t)(1u << (op * 2 + user));
        }
    }
    return bits;
}

/* mov cr3 to address space `as`: its CR3 (and PAE PDPTEs); without PCIDs a CR3 write
 * flushes the TLB and the paging-structure caches. */
void switch_address_space(machine *m, uint32_t as)
{
    m->asid = as;
    m->cr3 = m->cr3s[as];
    if (m->s->paging == PAGING_PAE)
        pae_load_pdptes(m);
    if (!m->s->pcid) {
        if (m->tlb)
            cache_flush(m->tlb);
        if (m->gpwc)
            cache_flush(m->gpwc);
    }
}

/* Where the guest's level-`level` entry for gva lives (its gpa and the hpa it is stored
 * at), following the guest tables from CR3; false when the path stops above that level
 * (a table not present, a larger page, or a table outside guest memory). */
bool guest_entry_addr(machine *m, uint64_t gva, int level, uint64_t *egpa, uint64_t *hpa)
{
    const guest_format *gf = m->gf;
    uint64_t table = m->cr3;
    for (int l = gf->build_levels;; l--) {
        *egpa = table + (uint64_t)gf->entry_size * gf->index(gva, l);
        if (!nested_lookup(m, *egpa, hpa))
            return false;
        *hpa &= bits_range(m->s->maxphyaddr - 1, 0);   /* a leaf's bits above MAXPHYADDR name no frame */
        if (l == level)
            return true;
        uint64_t e = mem_read(&m->mem, *hpa, gf->entry_size);
        if (!(e & 1) || gf->is_leaf(m->s, e, l))
            return false;
        table = gf->table_addr(e);
    }
}

void walk_cache_event(machine *m, const vm_access *a, vm_result *r)
{
    r->outcome = OUT_OK;
    if (a->op == OP_MOV_CR3) {
        switch_address_space(m, a->eptp_index);
        return;
    }
    /* INVLPG: the page's TLB entries and (SDM 4.10.4.1) all paging-structure caches */
    for (uint32_t sh = 12; m->tlb && sh <= 30; sh++)
        cache_drop(m->tlb, ((uint64_t)sh << 58) | (a->gva >> sh), tlb_tag(m));
    if (m->gpwc)
        cache_flush(m->gpwc);
}

/* Without a VMM that watches the guest's tables a guest page-table write is an
 * ordinary store (no exit); the guest then invalidates the page as its kernel would. */
void walk_pte_write(machine *m, const vm_access *a, vm_result *r)
{
    int es = m->gf->entry_size;
    uint64_t egpa, hpa;
    r->outcome = OUT_OK;
    if (!guest_entry_addr(m, a->gva, (int)a->eptp_index, &egpa, &hpa))
        return;
    mem_write_existing(&m->mem, hpa, es, (mem_read(&m->mem, hpa, es) & ~a->clear) | a->set);
    vm_access inv = {.gva = a->gva, .op = OP_INVLPG};
    walk_cache_event(m, &inv, r);
}

void pae_load_pdptes(machine *m)
{
    for (int i = 0; i < 4; i++) {
        uint64_t gpa = (m->cr3 & 0xFFFFFFE0u) + 8u * (uint64_t)i;
        if (!nested_lookup(m, gpa, &m->pdpte_hpa[i]))
            m->pdpte[i] = 0;
        else
            m->pdpte[i] = mem_read(&m->mem, m->pdpte_hpa[i], 8);
    }
}

/* The guest entry format: inline for x86-64 (4level, 5level), through the guest_format
 * table otherwise. `x64` is a constant in each instantiation of guest_walk. */
#define GUEST_FN(x64, inline_call, table_call) ((x64) ? (inline_call) : (table_call))


/* Mode npt (an AMD CPU): when the guest walk faults, the A bit of each entry whose
 * table was read (the first `count` entries walked), as npt_table_a_bits does for the
 * nested tables. NPT made every guest table read a write, so none is blocked. */
static void npt_guest_a_bits(machine *m, vm_result *r, const walked *w, const uint64_t *wval, int count, int es,
                             bool two_d, const bool record)
{
    for (int j = 0; j < count; j++) {
        if (wval[j] & X86_A)
            continue;
        uint64_t cur = mem_read(&m->mem, w[j].hpa, es);
        if (cur & X86_A)
            continue;
        vm_step *st = record ? record_step(r) : NULL;
        if (st)
            *st = (vm_step){.kind = STEP_AD_WRITE, .dim = DIM_GUEST, .level = (uint8_t)w[j].level,
                            .stage = (uint8_t)w[j].level, .gpa_valid = two_d, .gpa = w[j].gpa, .table = w[j].table,
                            .index = w[j].index, .entry_hpa = w[j].hpa, .entry = cur, .ad_set = 1,
                            .result = RES_WRITTEN};
        r->ad_writes++;
        mem_write_existing(&m->mem, w[j].hpa, es, cur | X86_A);
    }
}

/* The guest walk of one access (4.2), with the nested walk of every gpa it touches, the
 * A/D updates, the final nested walk and the cache fills. */
static inline __attribute__((always_inline)) void guest_walk(machine *m, const vm_access *a, vm_result *r,
                                                             const bool x64, const bool record, const int from_level,
                                                             const uint64_t from_table, const uint64_t from_rights)
{
    const scenario *s = m->s;
    const guest_format *gf = m->gf;
    const int es = x64 ? 8 : gf->entry_size;
    const bool has_xd = x64 || gf->has_xd, has_ad = x64 || gf->has_ad;
    const bool two_d = machine_two_d(m);
    const bool npt_a = m->nf == &nested_npt && has_ad;    /* AMD: A bits of a faulting walk */
    walked w[5];
    uint64_t wval[5];
    int nw = 0;
    uint64_t table = m->cr3;
    /* The combined rights: R/W (bit 1) and U/S (bit 2) ANDed over the entries walked,
     * XD ORed where the format has it and EFER.NXE is set. */
    uint64_t rwus = BIT(1) | BIT(2);
    const bool xd_on = has_xd && s->efer_nxe;
    const uint64_t table_reserved = x64 ? x86_64_table_reserved(s) : 0;
    const uint64_t top_reserved = x64 ? x86_64_top_reserved(s) : 0;
    bool xd = false;
    uint64_t page = 0, size = 0;
    unsigned final_perms = 0;

    nested_req tq = {0};
    nested_walk_fn *nested_walk = NULL;
    if (two_d) {
        tq = table_req(m, 0);
        nested_walk = nested_walk_for(m, record);
    }
    if (!x64 && s->paging == PAGING_PAE && m->nf != &nested_npt) {
        /* The PDPTE was loaded into a register with CR3: no memory reference now. */
        uint32_t idx = (uint32_t)(a->gva >> 30) & 3u;
        uint64_t e = m->pdpte[idx];
        vm_step *st = record ? record_step(r) : NULL;
        if (st)
            *st = (vm_step){.kind = STEP_PDPTE, .dim = DIM_GUEST, .level = 3, .stage = 3, .gpa_valid = two_d,
                            .table = m->cr3 & 0xFFFFFFE0u, .gpa = (m->cr3 & 0xFFFFFFE0u) + 8u * idx, .index = idx,
                            .entry_hpa = m->pdpte_hpa[idx], .entry = e,
                            .result = (e & 1) ? RES_TABLE : RES_NOT_PRESENT};
        if (!(e & 1)) {
            report_guest_fault(m, a, r, 3, REASON_NOT_PRESENT, 0);
            return;
        }
        table = e & bits_range(51, 12);
    }

    int top = gf->levels;
    if (from_level) {
        /* Agile paging: the shadow walk ended on a switching entry, which gave the gpa of
         * the guest's level-from_level table and the rights of the levels above it. */
        top = from_level;
        table = from_table;
        rwus = from_rights & (BIT(1) | BIT(2));
        xd = xd_on && (from_rights & BIT(63));
    } else if (m->gpwc) {
        for (int l = 2; l <= gf->levels; l++) {
            cache_line *c = cache_find(m->gpwc, gpwc_key(gf, a->gva, l), m->s->pcid ? m->asid : 0);
            if (!c)
                continue;
            table = c->value;
            rwus = (uint64_t)(c->aux & 3) << 1;
            xd = (c->aux >> 2) & 1;
            top = l - 1;
            r->pwc_hits++;
            vm_step *st = record ? record_step(r) : NULL;
            if (st)
                *st = (vm_step){.kind = STEP_PWC_HIT, .dim = DIM_GUEST, .level = (uint8_t)l, .stage = (uint8_t)l,
                                .table = table, .entry = table, .result = RES_TABLE};
            break;
        }
    }
    if (!x64 && s->paging == PAGING_PAE && m->nf == &nested_npt && top == gf->levels) {
        /* (after the walk cache: a cached directory entry stands for its PDPTE too) */
        /* AMD nested paging with a legacy-PAE guest has no PDPTE registers: the PDPTE is
         * read on every walk, through the nested walk of its gpa (APM vol. 2, 15.25.10;
         * KVM reloads the PDPTRs from memory when NPT is on). A reserved bit is a #PF. */
        uint32_t idx = (uint32_t)(a->gva >> 30) & 3u;
        uint64_t egpa = (m->cr3 & 0xFFFFFFE0u) + 8u * idx;
        nested_out no = {0};
        tq.stage = 3;
        if (!nested_walk(m, r, egpa, &tq, &no))
            return;
        uint64_t e = mem_read(&m->mem, no.hpa, 8);
        dc_ref(m, no.hpa);
        r->memory_refs++;
        r->guest_refs++;
        bool present = e & 1;
        bool reserved = present && (e & (BIT(1) | BIT(2) | bits_range(8, 5) | bits_range(63, s->maxphyaddr)));
        vm_step *st = record ? record_step(r) : NULL;
        if (st)
            *st = (vm_step){.kind = STEP_READ, .dim = DIM_GUEST, .level = 3, .stage = 3, .gpa_valid = true,
                            .gpa = egpa, .table = m->cr3 & 0xFFFFFFE0u, .index = idx, .entry_hpa = no.hpa,
                            .entry = e, .ref = (uint16_t)r->memory_refs,
                            .result = !present ? RES_NOT_PRESENT : reserved ? RES_RESERVED : RES_TABLE};
        if (!present || reserved) {
            report_guest_fault(m, a, r, 3, present ? REASON_RESERVED : REASON_NOT_PRESENT, 0);
            return;
        }
        table = e & bits_range(51, 12);
    }
    for (int level = top; level >= 1; level--) {
        uint32_t idx = GUEST_FN(x64, x86_64_index(a->gva, level), gf->index(a->gva, level));
        uint64_t egpa = table + (uint64_t)es * idx, ehpa = egpa;
        nested_out no = {0};
        if (two_d) {
            tq.stage = level;
            if (!nested_walk(m, r, egpa, &tq, &no)) {
                if (npt_a && nw > 1)
                    npt_guest_a_bits(m, r, w, wval, nw - 1, es, two_d, record);
                return;
            }
            ehpa = no.hpa;
        }
        /* x86-64 tables are 4 KiB aligned: in native mode the entry is in table's frame */
        uint64_t e = x64 && !two_d ? mem_read_entry(&m->mem, table, 8u * idx) : mem_read(&m->mem, ehpa, es);
        dc_ref(m, ehpa);
        r->memory_refs++;
        r->guest_refs++;
        bool present = e & 1, leaf = false, reserved = false;
        if (!(x64 && x86_64_is_table(table_reserved, top_reserved, e, level))) {      /* the common case needs no more checks */
            leaf = present && GUEST_FN(x64, x86_64_is_leaf(e, level), gf->is_leaf(s, e, level));
            reserved = present && GUEST_FN(x64, x86_64_reserved(s, e, level, leaf), gf->reserved(s, e, level, leaf));
        }
        vm_step *st = record ? record_step(r) : NULL;
        if (st)
            *st = (vm_step){.kind = STEP_READ, .dim = DIM_GUEST, .level = (uint8_t)level, .stage = (uint8_t)level,
                            .gpa_valid = two_d, .gpa = egpa, .table = table, .index = idx, .entry_hpa = ehpa,
                            .entry = e, .ref = (uint16_t)r->memory_refs,
                            .result = !present  ? RES_NOT_PRESENT
                                      : reserved ? RES_RESERVED
                                      : leaf     ? RES_PAGE
                                                 : RES_TABLE};
        if (!present || reserved) {
            if (npt_a)
                npt_guest_a_bits(m, r, w, wval, nw, es, two_d, record);
            report_guest_fault(m, a, r, level, present ? REASON_RESERVED : REASON_NOT_PRESENT, 0);
            return;
        }
        rwus &= e;
        xd = xd || (xd_on && (e & BIT(63)));
        wval[nw] = e;
        w[nw++] = (walked){.gpa = egpa, .hpa = ehpa, .table = table, .index = idx, .level = level,
                           .nleaf = no.leaf_level, .nperms = no.perms, .rights = (uint16_t)((rwus >> 1) | (xd << 2))};
        if (leaf) {
            page = GUEST_FN(x64, x86_64_page_addr(e, level), gf->page_addr(e, level));
            size = GUEST_FN(x64, x86_64_page_size(level), gf->page_size(level));
            break;
        }
        table = GUEST_FN(x64, x86_64_table_addr(e), gf->table_addr(e));
    }

    const bool rw = rwus & BIT(1), us = rwus & BIT(2);
    uint64_t code = 0;
    int why = GUEST_FN(x64, x86_rights_fault(s, a->op, a->user, rw, us, xd),
                       gf->access_fault(s, wval[nw - 1], a->op, a->user, rw, us, xd, &code));
    if (why >= 0) {
        if (npt_a)
            npt_guest_a_bits(m, r, w, wval, nw - 1, es, two_d, record);
        report_guest_fault(m, a, r, w[nw - 1].level, (enum vm_reason)why, code);
        return;
    }

    /* Accessed and dirty flags, top level first, once the access is known to be allowed. */
    for (int j = 0; j < nw && has_ad; j++) {
        uint64_t want = X86_A | (j == nw - 1 && a->op == OP_WRITE ? X86_D : 0);
        if ((wval[j] & want) == want)
            continue;   /* A/D only ever get set, so memory has them too */
        uint64_t cur = mem_read(&m->mem, w[j].hpa, es);
        uint64_t set = 0;
        if (!(cur & X86_A))
            set |= X86_A;
        if (j == nw - 1 && a->op == OP_WRITE && !(cur & X86_D))
            set |= X86_D;
        if (!set)
            continue;
        nested_req q = ad_write_req(m, w[j].level);
        bool blocked = two_d && (w[j].nperms & q.need) != q.need;
        vm_step *st = record ? record_step(r) : NULL;
        if (st)
            *st = (vm_step){.kind = STEP_AD_WRITE, .dim = DIM_GUEST, .level = (uint8_t)w[j].level,
                            .stage = (uint8_t)w[j].level, .gpa_valid = two_d, .gpa = w[j].gpa, .table = w[j].table,
                            .index = w[j].index, .entry_hpa = w[j].hpa, .entry = cur,
                            .ad_set = (uint8_t)(((set & X86_A) ? 1 : 0) | ((set & X86_D) ? 2 : 0)),
                            .result = blocked ? RES_BLOCKED : RES_WRITTEN};
        r->ad_writes++;
        if (blocked) {
            nested_fault(m, r, &q, w[j].gpa, w[j].nleaf, REASON_PERMISSION, 0, w[j].nperms);
            return;
        }
        mem_write_existing(&m->mem, w[j].hpa, es, cur | set);
    }

    r->gpa = page | (a->gva & (size - 1));
    r->gpa_valid = true;
    r->guest_page_size = size;
    if (two_d) {
        nested_req q = final_req(m, a->op);
        nested_out no;
        if (!nested_walk(m, r, r->gpa, &q, &no))
            return;
        r->hpa = no.hpa;
        r->nested_page_size = no.page_size;
        final_perms = no.perms;
    } else {
        r->hpa = r->gpa;
    }
    r->hpa_valid = true;
    r->outcome = OUT_OK;
    if (m->gpwc && !from_level)
        for (int j = 0; j < nw - 1; j++)
            cache_fill(m->gpwc, gpwc_key(gf, a->gva, w[j].level), m->s->pcid ? m->asid : 0,
                       GUEST_FN(x64, x86_64_table_addr(wval[j]), gf->table_addr(wval[j])), 0, w[j].rights);
    if (m->tlb) {
        uint64_t tsize = size;
        if (two_d && r->nested_page_size && r->nested_page_size < tsize)
            tsize = r->nested_page_size;    /* a large guest page on small nested pages splinters */
        tlb_insert(m, a, r->gpa, r->hpa, tsize, tlb_rights(m, wval[nw - 1], rw, us, xd, final_perms));
    }
}

static void guest_walk_x86_64(machine *m, const vm_access *a, vm_result *r)
{
    guest_walk(m, a, r, true, false, 0, 0, 0);
}

static void guest_walk_x86_64_traced(machine *m, const vm_access *a, vm_result *r)
{
    guest_walk(m, a, r, true, true, 0, 0, 0);
}

static void guest_walk_generic(machine *m, const vm_access *a, vm_result *r)
{
    guest_walk(m, a, r, false, r->record, 0, 0, 0);
}

void walk_guest(machine *m, const vm_access *a, vm_result *r)
{
    if (m->s->paging == PAGING_4LEVEL || m->s->paging == PAGING_5LEVEL) {
        if (r->record)
            guest_walk_x86_64_traced(m, a, r);
        else
            guest_walk_x86_64(m, a, r);
    } else
        guest_walk_generic(m, a, r);
}

/* Agile paging's 2-D part (x86-64 guests only): the guest's tables from level `level`
 * down, each entry's gpa through the nested walk, then the final nested walk. */
void walk_guest_from(machine *m, const vm_access *a, vm_result *r, int level, uint64_t table, uint64_t rights)
{
    guest_walk(m, a, r, true, r->record, level, table, rights);
}

/* mov cr3 and guest page-table writes in a mode without a VMM in the way. */
void walk_event(machine *m, const vm_access *a, vm_result *r)
{
    if (a->op == OP_PTE_WRITE)
        walk_pte_write(m, a, r);
    else
        walk_cache_event(m, a, r);
}

void tlb_insert(machine *m, const vm_access *a, uint64_t gpa, uint64_t hpa, uint64_t size, uint16_t rights)
{
    uint32_t sh = (uint32_t)__builtin_ctzll(size);
    m->tlb_shifts |= 1u << sh;
    /* Without any A/D bits to set (Sunway guests, EPT A/D off) a write never needs a walk. */
    bool no_dirty_bits = !m->gf->has_ad && !(m->nf && nested_ad_on(m));
    cache_fill(m->tlb, ((uint64_t)sh << 58) | (a->gva >> sh), tlb_tag(m), hpa & ~(size - 1), gpa & ~(size - 1),
               (uint16_t)(rights | (a->op == OP_WRITE || no_dirty_bits ? TLB_DIRTY : 0)));
}

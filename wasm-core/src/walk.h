/* The walker the modes share (walk.c): the guest walk, 1-D or 2-D, from the root or
 * from a level below it; the nested walks (EPT, NPT, on demand, the nested TLB); the
 * TLB; guest faults; the address-space and invalidation events of a machine with no VMM
 * in the way. Every mode's file includes this, and walk.c calls into no mode: the
 * modes sit above it (docs/model.md, "Adding a mode"). */
#ifndef VMSIM_WALK_H
#define VMSIM_WALK_H

#include "model.h"
#include "cache.h"

/* What a nested walk is for: the permission it needs and how a fault reports it. */
typedef struct nested_req {
    unsigned need;          /* PERM_* bits the combined entries must grant */
    bool write;             /* sets the dirty bit of the leaf (when A/D are on) */
    bool final;             /* the access's own gpa (vs a guest paging-structure access) */
    int stage;              /* guest level whose entry is being located, 0 = final */
    uint64_t qual_access;   /* EPT exit qualification bits 2:0 */
    uint64_t npt_err;       /* NPT EXITINFO1 bits W (1) and I/D (4) */
} nested_req;

typedef struct nested_out {
    uint64_t hpa, page_size;
    unsigned perms;         /* combined over the entries walked */
    int leaf_level;
} nested_out;

/* The next step of the trace, or NULL when the caller did not ask for steps (or the
 * trace is full): the walk then skips filling it in. */
static inline vm_step *record_step(vm_result *r)
{
    if (r->record && r->nsteps < VM_MAX_STEPS)
        return &r->steps[r->nsteps++];
    return NULL;
}

#define TLB_DIRTY 0x40u

static inline uint32_t tlb_tag(const machine *m)
{
    return (m->s->pcid ? m->asid : 0) | (m->eptp_index << 16);
}

/* A TLB lookup before any walk: a hit answers the access (translate.c). */
static inline bool tlb_lookup(machine *m, const vm_access *a, vm_result *r)
{
    r->tlb_hit = 0;
    uint32_t tag = tlb_tag(m);
    for (uint32_t shifts = m->tlb_shifts & (uint32_t)bits_range(30, 12); shifts; shifts &= shifts - 1) {
        uint32_t sh = (uint32_t)__builtin_ctz(shifts);     /* each page size present, smallest first */
        cache_line *c = cache_find(m->tlb, ((uint64_t)sh << 58) | (a->gva >> sh), tag);
        if (!c)
            continue;
        if (!(c->aux & (1u << (a->op * 2 + a->user))) || (a->op == OP_WRITE && !(c->aux & TLB_DIRTY)))
            return false;   /* walk again: it sets D, or it faults */
        uint64_t off = a->gva & ((1ull << sh) - 1);
        r->tlb_hit = 1;
        r->outcome = OUT_OK;
        r->gpa_valid = r->hpa_valid = true;
        r->gpa = c->value2 + off;
        r->hpa = c->value + off;
        r->guest_page_size = r->nested_page_size = 0;
        if (r->record && r->nsteps < VM_MAX_STEPS)
            r->steps[r->nsteps++] = (vm_step){.kind = STEP_TLB_HIT, .dim = DIM_GUEST, .level = 1, .stage = 0,
                                              .gpa_valid = machine_two_d(m), .gpa = r->gpa, .table = 0,
                                              .entry = c->value, .result = RES_PAGE};
        return true;
    }
    return false;
}


/* The nested walker of m->nf for the mode's build: the format's walk, or the on-demand
 * one (nested.on_demand). */
void walk_nested_setup(machine *m);
/* The guest walk from CR3 (and the nested walk of each gpa it touches in a 2-D mode):
 * the translate operation of native, ept, npt and flat. */
void walk_guest(machine *m, const vm_access *a, vm_result *r);
/* The same from a guest level below the root, with the rights of the levels above
 * (agile paging's nested part; level 0: from CR3, walk cache included). */
void walk_guest_from(machine *m, const vm_access *a, vm_result *r, int level, uint64_t table, uint64_t rights);
/* mov cr3 and guest page-table writes with no VMM in the way (the event operation of
 * native, ept, npt and flat); walk_cache_event: mov cr3 and invlpg alone;
 * walk_pte_write: the guest's store to its entry, then its invlpg. */
void walk_event(machine *m, const vm_access *a, vm_result *r);
void walk_cache_event(machine *m, const vm_access *a, vm_result *r);
void walk_pte_write(machine *m, const vm_access *a, vm_result *r);

void pae_load_pdptes(machine *m);
void switch_address_space(machine *m, uint32_t as);
bool guest_entry_addr(machine *m, uint64_t gva, int level, uint64_t *egpa, uint64_t *hpa);
void report_guest_fault(const machine *m, const vm_access *a, vm_result *r, int level, enum vm_reason reason,
                        uint64_t code);
uint16_t tlb_rights(const machine *m, uint64_t leaf, bool rw, bool us, bool xd, unsigned nperms);
void tlb_insert(machine *m, const vm_access *a, uint64_t gpa, uint64_t hpa, uint64_t size, uint16_t rights);

#endif

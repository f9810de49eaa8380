/* What shadow paging and agile paging share (vmm.c): the VMM's shadow tables (a root per
 * address space, frames from shadow.table_base), the guest page-table frames it
 * write-protects, its exits and their counts, zapping stale shadow entries, and the
 * prefill of the tables built in advance. Both modes' files include this; vmm.c calls
 * neither of them. */
#ifndef VMSIM_VMM_H
#define VMSIM_VMM_H

#include "walk.h"

/* The kinds of exit the VMM counts (machine.exit_counts). */
enum { EXIT_HIDDEN_PF, EXIT_PT_WRITE, EXIT_CR3_WRITE, EXIT_REFLECTED };

static inline void vmm_step(vm_result *r, vm_step st)
{
    if (r->record && r->nsteps < VM_MAX_STEPS)
        r->steps[r->nsteps++] = st;
}

/* The shadow table's format: the guest's for 4- and 5-level guests, PAE for 32-bit and
 * PAE guests (shadow.c). */
static inline bool pae_shadow(const machine *m)
{
    return m->s->paging == PAGING_PAE || m->s->paging == PAGING_32BIT;
}

/* Levels of the shadow table, the top one included (PAE: the PDPT). */
static inline int shadow_top(const machine *m)
{
    return pae_shadow(m) ? 3 : m->gf->levels;
}

static inline uint32_t shadow_index(const machine *m, uint64_t gva, int level)
{
    if (!pae_shadow(m))
        return m->gf->index(gva, level);
    return level == 3 ? (uint32_t)(gva >> 30) & 3u : (uint32_t)(gva >> (12 + 9 * (level - 1))) & 511u;
}

/* log2 of the bytes one entry at `level` maps: in the guest's format, and in the shadow's. */
static inline int guest_shift(const guest_format *gf, int level)
{
    return gf->page_shift + gf->index_bits * (level - 1);
}

static inline int shadow_shift(const machine *m, int level)
{
    return pae_shadow(m) ? 12 + 9 * (level - 1) : guest_shift(m->gf, level);
}

/* The shadow-table pointers a hardware walk read, held until the walk has succeeded:
 * the page-walk cache is filled after a successful walk only, in every mode
 * (docs/model.md 1, "Caches": a walk that faults leaves no entry behind). */
typedef struct pwc_pending {
    int n;
    uint64_t key[5], table[5];
} pwc_pending;

static inline void pwc_pending_fill(machine *m, const pwc_pending *p, uint32_t tag)
{
    for (int i = 0; m->gpwc && i < p->n; i++)
        cache_fill(m->gpwc, p->key[i], tag, p->table[i], 0, 7);
}

/* The MMU's walk of the shadow table (vmm_walk.c): at a shadow leaf, the host address
 * and the leaf; at a switching entry (agile paging), the guest level the walk goes on
 * from, that table's gpa and the rights combined above; and the shadow pointers it read,
 * for the page-walk cache once the whole walk has succeeded. */
typedef struct vmm_hw {
    uint64_t hpa, leaf;
    int level;
    uint64_t table, rights;
    pwc_pending fills;
} vmm_hw;
/* The walk cache's key shift for the shadow table (mode_ops.gpwc_shift): 9 bits a level,
 * in the guest's format, or PAE's where the guest's is 32-bit. */
int vmm_gpwc_shift(const machine *m, int level);
/* 0 at a shadow leaf, 1 at a switching entry, -1 on a hidden page fault (a missing entry,
 * or rights the shadow leaf does not grant yet). */
int vmm_hw_walk(machine *m, const vm_access *a, vm_result *r, vmm_hw *w);
/* A walk that ended at a shadow leaf: the walk cache filled, the result, the TLB. */
void vmm_hw_done(machine *m, const vm_access *a, vm_result *r, const vmm_hw *w);

/* What the VMM's walk of the guest's tables found: the rights combined over the entries
 * it read; at the guest's leaf, the leaf, the gpa reached, the page's size and the host
 * address of the gpa's 4 KiB; stopped at a switching level (size 0), that level's table. */
typedef struct vmm_gwalk {
    bool rw, us, xd;
    uint64_t leaf, gpa, size, data_hpa;
    uint64_t table;
} vmm_gwalk;
/* The VMM's side of a hidden page fault, in software: the guest's tables for a->gva from
 * CR3 down to its leaf, or down to guest level `stop` (not read; 0: to the leaf); the
 * guest's A/D bits set as the MMU would have, the tables read write-protected. False when
 * the access ends here: a reflected #PF, or a gpa the VMM has no memory for. */
bool vmm_guest_walk(machine *m, const vm_access *a, vm_result *r, int stop, vmm_gwalk *w);
/* The shadow path for gva down to `level` (tables allocated as needed; a switching entry
 * in the way becomes a table), then `spte` written there. False when no frame is left. */
bool vmm_shadow_write(machine *m, vm_result *r, uint64_t gva, int level, uint64_t spte);
/* The 4 KiB shadow leaf for a walk that reached the guest's leaf: the combined rights,
 * writable only once the guest entry is dirty and the frame is no guest table. */
bool vmm_shadow_leaf(machine *m, const vm_access *a, vm_result *r, const vmm_gwalk *w);

/* The shadow roots and the write-protection set; vmm_free undoes it. */
bool vmm_build(machine *m, char *err, size_t errlen);
void vmm_free(machine *m);
bool vmm_wp_contains(const machine *m, uint64_t gfn);
void vmm_wp_add(machine *m, uint64_t gfn);
bool vmm_alloc_frame(machine *m, uint64_t *hpa);
/* A VM exit of kind `why` (a reflected #PF ends the exit it came in, and is not another). */
void vmm_exit(machine *m, vm_result *r, int why);
/* The shadow entries that stood for the guest's level-`level` entry of gva, in every
 * address space, and the TLB and walk cache with them. */
void vmm_zap(machine *m, uint64_t gva, int level);
/* shadow.prefill and agile.prefill: `fill` for every 4 KiB piece of every mapping. */
bool vmm_prefill(machine *m, bool (*fill)(machine *, const vm_access *, vm_result *), const char *what,
                 char *err, size_t errlen);
/* The result's "shadow" object up to its last field: the exit counts and the shadow
 * tables' size (the mode adds its own fields and closes it). */
void vmm_summary(struct strbuf *sb, const machine *m);

#endif

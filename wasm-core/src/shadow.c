/* Shadow paging (KVM with ept=0, early VMware): the VMM keeps, per guest address space,
 * a shadow table gva -> hpa in the guest's own format, and the MMU walks that one table
 * (a 1-D walk). The VMM builds it lazily: a missing or too-strict shadow entry is a
 * hidden page fault, a VM exit in which the VMM walks the guest tables in software,
 * reflects a genuine guest #PF into the guest, or else sets the guest's A/D bits, fills
 * the shadow path and write-protects every guest page-table page it walked. A write to
 * such a page exits (pt_write): the VMM emulates it and zaps the stale shadow entry.
 * mov cr3 exits unless the target is one of the VMX CR3-target values or in the 2007
 * paravirtual guest_cr3 -> host_cr3 cache. Shadow entries map 4 KiB: a large guest
 * page is shadowed a 4 KiB piece at a time, and a page stays read-only in the shadow
 * until the guest's dirty bit is set (dirty tracking by write protection).
 * The shadow table has the guest's format for 4- and 5-level guests. 32-bit and PAE
 * guests get a PAE-format shadow (KVM keeps CR4.PAE set while it shadows them): four
 * PDPTEs, loaded into registers at VM entry, then a directory and a table of 8-byte
 * entries, so a 32-bit guest's 4 MiB directory entry is shadowed by two 2 MiB ones. */
#include "model.h"
#include "cache.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { EXIT_HIDDEN_PF, EXIT_PT_WRITE, EXIT_CR3_WRITE, EXIT_REFLECTED };

static uint32_t gfn_hash(uint64_t gfn, uint32_t cap)
{
    return (uint32_t)((gfn * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

static bool wp_contains(const machine *m, uint64_t gfn)
{
    for (uint32_t i = gfn_hash(gfn, m->wp_cap); m->wp_gfns[i]; i = (i + 1) & (m->wp_cap - 1))
        if (m->wp_gfns[i] == gfn + 1)
            return true;
    return false;
}

static void wp_add(machine *m, uint64_t gfn)
{
    if (wp_contains(m, gfn) || m->wp_count * 2 >= m->wp_cap)
        return;
    uint32_t i = gfn_hash(gfn, m->wp_cap);
    while (m->wp_gfns[i])
        i = (i + 1) & (m->wp_cap - 1);
    m->wp_gfns[i] = gfn + 1;
    m->wp_count++;
}

static bool shadow_alloc(machine *m, uint64_t *hpa)
{
    *hpa = m->s->shadow_table_base + (uint64_t)m->shadow_frames * FRAME_SIZE;
    if (!mem_frame_create(&m->mem, *hpa))
        return false;
    m->shadow_frames++;
    return true;
}

bool shadow_build(machine *m, char *err, size_t errlen)
{
    m->wp_cap = 1u << 16;
    m->wp_gfns = calloc(m->wp_cap, sizeof *m->wp_gfns);
    if (!m->wp_gfns) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    for (uint32_t i = 0; i < m->s->address_spaces; i++) {
        if (!shadow_alloc(m, &m->sroot[i])) {
            snprintf(err, errlen, "no room for shadow tables at shadow.table_base");
            return false;
        }
    }
    return true;
}

static bool vmm_fill(machine *m, const vm_access *a, vm_result *r);

/* shadow.prefill and agile.prefill: the VMM runs its fill for each 4 KiB piece of each
 * guest mapping, in every address space, as a hidden page fault would for a write (a read
 * where the mapping is read-only), before the first access; the exits it took are not
 * counted. `what` names the scenario key in an error. */
bool vmm_prefill(machine *m, bool (*fill)(machine *, const vm_access *, vm_result *), const char *what,
                 char *err, size_t errlen)
{
    vm_result *r = malloc(sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    bool ok = true;
    for (uint32_t as = 0; as < m->s->address_spaces && ok; as++) {
        switch_address_space(m, as);
        for (uint32_t i = 0; i < m->s->n_gmaps && ok; i++) {
            const guest_map *g = &m->s->gmaps[i];
            uint64_t bytes = page_bytes(g->page) * g->pages;
            for (uint64_t off = 0; off < bytes && ok; off += 4096) {
                vm_access a = {.gva = g->gva + off, .op = g->writable ? OP_WRITE : OP_READ, .user = g->user};
                memset(r, 0, offsetof(vm_result, steps));
                if (!fill(m, &a, r)) {
                    snprintf(err, errlen, "%s: gva 0x%llx does not translate (%s)", what,
                             (unsigned long long)a.gva, outcome_names[r->outcome]);
                    ok = false;
                }
            }
        }
    }
    switch_address_space(m, 0);
    memset(m->exit_counts, 0, sizeof m->exit_counts);
    free(r);
    return ok;
}

/* shadow.prefill: the shadow tables as the VMM leaves them once the guest has touched
 * every mapped page, each 4 KiB piece filled as a hidden page fault would (a write where
 * the mapping is writable, so the guest's A and D bits are set and the shadow entry is
 * writable), in every address space; no exit is counted and the caches stay empty. */
bool shadow_prefill(machine *m, char *err, size_t errlen)
{
    return vmm_prefill(m, vmm_fill, "shadow.prefill", err, errlen);
}

void shadow_free(machine *m)
{
    free(m->wp_gfns);
    m->wp_gfns = NULL;
}

static bool pae_shadow(const machine *m)
{
    return m->s->paging == PAGING_PAE || m->s->paging == PAGING_32BIT;
}

/* Levels of the shadow table, the top one included (PAE: the PDPT). */
static int shadow_top(const machine *m)
{
    return pae_shadow(m) ? 3 : m->gf->levels;
}

static uint32_t shadow_index(const machine *m, uint64_t gva, int level)
{
    if (!pae_shadow(m))
        return m->gf->index(gva, level);
    return level == 3 ? (uint32_t)(gva >> 30) & 3u : (uint32_t)(gva >> (12 + 9 * (level - 1))) & 511u;
}

/* log2 of the bytes one entry at `level` maps: in the guest's format, and in the shadow's. */
static int guest_shift(const guest_format *gf, int level)
{
    return gf->page_shift + gf->index_bits * (level - 1);
}

int shadow_shift(const machine *m, int level)
{
    return pae_shadow(m) ? 12 + 9 * (level - 1) : guest_shift(m->gf, level);
}

static uint64_t shadow_pwc_key(const machine *m, uint64_t gva, int level)
{
    return ((uint64_t)level << 58) | (gva >> shadow_shift(m, level));
}

static void step(vm_result *r, vm_step st)
{
    if (r->record && r->nsteps < VM_MAX_STEPS)
        r->steps[r->nsteps++] = st;
}

static void vm_exit(machine *m, vm_result *r, int why)
{
    static const uint8_t res[] = {RES_HIDDEN_PF, RES_PT_WRITE, RES_CR3_WRITE, RES_REFLECTED};
    if (why != EXIT_REFLECTED)  /* reflecting a #PF is the end of the same exit, not another one */
        r->exits++;
    m->exit_counts[why]++;
    step(r, (vm_step){.kind = STEP_VMEXIT, .dim = DIM_NESTED, .level = 1, .result = res[why]});
}

/* The hardware walk of the shadow table: returns true with hpa, or false on a hidden
 * page fault (a missing entry, or rights the shadow entry does not grant yet). */
static bool hw_walk(machine *m, const vm_access *a, vm_result *r, uint64_t *hpa, uint64_t *leaf)
{
    uint64_t table = m->sroot[m->asid];
    int top = pae_shadow(m) ? 2 : m->gf->levels;
    uint32_t tag = m->s->pcid ? m->asid : 0;
    if (pae_shadow(m)) {
        /* The shadow PDPTEs are registers, loaded at VM entry: no memory reference. */
        uint32_t idx = shadow_index(m, a->gva, 3);
        uint64_t e = mem_read(&m->mem, table + 8u * idx, 8);
        step(r, (vm_step){.kind = STEP_PDPTE, .dim = DIM_NESTED, .level = 3, .table = table, .index = idx,
                          .entry_hpa = table + 8u * idx, .entry = e, .result = (e & 1) ? RES_TABLE : RES_NOT_PRESENT});
        if (!(e & 1))
            return false;
        table = e & bits_range(51, 12);
    }
    /* The MMU's page-walk cache works on the shadow table as on any 1-D table. */
    for (int l = 2; m->gpwc && l <= top; l++) {
        cache_line *c = cache_find(m->gpwc, shadow_pwc_key(m, a->gva, l), tag);
        if (c) {
            table = c->value;
            top = l - 1;
            r->pwc_hits++;
            step(r, (vm_step){.kind = STEP_PWC_HIT, .dim = DIM_NESTED, .level = (uint8_t)l, .table = table,
                              .entry = table, .result = RES_TABLE});
            break;
        }
    }
    for (int level = top; level >= 1; level--) {
        uint32_t idx = shadow_index(m, a->gva, level);
        uint64_t ea = table + 8u * idx;
        uint64_t e = mem_read(&m->mem, ea, 8);
        dc_ref(m, ea);
        r->memory_refs++;
        r->nested_refs++;
        bool present = e & 1;
        step(r, (vm_step){.kind = STEP_READ, .dim = DIM_NESTED, .level = (uint8_t)level, .stage = 0, .table = table,
                          .index = idx, .entry_hpa = ea, .entry = e, .ref = (uint16_t)r->memory_refs,
                          .result = !present ? RES_NOT_PRESENT : level == 1 ? RES_PAGE : RES_TABLE});
        if (!present)
            return false;
        if (level == 1) {
            uint64_t code;
            if (x86_access_fault(m->s, e, a->op, a->user, e & BIT(1), e & BIT(2), e & BIT(63), &code) >= 0)
                return false;
            *hpa = (e & bits_range(51, 12)) | (a->gva & 0xFFF);
            *leaf = e;
            return true;
        }
        table = e & bits_range(51, 12);
        if (m->gpwc)
            cache_fill(m->gpwc, shadow_pwc_key(m, a->gva, level), tag, table, 0, 7);
    }
    return false;
}

/* The VMM's side of a hidden page fault. Returns false when the access ends here (a
 * reflected #PF or an unmapped gpa). */
static bool vmm_fill(machine *m, const vm_access *a, vm_result *r)
{
    const scenario *s = m->s;
    const guest_format *gf = m->gf;
    int es = gf->entry_size;
    uint64_t table = m->cr3, ehpa[5], eval[5], tgfn[5];
    int levels[5], nw = 0;
    bool rw = true, us = true, xd = false;
    uint64_t page = 0, size = 0;
    if (s->paging == PAGING_PAE) {
        /* The guest's PDPTEs as its last mov cr3 loaded them (the VMM keeps them too). */
        uint32_t idx = gf->index(a->gva, 3);
        uint64_t e = m->pdpte[idx];
        step(r, (vm_step){.kind = STEP_PDPTE, .dim = DIM_GUEST, .level = 3, .stage = 3, .gpa_valid = true,
                          .gpa = (m->cr3 & 0xFFFFFFE0u) + 8u * idx, .table = m->cr3 & 0xFFFFFFE0u, .index = idx,
                          .entry_hpa = m->pdpte_hpa[idx], .entry = e, .result = (e & 1) ? RES_TABLE : RES_NOT_PRESENT});
        if (!(e & 1)) {
            vm_exit(m, r, EXIT_REFLECTED);
            report_guest_fault(m, a, r, 3, REASON_NOT_PRESENT, 0);
            return false;
        }
        table = gf->table_addr(e);
    }
    for (int level = gf->levels; level >= 1; level--) {
        uint64_t egpa = table + (uint64_t)es * gf->index(a->gva, level), hpa;
        if (!nested_lookup(m, egpa, &hpa)) {
            r->outcome = OUT_SHADOW_UNMAPPED;
            r->fault = (vm_fault){.dim = DIM_GUEST, .level = (uint8_t)level, .stage = (uint8_t)level,
                                  .reason = REASON_UNMAPPED, .fault_gpa = egpa};
            return false;
        }
        uint64_t e = mem_read(&m->mem, hpa, es);
        bool leaf = gf->is_leaf(s, e, level);
        bool reserved = (e & 1) && gf->reserved(s, e, level, leaf);
        step(r, (vm_step){.kind = STEP_VMM_READ, .dim = DIM_GUEST, .level = (uint8_t)level, .stage = (uint8_t)level,
                          .gpa_valid = true, .gpa = egpa, .table = table, .index = gf->index(a->gva, level),
                          .entry_hpa = hpa, .entry = e,
                          .result = !(e & 1) ? RES_NOT_PRESENT : reserved ? RES_RESERVED : leaf ? RES_PAGE : RES_TABLE});
        if (!(e & 1) || reserved) {
            vm_exit(m, r, EXIT_REFLECTED);
            report_guest_fault(m, a, r, level, (e & 1) ? REASON_RESERVED : REASON_NOT_PRESENT, 0);
            return false;
        }
        rw = rw && (e & BIT(1));
        us = us && (e & BIT(2));
        if (gf->has_xd && s->efer_nxe && (e & BIT(63)))
            xd = true;
        ehpa[nw] = hpa;
        eval[nw] = e;
        tgfn[nw] = table >> 12;
        levels[nw++] = level;
        if (leaf) {
            page = gf->page_addr(e, level);
            size = gf->page_size(level);
            break;
        }
        table = gf->table_addr(e);
    }
    uint64_t code = 0;
    int why = gf->access_fault(s, eval[nw - 1], a->op, a->user, rw, us, xd, &code);
    if (why >= 0) {
        vm_exit(m, r, EXIT_REFLECTED);
        report_guest_fault(m, a, r, levels[nw - 1], (enum vm_reason)why, code);
        return false;
    }
    /* The VMM does what the MMU would have: the guest's accessed and dirty bits. */
    for (int j = 0; j < nw; j++) {
        uint64_t set = (eval[j] & BIT(5)) ? 0 : BIT(5);
        if (j == nw - 1 && a->op == OP_WRITE && !(eval[j] & BIT(6)))
            set |= BIT(6);
        if (set) {
            eval[j] |= set;
            mem_write_existing(&m->mem, ehpa[j], es, eval[j]);
            r->ad_writes++;
        }
        wp_add(m, tgfn[j]);
    }
    uint64_t gpa = page | (a->gva & (size - 1)), data_hpa;
    if (!nested_lookup(m, gpa & ~0xFFFull, &data_hpa)) {
        r->outcome = OUT_SHADOW_UNMAPPED;
        r->fault = (vm_fault){.dim = DIM_NESTED, .level = 1, .stage = 0, .reason = REASON_UNMAPPED, .fault_gpa = gpa};
        return false;
    }
    /* The shadow path: tables as needed, then a 4 KiB leaf with the combined rights;
     * writable only once the guest entry is dirty and the frame is no guest table. */
    uint64_t stable = m->sroot[m->asid];
    for (int level = shadow_top(m); level > 1; level--) {
        uint64_t ea = stable + 8u * shadow_index(m, a->gva, level);
        uint64_t e = mem_read(&m->mem, ea, 8);
        if (!(e & 1)) {
            uint64_t t;
            if (!shadow_alloc(m, &t)) {
                r->outcome = OUT_SHADOW_UNMAPPED;
                r->fault = (vm_fault){.dim = DIM_NESTED, .level = (uint8_t)level, .reason = REASON_UNMAPPED};
                return false;
            }
            e = t | (level == 3 && pae_shadow(m) ? 0x1 : 0x7);   /* PDPTE bits 2:1 are reserved */
            mem_write_existing(&m->mem, ea, 8, e);
        }
        stable = e & bits_range(51, 12);
    }
    bool writable = rw && (eval[nw - 1] & BIT(6)) && !wp_contains(m, gpa >> 12);
    uint64_t spte = (data_hpa & bits_range(51, 12)) | 1 | (writable ? BIT(1) : 0) | (us ? BIT(2) : 0) |
                    (xd ? BIT(63) : 0);
    uint64_t ea = stable + 8u * shadow_index(m, a->gva, 1);
    mem_write_existing(&m->mem, ea, 8, spte);
    step(r, (vm_step){.kind = STEP_VMM_FILL, .dim = DIM_NESTED, .level = 1, .table = stable,
                      .index = shadow_index(m, a->gva, 1), .entry_hpa = ea, .entry = spte, .result = RES_WRITTEN});
    r->gpa = gpa;
    r->gpa_valid = true;
    r->guest_page_size = size;
    return true;
}

void shadow_translate(machine *m, const vm_access *a, vm_result *r)
{
    uint64_t hpa, leaf;
    if (!hw_walk(m, a, r, &hpa, &leaf)) {
        vm_exit(m, r, EXIT_HIDDEN_PF);
        if (!vmm_fill(m, a, r))
            return;
        if (!hw_walk(m, a, r, &hpa, &leaf)) {   /* cannot happen after a fill; report it as unmapped */
            r->outcome = OUT_SHADOW_UNMAPPED;
            return;
        }
    }
    r->hpa = hpa;
    r->hpa_valid = true;
    r->outcome = OUT_OK;
    if (m->tlb)
        tlb_insert(m, a, r->gpa_valid ? r->gpa : 0, hpa, 4096,
                   tlb_rights(m, leaf, leaf & BIT(1), leaf & BIT(2), leaf & BIT(63), PERM_R | PERM_W | PERM_X | PERM_U));
}

/* Zaps, in every address space's shadow table, the shadow entries that stood for the
 * guest's level-`level` entry of gva: one entry where the formats match; under a PAE
 * shadow a 32-bit guest's directory entry (4 MiB) stood for two shadow ones (2 MiB). */
static void zap(machine *m, uint64_t gva, int level)
{
    uint64_t span = 1ull << guest_shift(m->gf, level);
    int sl = level;
    while (sl > 1 && shadow_shift(m, sl) > guest_shift(m->gf, level))
        sl--;
    uint64_t base = gva & ~(span - 1);
    for (uint64_t va = base; va - base < span; va += 1ull << shadow_shift(m, sl)) {
        for (uint32_t as = 0; as < m->s->address_spaces; as++) {
            uint64_t table = m->sroot[as];
            for (int l = shadow_top(m); l >= sl; l--) {
                uint64_t ea = table + 8u * shadow_index(m, va, l);
                uint64_t e = mem_read(&m->mem, ea, 8);
                if (!(e & 1))
                    break;
                if (l == sl) {
                    mem_write_existing(&m->mem, ea, 8, 0);
                    break;
                }
                table = e & bits_range(51, 12);
            }
        }
    }
    if (m->tlb)
        cache_flush(m->tlb);
    if (m->gpwc)
        cache_flush(m->gpwc);
}

/* The guest writes one of its page-table entries (the level-`level` entry of gva). */
void shadow_event(machine *m, const vm_access *a, vm_result *r)
{
    r->outcome = OUT_OK;
    if (a->op == OP_MOV_CR3) {
        uint32_t as = a->eptp_index;
        bool free_switch = as < m->s->cr3_targets;
        if (!free_switch && m->s->pv_cr3_cache) {
            for (uint32_t i = 0; i < m->pv_n; i++)
                if (m->pv_cache[i] == as) {
                    memmove(&m->pv_cache[1], &m->pv_cache[0], i * sizeof m->pv_cache[0]);
                    m->pv_cache[0] = as;
                    free_switch = true;
                    break;
                }
        }
        if (!free_switch) {
            vm_exit(m, r, EXIT_CR3_WRITE);
            if (m->s->pv_cr3_cache) {
                uint32_t n = m->pv_n < 4 ? m->pv_n + 1 : 4;
                memmove(&m->pv_cache[1], &m->pv_cache[0], (n - 1) * sizeof m->pv_cache[0]);
                m->pv_cache[0] = as;
                m->pv_n = n;
            }
        }
        switch_address_space(m, as);
        return;
    }
    /* OP_PTE_WRITE */
    int es = m->gf->entry_size;
    uint64_t egpa, hpa;
    if (!guest_entry_addr(m, a->gva, (int)a->eptp_index, &egpa, &hpa))
        return;     /* nothing to write at that level: the guest would write elsewhere */
    bool seen = wp_contains(m, egpa >> 12);
    if (seen)
        vm_exit(m, r, EXIT_PT_WRITE);   /* the page is write-protected: exit, emulate, resync */
    uint64_t e = mem_read(&m->mem, hpa, es);
    mem_write_existing(&m->mem, hpa, es, (e & ~a->clear) | a->set);
    if (!seen)
        return;     /* the VMM never walked this frame: no shadow entry came from it, and it
                       does not see the write (zapping here zapped other address spaces' entries) */
    if (m->s->paging == PAGING_PAE && a->eptp_index == 3)
        return;     /* a PDPT write takes effect at the next mov cr3, which reloads the PDPTEs */
    zap(m, a->gva, (int)a->eptp_index);
}

/* What agile paging (agile.c) shares with shadow paging: the write-protected frames,
 * the shadow frame allocator, the exits and the zapping of stale shadow entries. */
bool shadow_wp_contains(const machine *m, uint64_t gfn)
{
    return wp_contains(m, gfn);
}

void shadow_wp_add(machine *m, uint64_t gfn)
{
    wp_add(m, gfn);
}

bool shadow_alloc_frame(machine *m, uint64_t *hpa)
{
    return shadow_alloc(m, hpa);
}

void shadow_exit(machine *m, vm_result *r, int why)
{
    vm_exit(m, r, why);
}

void shadow_zap(machine *m, uint64_t gva, int level)
{
    zap(m, gva, level);
}

/* The two walks shadow paging (shadow.c) and agile paging (agile.c) share: the MMU's walk
 * of the VMM's shadow table, and the VMM's side of a hidden page fault (its walk of the
 * guest's tables in software, the guest's A/D bits, the shadow path it fills). Agile
 * paging's switching entry is one more outcome of both: a shadow entry with bit 11 that
 * hands the walk to the guest's own table below it (docs/model.md 1, "Agile paging");
 * shadow paging never writes one. See vmm.h. */
#include "vmm.h"

/* The page-walk cache's key for the shadow table's level-`level` entry of gva. */
static uint64_t shadow_pwc_key(const machine *m, uint64_t gva, int level)
{
    return ((uint64_t)level << 58) | (gva >> shadow_shift(m, level));
}

int vmm_gpwc_shift(const machine *m, int level)
{
    return shadow_shift(m, level);
}

int vmm_hw_walk(machine *m, const vm_access *a, vm_result *r, vmm_hw *w)
{
    w->fills.n = 0;
    uint64_t table = m->sroot[m->asid];
    int top = pae_shadow(m) ? 2 : m->gf->levels;
    uint32_t tag = m->s->pcid ? m->asid : 0;
    if (pae_shadow(m)) {
        /* The shadow PDPTEs are registers, loaded at VM entry: no memory reference. */
        uint32_t idx = shadow_index(m, a->gva, 3);
        uint64_t e = mem_read(&m->mem, table + 8u * idx, 8);
        vmm_step(r, (vm_step){.kind = STEP_PDPTE, .dim = DIM_NESTED, .level = 3, .table = table, .index = idx,
                          .entry_hpa = table + 8u * idx, .entry = e, .result = (e & 1) ? RES_TABLE : RES_NOT_PRESENT});
        if (!(e & 1))
            return -1;
        table = e & bits_range(51, 12);
    }
    /* The MMU's page-walk cache works on the shadow table as on any 1-D table; it holds
     * shadow table pointers, never a switching entry's gpa. */
    for (int l = 2; m->gpwc && l <= top; l++) {
        cache_line *c = cache_find(m->gpwc, shadow_pwc_key(m, a->gva, l), tag);
        if (c) {
            table = c->value;
            top = l - 1;
            r->pwc_hits++;
            vmm_step(r, (vm_step){.kind = STEP_PWC_HIT, .dim = DIM_NESTED, .level = (uint8_t)l, .table = table,
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
        vmm_step(r, (vm_step){.kind = STEP_READ, .dim = DIM_NESTED, .level = (uint8_t)level, .stage = 0, .table = table,
                          .index = idx, .entry_hpa = ea, .entry = e, .ref = (uint16_t)r->memory_refs,
                          .result = !present ? RES_NOT_PRESENT : level == 1 ? RES_PAGE : RES_TABLE});
        if (!present)
            return -1;
        if (level > 1 && (e & AGILE_SWITCH_BIT)) {
            w->level = level - 1;
            w->table = e & bits_range(51, 12);
            w->rights = e & (BIT(1) | BIT(2) | BIT(63));
            return 1;
        }
        if (level == 1) {
            uint64_t code;
            if (x86_access_fault(m->s, e, a->op, a->user, e & BIT(1), e & BIT(2), e & BIT(63), &code) >= 0)
                return -1;
            w->hpa = (e & bits_range(51, 12)) | (a->gva & 0xFFF);
            w->leaf = e;
            return 0;
        }
        table = e & bits_range(51, 12);
        w->fills.key[w->fills.n] = shadow_pwc_key(m, a->gva, level);
        w->fills.table[w->fills.n++] = table;
    }
    return -1;
}

void vmm_hw_done(machine *m, const vm_access *a, vm_result *r, const vmm_hw *w)
{
    pwc_pending_fill(m, &w->fills, m->s->pcid ? m->asid : 0);
    r->hpa = w->hpa;
    r->hpa_valid = true;
    r->outcome = OUT_OK;
    uint64_t leaf = w->leaf;
    if (m->tlb)
        tlb_insert(m, a, r->gpa_valid ? r->gpa : 0, w->hpa, 4096,
                   tlb_rights(m, leaf, leaf & BIT(1), leaf & BIT(2), leaf & BIT(63), PERM_R | PERM_W | PERM_X | PERM_U));
}

static void reflect(machine *m, const vm_access *a, vm_result *r, int level, enum vm_reason why, uint64_t code)
{
    vmm_exit(m, r, EXIT_REFLECTED);
    report_guest_fault(m, a, r, level, why, code);
}

/* The VMM's own gpa -> hpa lookup (its memory slots, or its EPT without checks: the host
 * address is what the leaf's bits maxphyaddr-1:12 say). */
static bool vmm_lookup(machine *m, uint64_t gpa, uint64_t *hpa)
{
    if (!nested_lookup(m, gpa, hpa))
        return false;
    *hpa &= bits_range(m->s->maxphyaddr - 1, 0);
    return true;
}

static bool unmapped(vm_result *r, int dim, int level, uint64_t gpa)
{
    r->outcome = OUT_SHADOW_UNMAPPED;
    r->fault = (vm_fault){.dim = (uint8_t)dim, .level = (uint8_t)level, .stage = (uint8_t)(dim == DIM_GUEST ? level : 0),
                          .reason = REASON_UNMAPPED, .fault_gpa = gpa};
    return false;
}

bool vmm_guest_walk(machine *m, const vm_access *a, vm_result *r, int stop, vmm_gwalk *w)
{
    const scenario *s = m->s;
    const guest_format *gf = m->gf;
    int es = gf->entry_size;
    uint64_t table = m->cr3, ehpa[5], eval[5], tgfn[5];
    int levels[5], nw = 0;
    *w = (vmm_gwalk){.rw = true, .us = true};
    if (s->paging == PAGING_PAE) {
        /* The guest's PDPTEs as its last mov cr3 loaded them (the VMM keeps them too). */
        uint32_t idx = gf->index(a->gva, 3);
        uint64_t e = m->pdpte[idx];
        vmm_step(r, (vm_step){.kind = STEP_PDPTE, .dim = DIM_GUEST, .level = 3, .stage = 3, .gpa_valid = true,
                          .gpa = (m->cr3 & 0xFFFFFFE0u) + 8u * idx, .table = m->cr3 & 0xFFFFFFE0u, .index = idx,
                          .entry_hpa = m->pdpte_hpa[idx], .entry = e, .result = (e & 1) ? RES_TABLE : RES_NOT_PRESENT});
        if (!(e & 1)) {
            reflect(m, a, r, 3, REASON_NOT_PRESENT, 0);
            return false;
        }
        table = gf->table_addr(e);
    }
    for (int level = gf->levels; level >= 1; level--) {
        if (level == stop) {
            w->table = table;
            break;
        }
        uint64_t egpa = table + (uint64_t)es * gf->index(a->gva, level), hpa;
        if (!vmm_lookup(m, egpa, &hpa))
            return unmapped(r, DIM_GUEST, level, egpa);
        uint64_t e = mem_read(&m->mem, hpa, es);
        bool leaf = gf->is_leaf(s, e, level);
        bool reserved = (e & 1) && gf->reserved(s, e, level, leaf);
        vmm_step(r, (vm_step){.kind = STEP_VMM_READ, .dim = DIM_GUEST, .level = (uint8_t)level, .stage = (uint8_t)level,
                          .gpa_valid = true, .gpa = egpa, .table = table, .index = gf->index(a->gva, level),
                          .entry_hpa = hpa, .entry = e,
                          .result = !(e & 1) ? RES_NOT_PRESENT : reserved ? RES_RESERVED : leaf ? RES_PAGE : RES_TABLE});
        if (!(e & 1) || reserved) {
            reflect(m, a, r, level, (e & 1) ? REASON_RESERVED : REASON_NOT_PRESENT, 0);
            return false;
        }
        w->rw = w->rw && (e & BIT(1));
        w->us = w->us && (e & BIT(2));
        if (gf->has_xd && s->efer_nxe && (e & BIT(63)))
            w->xd = true;
        ehpa[nw] = hpa;
        eval[nw] = e;
        tgfn[nw] = table >> 12;
        levels[nw++] = level;
        if (leaf) {
            w->size = gf->page_size(level);
            w->gpa = gf->page_addr(e, level) | (a->gva & (w->size - 1));
            break;
        }
        table = gf->table_addr(e);
    }
    if (w->size) {
        uint64_t code = 0;
        int why = gf->access_fault(s, eval[nw - 1], a->op, a->user, w->rw, w->us, w->xd, &code);
        if (why >= 0) {
            reflect(m, a, r, levels[nw - 1], (enum vm_reason)why, code);
            return false;
        }
    }
    /* The VMM does what the MMU would have: the guest's accessed bits on the levels it
     * walked, and the dirty bit of a leaf it shadows for a write (below a switching
     * entry, the 2-D walk sets its own). */
    for (int j = 0; j < nw; j++) {
        uint64_t set = (eval[j] & BIT(5)) ? 0 : BIT(5);
        if (w->size && j == nw - 1 && a->op == OP_WRITE && !(eval[j] & BIT(6)))
            set |= BIT(6);
        if (set) {
            eval[j] |= set;
            mem_write_existing(&m->mem, ehpa[j], es, eval[j]);
            r->ad_writes++;
        }
        vmm_wp_add(m, tgfn[j]);
    }
    if (w->size) {
        w->leaf = eval[nw - 1];
        if (!vmm_lookup(m, w->gpa & ~0xFFFull, &w->data_hpa))
            return unmapped(r, DIM_NESTED, 1, w->gpa);
    }
    return true;
}

bool vmm_shadow_write(machine *m, vm_result *r, uint64_t gva, int level, uint64_t spte)
{
    uint64_t stable = m->sroot[m->asid];
    for (int l = shadow_top(m); l > level; l--) {
        uint64_t ea = stable + 8u * shadow_index(m, gva, l);
        uint64_t e = mem_read(&m->mem, ea, 8);
        if (!(e & 1) || (e & AGILE_SWITCH_BIT)) {
            uint64_t t;
            if (!vmm_alloc_frame(m, &t))
                return unmapped(r, DIM_NESTED, l, 0);
            e = t | (l == 3 && pae_shadow(m) ? 0x1 : 0x7);   /* PDPTE bits 2:1 are reserved */
            mem_write_existing(&m->mem, ea, 8, e);
        }
        stable = e & bits_range(51, 12);
    }
    uint64_t ea = stable + 8u * shadow_index(m, gva, level);
    mem_write_existing(&m->mem, ea, 8, spte);
    vmm_step(r, (vm_step){.kind = STEP_VMM_FILL, .dim = DIM_NESTED, .level = (uint8_t)level, .table = stable,
                      .index = shadow_index(m, gva, level), .entry_hpa = ea, .entry = spte, .result = RES_WRITTEN});
    return true;
}

bool vmm_shadow_leaf(machine *m, const vm_access *a, vm_result *r, const vmm_gwalk *w)
{
    bool writable = w->rw && (w->leaf & BIT(6)) && !vmm_wp_contains(m, w->gpa >> 12);
    uint64_t spte = (w->data_hpa & bits_range(51, 12)) | 1 | (writable ? BIT(1) : 0) | (w->us ? BIT(2) : 0) |
                    (w->xd ? BIT(63) : 0);
    if (!vmm_shadow_write(m, r, a->gva, 1, spte))
        return false;
    r->gpa = w->gpa;
    r->gpa_valid = true;
    r->guest_page_size = w->size;
    return true;
}

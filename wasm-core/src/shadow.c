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
#include "vmm.h"
#include "json.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t shadow_pwc_key(const machine *m, uint64_t gva, int level)
{
    return ((uint64_t)level << 58) | (gva >> shadow_shift(m, level));
}

/* The hardware walk of the shadow table: returns true with hpa, or false on a hidden
 * page fault (a missing entry, or rights the shadow entry does not grant yet). */
static bool hw_walk(machine *m, const vm_access *a, vm_result *r, uint64_t *hpa, uint64_t *leaf)
{
    uint64_t table = m->sroot[m->asid];
    int top = pae_shadow(m) ? 2 : m->gf->levels;
    uint32_t tag = m->s->pcid ? m->asid : 0;
    pwc_pending fills = {0};
    if (pae_shadow(m)) {
        /* The shadow PDPTEs are registers, loaded at VM entry: no memory reference. */
        uint32_t idx = shadow_index(m, a->gva, 3);
        uint64_t e = mem_read(&m->mem, table + 8u * idx, 8);
        vmm_step(r, (vm_step){.kind = STEP_PDPTE, .dim = DIM_NESTED, .level = 3, .table = table, .index = idx,
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
            return false;
        if (level == 1) {
            uint64_t code;
            if (x86_access_fault(m->s, e, a->op, a->user, e & BIT(1), e & BIT(2), e & BIT(63), &code) >= 0)
                return false;
            *hpa = (e & bits_range(51, 12)) | (a->gva & 0xFFF);
            *leaf = e;
            pwc_pending_fill(m, &fills, tag);
            return true;
        }
        table = e & bits_range(51, 12);
        fills.key[fills.n] = shadow_pwc_key(m, a->gva, level);
        fills.table[fills.n++] = table;
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
        vmm_step(r, (vm_step){.kind = STEP_PDPTE, .dim = DIM_GUEST, .level = 3, .stage = 3, .gpa_valid = true,
                          .gpa = (m->cr3 & 0xFFFFFFE0u) + 8u * idx, .table = m->cr3 & 0xFFFFFFE0u, .index = idx,
                          .entry_hpa = m->pdpte_hpa[idx], .entry = e, .result = (e & 1) ? RES_TABLE : RES_NOT_PRESENT});
        if (!(e & 1)) {
            vmm_exit(m, r, EXIT_REFLECTED);
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
        vmm_step(r, (vm_step){.kind = STEP_VMM_READ, .dim = DIM_GUEST, .level = (uint8_t)level, .stage = (uint8_t)level,
                          .gpa_valid = true, .gpa = egpa, .table = table, .index = gf->index(a->gva, level),
                          .entry_hpa = hpa, .entry = e,
                          .result = !(e & 1) ? RES_NOT_PRESENT : reserved ? RES_RESERVED : leaf ? RES_PAGE : RES_TABLE});
        if (!(e & 1) || reserved) {
            vmm_exit(m, r, EXIT_REFLECTED);
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
        vmm_exit(m, r, EXIT_REFLECTED);
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
        vmm_wp_add(m, tgfn[j]);
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
            if (!vmm_alloc_frame(m, &t)) {
                r->outcome = OUT_SHADOW_UNMAPPED;
                r->fault = (vm_fault){.dim = DIM_NESTED, .level = (uint8_t)level, .reason = REASON_UNMAPPED};
                return false;
            }
            e = t | (level == 3 && pae_shadow(m) ? 0x1 : 0x7);   /* PDPTE bits 2:1 are reserved */
            mem_write_existing(&m->mem, ea, 8, e);
        }
        stable = e & bits_range(51, 12);
    }
    bool writable = rw && (eval[nw - 1] & BIT(6)) && !vmm_wp_contains(m, gpa >> 12);
    uint64_t spte = (data_hpa & bits_range(51, 12)) | 1 | (writable ? BIT(1) : 0) | (us ? BIT(2) : 0) |
                    (xd ? BIT(63) : 0);
    uint64_t ea = stable + 8u * shadow_index(m, a->gva, 1);
    mem_write_existing(&m->mem, ea, 8, spte);
    vmm_step(r, (vm_step){.kind = STEP_VMM_FILL, .dim = DIM_NESTED, .level = 1, .table = stable,
                      .index = shadow_index(m, a->gva, 1), .entry_hpa = ea, .entry = spte, .result = RES_WRITTEN});
    r->gpa = gpa;
    r->gpa_valid = true;
    r->guest_page_size = size;
    return true;
}

static void shadow_translate(machine *m, const vm_access *a, vm_result *r)
{
    uint64_t hpa, leaf;
    if (!hw_walk(m, a, r, &hpa, &leaf)) {
        vmm_exit(m, r, EXIT_HIDDEN_PF);
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

/* The guest writes one of its page-table entries (the level-`level` entry of gva). */
static void shadow_event(machine *m, const vm_access *a, vm_result *r)
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
            vmm_exit(m, r, EXIT_CR3_WRITE);
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
    bool seen = vmm_wp_contains(m, egpa >> 12);
    if (seen)
        vmm_exit(m, r, EXIT_PT_WRITE);   /* the page is write-protected: exit, emulate, resync */
    uint64_t e = mem_read(&m->mem, hpa, es);
    mem_write_existing(&m->mem, hpa, es, (e & ~a->clear) | a->set);
    if (!seen)
        return;     /* the VMM never walked this frame: no shadow entry came from it, and it
                       does not see the write (zapping here zapped other address spaces' entries) */
    if (m->s->paging == PAGING_PAE && a->eptp_index == 3)
        return;     /* a PDPT write takes effect at the next mov cr3, which reloads the PDPTEs */
    vmm_zap(m, a->gva, (int)a->eptp_index);
}

/* shadow.prefill: the shadow tables as the VMM leaves them once the guest has touched
 * every mapped page, each 4 KiB piece filled as a hidden page fault would (a write where
 * the mapping is writable, so the guest's A and D bits are set and the shadow entry is
 * writable), in every address space; no exit is counted and the caches stay empty. */
static bool shadow_prefill(machine *m, char *err, size_t errlen)
{
    return !m->s->shadow_prefill || vmm_prefill(m, vmm_fill, "shadow.prefill", err, errlen);
}

static void shadow_summary(strbuf *sb, const machine *m)
{
    vmm_summary(sb, m);
    sb_puts(sb, "}}\n");
}

/* Its tables are 9-bit a level, PAE-format where the guest's are 32-bit. */
static int shadow_gpwc_shift(const machine *m, int level)
{
    return shadow_shift(m, level);
}

const mode_ops mode_shadow = {
    .name = "shadow",
    .memslots = true,
    .shadow = true,
    .build = vmm_build,
    .prefill = shadow_prefill,
    .translate = shadow_translate,
    .event = shadow_event,
    .summary = shadow_summary,
    .gpwc_shift = shadow_gpwc_shift,
    .free = vmm_free,
};

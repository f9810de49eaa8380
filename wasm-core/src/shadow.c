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

/* The VMM's side of a hidden page fault: the guest's tables walked in software down to
 * the leaf, then a 4 KiB shadow leaf (vmm_walk.c). Returns false when the access ends
 * here (a reflected #PF or an unmapped gpa). */
static bool vmm_fill(machine *m, const vm_access *a, vm_result *r)
{
    vmm_gwalk w;
    return vmm_guest_walk(m, a, r, 0, &w) && vmm_shadow_leaf(m, a, r, &w);
}

static void shadow_translate(machine *m, const vm_access *a, vm_result *r)
{
    vmm_hw w;
    if (vmm_hw_walk(m, a, r, &w) < 0) {
        vmm_exit(m, r, EXIT_HIDDEN_PF);
        if (!vmm_fill(m, a, r))
            return;
        if (vmm_hw_walk(m, a, r, &w) < 0) {   /* cannot happen after a fill; report it as unmapped */
            r->outcome = OUT_SHADOW_UNMAPPED;
            return;
        }
    }
    vmm_hw_done(m, a, r, &w);
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

const mode_ops mode_shadow = {
    .name = "shadow",
    .memslots = true,
    .shadow = true,
    .build = vmm_build,
    .prefill = shadow_prefill,
    .translate = shadow_translate,
    .event = shadow_event,
    .summary = shadow_summary,
    .gpwc_shift = vmm_gpwc_shift,
    .free = vmm_free,
};

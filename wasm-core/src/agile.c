/* Agile paging (Gandhi, Hill and Swift, ISCA 2016; docs/model.md section 1, "Agile
 * paging"): the MMU walks the VMM's shadow table from the top until it meets an entry
 * with the switch bit set; that entry holds the gpa of the guest's own next table (and
 * the rights of the guest levels above it), and from there the walk is the 2-D one of
 * EPT mode: each remaining guest entry read through the nested walk, then the final
 * nested walk. The VMM fills shadow entries on hidden page faults as in shadow mode,
 * down to the switching level, and write-protects only the guest tables above the
 * switch: a guest write to one of those exits, a write below the switch is an ordinary
 * store. Where the switch sits is the VMM's choice per subtree: the scenario's
 * agile.switch_level for every gva, agile.subtrees for some, and the policy of the
 * paper (a table whose writes exit nested_after_writes times goes nested with its
 * subtree; a nested subtree not written for shadow_after_quiet accesses comes back). */
#include "vmm.h"
#include "json.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int top_level(const machine *m)
{
    return m->gf->levels;
}

/* log2 of the bytes a level-`level` table maps (the span of the entry above it). */
static int table_span_shift(int level)
{
    return 12 + 9 * level;
}

static bool covers(const machine *m, const struct agile_subtree *t, uint64_t gva)
{
    if (t->level >= top_level(m))
        return true;
    return (gva >> table_span_shift(t->level)) == (t->base >> table_span_shift(t->level));
}

static uint64_t subtree_base(const machine *m, uint64_t gva, int level)
{
    return level >= top_level(m) ? 0 : gva & ~((1ull << table_span_shift(level)) - 1);
}

static void agile_init(machine *m)
{
    const scenario *s = m->s;
    for (uint32_t i = 0; i < s->n_agile_subs && m->n_agile_subs < AGILE_MAX_SUBTREES; i++)
        m->agile_subs[m->n_agile_subs++] = (struct agile_subtree){
            .base = subtree_base(m, s->agile_sub_gva[i], s->agile_sub_level[i]),
            .level = s->agile_sub_level[i], .nested = true};
}

/* The guest level from which gva's walk is nested (0: none, all shadow). */
static int agile_switch_level(const machine *m, uint64_t gva)
{
    int sw = m->s->agile_switch_level;
    for (uint32_t i = 0; i < m->n_agile_subs; i++) {
        const struct agile_subtree *t = &m->agile_subs[i];
        if (t->nested && t->level > sw && covers(m, t, gva))
            sw = t->level;
    }
    return sw;
}

/* The shadow entries that stood for a subtree's top table (the switch entry, or the
 * shadow table pointer) go, in every address space: the next walk refills them. */
static void drop_subtree_entry(machine *m, const struct agile_subtree *t)
{
    if (t->level < top_level(m)) {
        vmm_zap(m, t->base, t->level + 1);
        return;
    }
    for (uint32_t as = 0; as < m->s->address_spaces; as++)
        for (uint32_t i = 0; i < 512; i++)
            if (mem_read(&m->mem, m->sroot[as] + 8u * i, 8))
                mem_write_existing(&m->mem, m->sroot[as] + 8u * i, 8, 0);
    if (m->tlb)
        cache_flush(m->tlb);
    if (m->gpwc)
        cache_flush(m->gpwc);
}

/* Before each access: nested subtrees that went shadow_after_quiet accesses without a
 * guest write come back to shadow (the VMM would find their tables' EPT dirty bits
 * clear at the end of the period). */
static void agile_tick(machine *m)
{
    m->agile_clock++;
    uint32_t q = m->s->agile_quiet;
    if (!q)
        return;
    for (uint32_t i = 0; i < m->n_agile_subs; i++) {
        struct agile_subtree *t = &m->agile_subs[i];
        if (t->nested && m->agile_clock - t->last_write >= q) {
            t->nested = false;
            t->writes = 0;
            m->agile_to_shadow++;
            drop_subtree_entry(m, t);
        }
    }
}

/* The VMM's side of a hidden page fault: its software walk of the guest tables down to
 * the switching level (or the guest's leaf above it), then the shadow path and a switch
 * entry or a 4 KiB leaf (vmm_walk.c). Returns false when the access ends here. */
static bool vmm_fill(machine *m, const vm_access *a, vm_result *r)
{
    int sw = agile_switch_level(m, a->gva);
    vmm_gwalk w;
    if (!vmm_guest_walk(m, a, r, sw, &w))
        return false;
    if (w.size)
        return vmm_shadow_leaf(m, a, r, &w);
    return vmm_shadow_write(m, r, a->gva, sw + 1, w.table | 1 | AGILE_SWITCH_BIT | (w.rw ? BIT(1) : 0) |
                                                   (w.us ? BIT(2) : 0) | (w.xd ? BIT(63) : 0));
}

/* agile.prefill: the VMM fills the shadow part of every page the guest's mappings map
 * before the first access (down to its switch entry, or the leaf where the page lies
 * above the switch), as shadow.prefill does for shadow paging: tables built in advance,
 * no hidden page fault at the first touch (vmm_prefill, shadow.c). */
static bool agile_prefill(machine *m, char *err, size_t errlen)
{
    return !m->s->agile_prefill || vmm_prefill(m, vmm_fill, "agile.prefill", err, errlen);
}

static void agile_translate(machine *m, const vm_access *a, vm_result *r)
{
    if (agile_switch_level(m, a->gva) >= top_level(m)) {
        /* switched at the root: the walk is EPT's from the guest's CR3, walk cache included */
        walk_guest_from(m, a, r, 0, 0, 0);
        return;
    }
    vmm_hw w;
    int got = vmm_hw_walk(m, a, r, &w);
    if (got < 0) {
        vmm_exit(m, r, EXIT_HIDDEN_PF);
        if (!vmm_fill(m, a, r))
            return;
        got = vmm_hw_walk(m, a, r, &w);
        if (got < 0) {     /* cannot happen after a fill; report it as unmapped */
            r->outcome = OUT_SHADOW_UNMAPPED;
            return;
        }
    }
    if (got > 0) {
        walk_guest_from(m, a, r, w.level, w.table, w.rights);
        if (r->outcome == OUT_OK)
            pwc_pending_fill(m, &w.fills, m->s->pcid ? m->asid : 0);
        return;
    }
    vmm_hw_done(m, a, r, &w);
}

static struct agile_subtree *subtree_for(machine *m, uint64_t gva, int level)
{
    uint64_t base = subtree_base(m, gva, level);
    for (uint32_t i = 0; i < m->n_agile_subs; i++)
        if (m->agile_subs[i].level == level && m->agile_subs[i].base == base)
            return &m->agile_subs[i];
    if (m->n_agile_subs == AGILE_MAX_SUBTREES)
        return NULL;
    m->agile_subs[m->n_agile_subs] = (struct agile_subtree){.base = base, .level = level};
    return &m->agile_subs[m->n_agile_subs++];
}

static void agile_event(machine *m, const vm_access *a, vm_result *r)
{
    r->outcome = OUT_OK;
    if (a->op == OP_MOV_CR3) {
        /* A new CR3 needs the VMM while the top of the walk is shadow (it has to point
         * the MMU at the right shadow root); switched at the root, it is the guest's. */
        if (agile_switch_level(m, 0) < top_level(m))
            vmm_exit(m, r, EXIT_CR3_WRITE);
        switch_address_space(m, a->eptp_index);
        return;
    }
    /* OP_PTE_WRITE: the guest writes its level-L entry of gva, in its level-L table. */
    int level = (int)a->eptp_index;
    uint64_t egpa, hpa;
    if (!guest_entry_addr(m, a->gva, level, &egpa, &hpa))
        return;
    if (level <= agile_switch_level(m, a->gva)) {
        /* below the switch: the table is walked nested, the store needs no VMM */
        for (uint32_t i = 0; i < m->n_agile_subs; i++) {
            struct agile_subtree *t = &m->agile_subs[i];
            if (t->nested && t->level >= level && covers(m, t, a->gva))
                t->last_write = m->agile_clock;
        }
        walk_pte_write(m, a, r);
        return;
    }
    bool seen = vmm_wp_contains(m, egpa >> 12);
    if (seen)
        vmm_exit(m, r, EXIT_PT_WRITE);
    mem_write_existing(&m->mem, hpa, 8, (mem_read(&m->mem, hpa, 8) & ~a->clear) | a->set);
    if (!seen)
        return;
    vmm_zap(m, a->gva, level);
    uint32_t n = m->s->agile_write_threshold;
    struct agile_subtree *t = n ? subtree_for(m, a->gva, level) : NULL;
    if (t && ++t->writes >= n) {
        /* this table changes often: it and its subtree go nested */
        t->nested = true;
        t->last_write = m->agile_clock;
        m->agile_to_nested++;
        drop_subtree_entry(m, t);
    }
}

/* The shadow tables, the EPT walker of the nested part, and the subtrees the scenario
 * makes nested from the start. */
static bool agile_build(machine *m, char *err, size_t errlen)
{
    walk_nested_setup(m);
    if (!vmm_build(m, err, errlen))
        return false;
    agile_init(m);
    return true;
}

static void agile_summary(strbuf *sb, const machine *m)
{
    uint32_t nested = 0;
    for (uint32_t i = 0; i < m->n_agile_subs; i++)
        nested += m->agile_subs[i].nested;
    vmm_summary(sb, m);
    sb_printf(sb, ",\"switch_level\":%d,\"nested_subtrees\":%u,\"to_nested\":%u,\"to_shadow\":%u}}\n",
              m->s->agile_switch_level, nested, m->agile_to_nested, m->agile_to_shadow);
}

const mode_ops mode_agile = {
    .name = "agile",
    .nested = &nested_ept,
    .shadow = true,
    .build = agile_build,
    .prefill = agile_prefill,
    .translate = agile_translate,
    .event = agile_event,
    .tick = agile_tick,
    .summary = agile_summary,
    .gpwc_shift = vmm_gpwc_shift,
    .free = vmm_free,
};

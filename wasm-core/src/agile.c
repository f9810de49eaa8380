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

static uint64_t pwc_key(const machine *m, uint64_t gva, int level)
{
    (void)m;
    return ((uint64_t)level << 58) | (gva >> (12 + 9 * (level - 1)));
}

/* The MMU's walk of the shadow table: 0 with *hpa at a shadow leaf, 1 at a switch
 * entry (*level: the guest level to go on from, *table its gpa, *rights the combined
 * rights above), -1 on a hidden page fault. The shadow pointers it read go into the
 * page-walk cache once the whole walk has succeeded (*fills; the caller's). */
static int hw_walk(machine *m, const vm_access *a, vm_result *r, uint64_t *hpa, uint64_t *leaf, int *level_out,
                   uint64_t *table_out, uint64_t *rights, pwc_pending *fills)
{
    fills->n = 0;
    uint64_t table = m->sroot[m->asid];
    int top = top_level(m);
    uint32_t tag = m->s->pcid ? m->asid : 0;
    /* The page-walk cache holds shadow table pointers (never a switching entry's gpa). */
    for (int l = 2; m->gpwc && l <= top; l++) {
        cache_line *c = cache_find(m->gpwc, pwc_key(m, a->gva, l), tag);
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
        uint32_t idx = m->gf->index(a->gva, level);
        uint64_t ea = table + 8u * idx;
        uint64_t e = mem_read(&m->mem, ea, 8);
        r->memory_refs++;
        r->nested_refs++;
        bool present = e & 1;
        bool sw = present && level > 1 && (e & AGILE_SWITCH_BIT);
        vmm_step(r, (vm_step){.kind = STEP_READ, .dim = DIM_NESTED, .level = (uint8_t)level, .stage = 0, .table = table,
                          .index = idx, .entry_hpa = ea, .entry = e, .ref = (uint16_t)r->memory_refs,
                          .result = !present ? RES_NOT_PRESENT : level == 1 ? RES_PAGE : RES_TABLE});
        if (!present)
            return -1;
        if (sw) {
            *level_out = level - 1;
            *table_out = e & bits_range(51, 12);
            *rights = e & (BIT(1) | BIT(2) | BIT(63));
            return 1;
        }
        if (level == 1) {
            uint64_t code;
            if (x86_access_fault(m->s, e, a->op, a->user, e & BIT(1), e & BIT(2), e & BIT(63), &code) >= 0)
                return -1;
            *hpa = (e & bits_range(51, 12)) | (a->gva & 0xFFF);
            *leaf = e;
            return 0;
        }
        table = e & bits_range(51, 12);
        fills->key[fills->n] = pwc_key(m, a->gva, level);
        fills->table[fills->n++] = table;
    }
    return -1;
}

static void reflect(machine *m, const vm_access *a, vm_result *r, int level, enum vm_reason why, uint64_t code)
{
    vmm_exit(m, r, EXIT_REFLECTED);
    report_guest_fault(m, a, r, level, why, code);
}

static bool unmapped(vm_result *r, int dim, int level, uint64_t gpa)
{
    r->outcome = OUT_SHADOW_UNMAPPED;
    r->fault = (vm_fault){.dim = (uint8_t)dim, .level = (uint8_t)level, .stage = (uint8_t)(dim == DIM_GUEST ? level : 0),
                          .reason = REASON_UNMAPPED, .fault_gpa = gpa};
    return false;
}

/* The VMM's own gpa -> hpa lookup through its EPT (no checks, no A/D): the host
 * address is what the leaf's bits maxphyaddr-1:12 say. */
static bool vmm_lookup(machine *m, uint64_t gpa, uint64_t *hpa)
{
    if (!nested_lookup(m, gpa, hpa))
        return false;
    *hpa &= bits_range(m->s->maxphyaddr - 1, 0);
    return true;
}

/* The VMM's side of a hidden page fault: its software walk of the guest tables down to
 * the switching level (or the guest's leaf above it), then the shadow path: tables,
 * and a switch entry or a 4 KiB leaf. Returns false when the access ends here. */
static bool vmm_fill(machine *m, const vm_access *a, vm_result *r)
{
    const scenario *s = m->s;
    const guest_format *gf = m->gf;
    int sw = agile_switch_level(m, a->gva);
    uint64_t table = m->cr3, ehpa[5], eval[5], tgfn[5];
    int nw = 0, stop = 0;   /* stop: the level of the switch entry, 0 for a leaf */
    bool rw = true, us = true, xd = false;
    uint64_t page = 0, size = 0;
    for (int level = gf->levels; level >= 1; level--) {
        if (level == sw) {
            stop = level + 1;
            break;
        }
        uint64_t egpa = table + 8u * gf->index(a->gva, level), hpa;
        if (!vmm_lookup(m, egpa, &hpa))
            return unmapped(r, DIM_GUEST, level, egpa);
        uint64_t e = mem_read(&m->mem, hpa, 8);
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
        rw = rw && (e & BIT(1));
        us = us && (e & BIT(2));
        if (s->efer_nxe && (e & BIT(63)))
            xd = true;
        ehpa[nw] = hpa;
        eval[nw] = e;
        tgfn[nw++] = table >> 12;
        if (leaf) {
            page = gf->page_addr(e, level);
            size = gf->page_size(level);
            break;
        }
        table = gf->table_addr(e);
    }
    if (!stop) {
        uint64_t code = 0;
        int why = gf->access_fault(s, eval[nw - 1], a->op, a->user, rw, us, xd, &code);
        if (why >= 0) {
            reflect(m, a, r, gf->levels + 1 - nw, (enum vm_reason)why, code);
            return false;
        }
    }
    /* The guest's accessed bits on the levels the VMM walked (and the dirty bit of a
     * leaf it shadows, for a write); the 2-D part sets its own. */
    for (int j = 0; j < nw; j++) {
        uint64_t set = (eval[j] & BIT(5)) ? 0 : BIT(5);
        if (!stop && j == nw - 1 && a->op == OP_WRITE && !(eval[j] & BIT(6)))
            set |= BIT(6);
        if (set) {
            eval[j] |= set;
            mem_write_existing(&m->mem, ehpa[j], 8, eval[j]);
            r->ad_writes++;
        }
        vmm_wp_add(m, tgfn[j]);
    }
    uint64_t gpa = 0, data_hpa = 0;
    if (!stop) {
        gpa = page | (a->gva & (size - 1));
        if (!vmm_lookup(m, gpa & ~0xFFFull, &data_hpa))
            return unmapped(r, DIM_NESTED, 1, gpa);
    }
    /* The shadow path down to the level of the entry to write. */
    int last = stop ? stop : 1;
    uint64_t stable = m->sroot[m->asid];
    for (int level = gf->levels; level > last; level--) {
        uint64_t ea = stable + 8u * gf->index(a->gva, level);
        uint64_t e = mem_read(&m->mem, ea, 8);
        if (!(e & 1) || (e & AGILE_SWITCH_BIT)) {
            uint64_t t;
            if (!vmm_alloc_frame(m, &t))
                return unmapped(r, DIM_NESTED, level, 0);
            e = t | 0x7;
            mem_write_existing(&m->mem, ea, 8, e);
        }
        stable = e & bits_range(51, 12);
    }
    uint64_t spte;
    if (stop)
        spte = table | 1 | AGILE_SWITCH_BIT | (rw ? BIT(1) : 0) | (us ? BIT(2) : 0) | (xd ? BIT(63) : 0);
    else {
        bool writable = rw && (eval[nw - 1] & BIT(6)) && !vmm_wp_contains(m, gpa >> 12);
        spte = (data_hpa & bits_range(51, 12)) | 1 | (writable ? BIT(1) : 0) | (us ? BIT(2) : 0) | (xd ? BIT(63) : 0);
        r->gpa = gpa;
        r->gpa_valid = true;
        r->guest_page_size = size;
    }
    uint64_t ea = stable + 8u * gf->index(a->gva, last);
    mem_write_existing(&m->mem, ea, 8, spte);
    vmm_step(r, (vm_step){.kind = STEP_VMM_FILL, .dim = DIM_NESTED, .level = (uint8_t)last, .table = stable,
                      .index = gf->index(a->gva, last), .entry_hpa = ea, .entry = spte, .result = RES_WRITTEN});
    return true;
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
    uint64_t hpa = 0, leaf = 0, table = 0, rights = 0;
    int level = 0;
    pwc_pending fills;
    uint32_t tag = m->s->pcid ? m->asid : 0;
    int got = hw_walk(m, a, r, &hpa, &leaf, &level, &table, &rights, &fills);
    if (got < 0) {
        vmm_exit(m, r, EXIT_HIDDEN_PF);
        if (!vmm_fill(m, a, r))
            return;
        got = hw_walk(m, a, r, &hpa, &leaf, &level, &table, &rights, &fills);
        if (got < 0) {     /* cannot happen after a fill; report it as unmapped */
            r->outcome = OUT_SHADOW_UNMAPPED;
            return;
        }
    }
    if (got > 0) {
        walk_guest_from(m, a, r, level, table, rights);
        if (r->outcome == OUT_OK)
            pwc_pending_fill(m, &fills, tag);
        return;
    }
    pwc_pending_fill(m, &fills, tag);
    r->hpa = hpa;
    r->hpa_valid = true;
    r->outcome = OUT_OK;
    if (m->tlb)
        tlb_insert(m, a, r->gpa_valid ? r->gpa : 0, hpa, 4096,
                   tlb_rights(m, leaf, leaf & BIT(1), leaf & BIT(2), leaf & BIT(63), PERM_R | PERM_W | PERM_X | PERM_U));
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

/* Its shadow part is 4-level, 9 bits a level. */
static int agile_gpwc_shift(const machine *m, int level)
{
    (void)m;
    return 12 + 9 * (level - 1);
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
    .gpwc_shift = agile_gpwc_shift,
    .free = vmm_free,
};

/* The VMM's shadow tables, shared by shadow paging (shadow.c) and agile paging
 * (agile.c): see vmm.h. */
#include "vmm.h"
#include "json.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t gfn_hash(uint64_t gfn, uint32_t cap)
{
    return (uint32_t)((gfn * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

bool vmm_wp_contains(const machine *m, uint64_t gfn)
{
    for (uint32_t i = gfn_hash(gfn, m->wp_cap); m->wp_gfns[i]; i = (i + 1) & (m->wp_cap - 1))
        if (m->wp_gfns[i] == gfn + 1)
            return true;
    return false;
}

void vmm_wp_add(machine *m, uint64_t gfn)
{
    if (vmm_wp_contains(m, gfn) || m->wp_count * 2 >= m->wp_cap)
        return;
    uint32_t i = gfn_hash(gfn, m->wp_cap);
    while (m->wp_gfns[i])
        i = (i + 1) & (m->wp_cap - 1);
    m->wp_gfns[i] = gfn + 1;
    m->wp_count++;
}

bool vmm_alloc_frame(machine *m, uint64_t *hpa)
{
    *hpa = m->s->shadow_table_base + (uint64_t)m->shadow_frames * FRAME_SIZE;
    if (!mem_frame_create(&m->mem, *hpa))
        return false;
    m->shadow_frames++;
    return true;
}

bool vmm_build(machine *m, char *err, size_t errlen)
{
    m->wp_cap = 1u << 16;
    m->wp_gfns = calloc(m->wp_cap, sizeof *m->wp_gfns);
    if (!m->wp_gfns) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    for (uint32_t i = 0; i < m->s->address_spaces; i++) {
        if (!vmm_alloc_frame(m, &m->sroot[i])) {
            snprintf(err, errlen, "no room for shadow tables at shadow.table_base");
            return false;
        }
    }
    return true;
}

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

void vmm_free(machine *m)
{
    free(m->wp_gfns);
    m->wp_gfns = NULL;
}

void vmm_exit(machine *m, vm_result *r, int why)
{
    static const uint8_t res[] = {RES_HIDDEN_PF, RES_PT_WRITE, RES_CR3_WRITE, RES_REFLECTED};
    if (why != EXIT_REFLECTED)  /* reflecting a #PF is the end of the same exit, not another one */
        r->exits++;
    m->exit_counts[why]++;
    vmm_step(r, (vm_step){.kind = STEP_VMEXIT, .dim = DIM_NESTED, .level = 1, .result = res[why]});
}

/* Zaps, in every address space's shadow table, the shadow entries that stood for the
 * guest's level-`level` entry of gva: one entry where the formats match; under a PAE
 * shadow a 32-bit guest's directory entry (4 MiB) stood for two shadow ones (2 MiB). */
void vmm_zap(machine *m, uint64_t gva, int level)
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


void vmm_summary(strbuf *sb, const machine *m)
{
    sb_printf(sb, ",\"shadow\":{\"hidden_page_faults\":%u,\"pt_write_exits\":%u,\"cr3_write_exits\":%u,"
                  "\"reflected_page_faults\":%u,\"shadow_pages\":%u,\"write_protected_pages\":%u",
              m->exit_counts[0], m->exit_counts[1], m->exit_counts[2], m->exit_counts[3], m->shadow_frames,
              m->wp_count);
}

/* Building the page tables of a scenario (docs/model.md section 3). Allocation is
 * deterministic so that an independent implementation lands every table in the
 * same frame. */
#include "model.h"
#include "cache.h"

#include <stdlib.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAX_TABLE_FRAMES 32768u     /* 128 MiB of page tables */

typedef struct bctx {
    machine *m;
    const scenario *s;
    char *err;
    size_t errlen;
} bctx;

static bool berr(bctx *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool berr(bctx *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->err, b->errlen, fmt, ap);
    va_end(ap);
    return false;
}

static uint64_t nested_present_mask(const machine *m)
{
    return m->nf == &nested_ept ? 7 : 1;
}

static uint32_t nested_index(uint64_t gpa, int level)
{
    return (uint32_t)(gpa >> (12 + 9 * (level - 1))) & 511u;
}

static bool nested_is_leaf(uint64_t e, int level)
{
    return level == 1 || ((level == 2 || level == 3) && (e & BIT(7)));
}

/* The VMM's memory slots (flat and shadow mode): gpa ranges backed by host ranges. */
bool memslot_lookup(const scenario *s, uint64_t gpa, uint64_t *hpa)
{
    for (uint32_t i = 0; i < s->n_fmaps; i++) {
        const nested_map *f = &s->fmaps[i];
        uint64_t size = page_bytes(f->page);
        if (gpa >= f->gpa && gpa - f->gpa < size * f->pages) {
            *hpa = f->hpa + (gpa - f->gpa);
            return true;
        }
    }
    return false;
}

/* x GiB of guest RAM in 8 KiB frames needs x MiB of 8-byte entries (1/1024). */
uint64_t flat_table_bytes(const scenario *s)
{
    uint64_t page = s->paging == PAGING_SUNWAY ? 8192 : 4096;
    return s->flat_guest_ram / page * 8;
}

bool nested_lookup(machine *m, uint64_t gpa, uint64_t *hpa)
{
    if (m->ops->memslots)
        return memslot_lookup(m->s, gpa, hpa);
    if (!m->nf) {
        *hpa = gpa;
        return true;
    }
    if (m->s->nested_on_demand) {
        /* the VMM's view is its memory slots, filled in the nested table or not */
        for (uint32_t i = 0; i < m->s->n_nmaps; i++) {
            const nested_map *nm = &m->s->nmaps[i];
            uint64_t span = page_bytes(nm->page) * nm->pages;
            if (gpa >= nm->gpa && gpa - nm->gpa < span) {
                *hpa = nm->hpa + (gpa - nm->gpa);
                return true;
            }
        }
        return false;
    }
    uint64_t table = m->nested_root;
    for (int level = m->s->nested_levels; level >= 1; level--) {
        uint64_t e = mem_read(&m->mem, table + 8u * nested_index(gpa, level), 8);
        if (!(e & nested_present_mask(m)))
            return false;
        if (nested_is_leaf(e, level)) {
            uint64_t size = 1ull << (12 + 9 * (level - 1));
            *hpa = m->nf->page_addr(e, level) | (gpa & (size - 1));
            return true;
        }
        table = e & bits_range(51, 12);
    }
    return false;
}

static bool new_frame(bctx *b, uint64_t hpa)
{
    if (!mem_frame_create(&b->m->mem, hpa))
        return berr(b, "the scenario needs more than %u page-table frames (%u MiB); map fewer pages or use larger pages",
                    MAX_TABLE_FRAMES, MAX_TABLE_FRAMES / 256);
    return true;
}

static bool alloc_nested(bctx *b, uint64_t *hpa)
{
    *hpa = b->s->nested_table_base + (uint64_t)b->m->nested_frames * FRAME_SIZE;
    if (*hpa >> b->s->maxphyaddr)
        return berr(b, "nested.table_base: nested tables run past 2^maxphyaddr");
    b->m->nested_frames++;
    return new_frame(b, *hpa);
}

static int nested_leaf_level(enum vm_page p)
{
    return p == PAGE_4K ? 1 : p == PAGE_2M ? 2 : 3;
}

static bool build_ept(bctx *b, const char *label, const nested_map *maps, uint32_t n, uint64_t *root)
{
    machine *m = b->m;
    const scenario *s = b->s;
    if (!alloc_nested(b, root))
        return false;
    for (uint32_t i = 0; i < n; i++) {
        const nested_map *nm = &maps[i];
        uint64_t size = page_bytes(nm->page);
        int leaf = nested_leaf_level(nm->page);
        for (uint32_t k = 0; k < nm->pages; k++) {
            uint64_t gpa = nm->gpa + k * size, hpa = nm->hpa + k * size;
            uint64_t table = *root;
            for (int level = s->nested_levels; level > leaf; level--) {
                uint64_t ea = table + 8u * nested_index(gpa, level);
                uint64_t e = mem_read(&m->mem, ea, 8);
                if (e == 0) {
                    uint64_t t;
                    if (!alloc_nested(b, &t))
                        return false;
                    e = t | m->nf->nonleaf_bits;
                    mem_write_existing(&m->mem, ea, 8, e);
                } else if (nested_is_leaf(e, level)) {
                    return berr(b, "%s[%u]: gpa 0x%llx overlaps a larger page mapped earlier", label, i,
                                (unsigned long long)gpa);
                }
                table = e & bits_range(51, 12);
            }
            uint64_t ea = table + 8u * nested_index(gpa, leaf);
            if (mem_read(&m->mem, ea, 8) != 0)
                return berr(b, "%s[%u]: gpa 0x%llx is already mapped by an earlier mapping", label, i,
                            (unsigned long long)gpa);
            mem_write_existing(&m->mem, ea, 8, m->nf->make_leaf(s, nm, hpa));
        }
    }
    return true;
}

bool nested_demand_fill(machine *m, uint64_t gpa, uint64_t *leaf_hpa, uint64_t *leaf)
{
    const scenario *s = m->s;
    const nested_map *nm = NULL;
    for (uint32_t i = 0; i < s->n_nmaps && !nm; i++) {
        uint64_t span = page_bytes(s->nmaps[i].page) * s->nmaps[i].pages;
        if (gpa >= s->nmaps[i].gpa && gpa - s->nmaps[i].gpa < span)
            nm = &s->nmaps[i];
    }
    if (!nm)
        return false;
    uint64_t size = page_bytes(nm->page), base = gpa & ~(size - 1);
    int leaf_level = nested_leaf_level(nm->page);
    uint64_t table = m->nested_root;
    for (int level = s->nested_levels; level > leaf_level; level--) {
        uint64_t ea = table + 8u * nested_index(gpa, level);
        uint64_t e = mem_read(&m->mem, ea, 8);
        if (e == 0) {
            uint64_t t = s->nested_table_base + (uint64_t)m->nested_frames * FRAME_SIZE;
            if ((t >> s->maxphyaddr) || !mem_frame_create(&m->mem, t))
                return false;
            m->nested_frames++;
            e = t | m->nf->nonleaf_bits;
            mem_write_existing(&m->mem, ea, 8, e);
        } else if (nested_is_leaf(e, level))
            return false;
        table = e & bits_range(51, 12);
    }
    uint64_t ea = table + 8u * nested_index(gpa, leaf_level);
    if (mem_read(&m->mem, ea, 8) != 0)
        return false;
    *leaf = m->nf->make_leaf(s, nm, nm->hpa + (base - nm->gpa));
    *leaf_hpa = ea;
    mem_write_existing(&m->mem, ea, 8, *leaf);
    return true;
}

static uint64_t make_eptp(const scenario *s, uint64_t root)
{
    return root | ((uint64_t)(s->nested_levels - 1) << 3) | (s->ept_ad ? BIT(6) : 0) | (uint64_t)s->eptp_memtype;
}

/* The main nested table, then each EPT of the EPTP list and the list page itself:
 * entry 0 is the main EPT, entries 1..n the list's, the rest 0 (invalid). */
static bool build_nested(bctx *b)
{
    machine *m = b->m;
    const scenario *s = b->s;
    /* on demand: only the root; the mappings are the memory slots the VMM fills from */
    if (!build_ept(b, "nested.mappings", s->nmaps, s->nested_on_demand ? 0 : s->n_nmaps, &m->nested_root))
        return false;
    if (!s->vmfunc)
        return true;
    uint64_t roots[EPTP_LIST_ENTRIES] = {0};
    roots[0] = m->nested_root;
    for (uint32_t i = 0; i < s->n_eptp_list; i++) {
        char label[64];
        snprintf(label, sizeof label, "nested.eptp_list[%u].mappings", i);
        if (!build_ept(b, label, s->eptp_list[i].maps, s->eptp_list[i].n_maps, &roots[i + 1]))
            return false;
    }
    if (!alloc_nested(b, &m->eptp_list_hpa))
        return false;
    for (uint32_t i = 0; i <= s->n_eptp_list; i++)
        mem_write_existing(&m->mem, m->eptp_list_hpa + 8u * i, 8, make_eptp(s, roots[i]));
    return true;
}

/* hpa of a guest table frame at gpa; in 2-D modes through the nested tables. */
static bool guest_table_hpa(bctx *b, uint64_t gpa, uint64_t *hpa)
{
    if (nested_lookup(b->m, gpa, hpa))
        return true;
    if (b->s->n_gtables)
        return berr(b, "guest page table at gpa 0x%llx (guest.tables) is not mapped by the nested tables or memory "
                       "slots: add a mapping that covers it", (unsigned long long)gpa);
    return berr(b, "guest page table at gpa 0x%llx is not mapped by the nested tables: add a nested mapping that "
                   "covers guest.table_base (0x%llx) onward",
                (unsigned long long)gpa, (unsigned long long)b->s->guest_table_base);
}

static bool alloc_guest_frame(bctx *b, uint64_t gpa, uint64_t *hpa);

/* One guest table: one frame, or two contiguous ones for Sunway's 8 KiB tables. */
static bool alloc_guest(bctx *b, uint64_t *gpa, uint64_t *hpa)
{
    machine *m = b->m;
    uint32_t frames = m->gf->table_bytes / FRAME_SIZE;
    *gpa = b->s->guest_table_base + (uint64_t)m->guest_frames * FRAME_SIZE;
    m->guest_frames += frames;
    for (uint32_t k = frames; k-- > 0;)
        if (!alloc_guest_frame(b, *gpa + k * FRAME_SIZE, hpa))
            return false;
    return true;
}

static bool alloc_guest_frame(bctx *b, uint64_t gpa, uint64_t *hpa)
{
    machine *m = b->m;
    if (!guest_table_hpa(b, gpa, hpa))
        return false;
    if (mem_frame(&m->mem, *hpa))
        return berr(b, "guest page table at gpa 0x%llx lands on hpa 0x%llx, which already holds a %s page table; "
                       "map guest.table_base onward to host frames of their own",
                    (unsigned long long)gpa, (unsigned long long)*hpa,
                    (*hpa >= b->s->nested_table_base &&
                     *hpa < b->s->nested_table_base + (uint64_t)m->nested_frames * FRAME_SIZE && m->nf)
                        ? "nested"
                        : "guest");
    return new_frame(b, *hpa);
}

/* One address space: a root table and every guest mapping under it. */
static bool build_address_space(bctx *b, uint64_t *cr3)
{
    machine *m = b->m;
    const scenario *s = b->s;
    const guest_format *gf = m->gf;
    int es = gf->entry_size;
    uint64_t root_hpa;
    if (!alloc_guest(b, cr3, &root_hpa))
        return false;
    for (uint32_t i = 0; i < s->n_gmaps; i++) {
        const guest_map *g = &s->gmaps[i];
        uint64_t size = page_bytes(g->page);
        int leaf = gf->leaf_level(g->page);
        for (uint32_t k = 0; k < g->pages; k++) {
            uint64_t gva = g->gva + k * size, gpa = g->gpa + k * size;
            uint64_t table_hpa = root_hpa;
            for (int level = gf->build_levels; level > leaf; level--) {
                uint64_t ea = table_hpa + (uint64_t)es * gf->index(gva, level);
                uint64_t e = mem_read(&m->mem, ea, es);
                if (e == 0) {
                    uint64_t tg, th;
                    if (!alloc_guest(b, &tg, &th))
                        return false;
                    mem_write_existing(&m->mem, ea, es, (gf->table_ptr ? gf->table_ptr(tg) : tg) | gf->nonleaf(level));
                    table_hpa = th;
                    continue;
                }
                if (gf->is_leaf(s, e, level))
                    return berr(b, "guest.mappings[%u]: gva 0x%llx overlaps a larger page mapped earlier", i,
                                (unsigned long long)gva);
                if (!guest_table_hpa(b, gf->table_addr(e), &table_hpa))
                    return false;
            }
            uint64_t ea = table_hpa + (uint64_t)es * gf->index(gva, leaf);
            if (mem_read(&m->mem, ea, es) != 0)
                return berr(b, "guest.mappings[%u]: gva 0x%llx is already mapped by an earlier mapping", i,
                            (unsigned long long)gva);
            mem_write_existing(&m->mem, ea, es, gf->make_leaf(g, gpa, leaf));
        }
    }
    return true;
}

/* Follows the guest tables of gva from CR3 down to `level`; returns the hpa of that
 * level's entry and the gpa of its table. */
static bool guest_path(bctx *b, const char *what, uint64_t gva, int level, uint64_t *entry_hpa, uint64_t *table_gpa)
{
    machine *m = b->m;
    const guest_format *gf = m->gf;
    uint64_t tgpa = m->cr3, thpa;
    for (int l = gf->build_levels;; l--) {
        if (!guest_table_hpa(b, tgpa, &thpa))
            return false;
        uint64_t ea = thpa + (uint64_t)gf->entry_size * gf->index(gva, l);
        if (l == level) {
            *entry_hpa = ea;
            *table_gpa = tgpa;
            return true;
        }
        uint64_t e = mem_read(&m->mem, ea, gf->entry_size);
        if (!(e & 1))
            return berr(b, "%s: the guest walk of gva 0x%llx stops at level %d (entry not present) above level %d", what,
                        (unsigned long long)gva, l, level);
        if (gf->is_leaf(b->s, e, l))
            return berr(b, "%s: gva 0x%llx is mapped by a large page at level %d, above level %d", what,
                        (unsigned long long)gva, l, level);
        tgpa = gf->table_addr(e);
    }
}

static bool apply_guest_overrides(bctx *b)
{
    for (uint32_t i = 0; i < b->s->n_govr; i++) {
        const guest_override *o = &b->s->govr[i];
        char what[48];
        snprintf(what, sizeof what, "guest.overrides[%u]", i);
        uint64_t ea, tg;
        if (!guest_path(b, what, o->gva, o->level, &ea, &tg))
            return false;
        int es = b->m->gf->entry_size;
        uint64_t e = mem_read(&b->m->mem, ea, es);
        mem_write_existing(&b->m->mem, ea, es, (e & ~o->clear) | o->set);
    }
    return true;
}

static bool load_pdptes(bctx *b)
{
    machine *m = b->m;
    uint64_t rsvd = BIT(1) | BIT(2) | bits_range(8, 5) | bits_range(63, b->s->maxphyaddr);
    for (int i = 0; i < 4; i++) {
        uint64_t gpa = (m->cr3 & 0xFFFFFFE0u) + 8u * (uint64_t)i;
        if (!guest_table_hpa(b, gpa, &m->pdpte_hpa[i]))
            return false;
        m->pdpte[i] = mem_read(&m->mem, m->pdpte_hpa[i], 8);
        /* AMD nested paging has no PDPTE registers (the walk reads and checks them): a
         * reserved bit there is a guest #PF at access time, not a #GP at mov cr3 */
        if ((m->pdpte[i] & 1) && (m->pdpte[i] & rsvd) && m->nf != &nested_npt)
            return berr(b, "%s: PDPTE %d = 0x%llx sets reserved bits 0x%llx; loading CR3 would raise #GP",
                        b->s->n_gtables ? "guest.tables" : "guest.overrides", i,
                        (unsigned long long)m->pdpte[i], (unsigned long long)(m->pdpte[i] & rsvd));
    }
    return true;
}

static bool apply_overrides(bctx *b, const char *label, const nested_override *ovr, uint32_t n, uint64_t root)
{
    machine *m = b->m;
    for (uint32_t i = 0; i < n; i++) {
        const nested_override *o = &ovr[i];
        char what[64];
        snprintf(what, sizeof what, "%s[%u]", label, i);
        uint64_t gpa = o->gpa;
        if (o->by_guest_table) {
            uint64_t ea;
            if (!guest_path(b, what, o->gt_gva, o->gt_level, &ea, &gpa))
                return false;
        }
        uint64_t table = root;
        for (int level = b->s->nested_levels;; level--) {
            uint64_t ea = table + 8u * nested_index(gpa, level);
            uint64_t e = mem_read(&m->mem, ea, 8);
            if (level == o->level) {
                mem_write_existing(&m->mem, ea, 8, (e & ~o->clear) | o->set);
                break;
            }
            if (!(e & nested_present_mask(m)))
                return berr(b, "%s: the nested walk of gpa 0x%llx stops at level %d (entry not present) above level %d",
                            what, (unsigned long long)gpa, level, o->level);
            if (nested_is_leaf(e, level))
                return berr(b, "%s: gpa 0x%llx is mapped by a large page at level %d, above level %d", what,
                            (unsigned long long)gpa, level, o->level);
            table = e & bits_range(51, 12);
        }
    }
    return true;
}

static bool apply_nested_overrides(bctx *b)
{
    const scenario *s = b->s;
    if (!apply_overrides(b, "nested.overrides", s->novr, s->n_novr, b->m->nested_root))
        return false;
    for (uint32_t i = 0; i < s->n_eptp_list; i++) {
        char label[64];
        snprintf(label, sizeof label, "nested.eptp_list[%u].overrides", i);
        uint64_t eptp = mem_read(&b->m->mem, b->m->eptp_list_hpa + 8u * (i + 1), 8);
        if (!apply_overrides(b, label, s->eptp_list[i].ovr, s->eptp_list[i].n_ovr, eptp & bits_range(51, 12)))
            return false;
    }
    return true;
}

/* The flat table's frames exist from the start (their number is bounded by guest RAM),
 * so a fill during a walk never allocates; with prefill every memory slot is entered. */
static bool build_flat(bctx *b)
{
    machine *m = b->m;
    const scenario *s = b->s;
    uint64_t bytes = flat_table_bytes(s);
    for (uint64_t off = 0; off < bytes; off += FRAME_SIZE)
        if (!new_frame(b, s->flat_table_base + off))
            return false;
    if (!s->flat_prefill)
        return true;
    for (uint64_t gfn = 0; gfn < bytes / 8; gfn++) {
        uint64_t hpa;
        if (memslot_lookup(s, gfn * m->flat_page, &hpa))
            mem_write_existing(&m->mem, s->flat_table_base + gfn * 8, 8, hpa | 1);
    }
    return true;
}

/* guest.tables: each frame where the guest has it, holding the given entries. */
static bool load_given_tables(bctx *b)
{
    machine *m = b->m;
    const guest_format *gf = m->gf;
    for (uint32_t i = 0; i < b->s->n_gtables; i++) {
        const guest_table *t = &b->s->gtables[i];
        uint64_t hpa[2];
        uint32_t frames = gf->table_bytes / FRAME_SIZE;
        for (uint32_t k = 0; k < frames; k++)
            if (!alloc_guest_frame(b, t->gpa + k * FRAME_SIZE, &hpa[k]))
                return false;
        for (uint32_t k = 0; k < t->n_entries; k++) {
            uint64_t off = (uint64_t)gf->entry_size * t->entries[k].index;
            mem_write_existing(&m->mem, hpa[off / FRAME_SIZE] + off % FRAME_SIZE, gf->entry_size, t->entries[k].value);
        }
    }
    m->cr3 = m->cr3s[0] = b->s->given_cr3;
    return true;
}

/* Address spaces are copies of the same mappings, each with tables of its own; the
 * first is active. Overrides apply to the first. */
static bool build_guest(bctx *b)
{
    machine *m = b->m;
    if (b->s->n_gtables)
        return load_given_tables(b);
    for (uint32_t i = 0; i < b->s->address_spaces; i++)
        if (!build_address_space(b, &m->cr3s[i]))
            return false;
    m->cr3 = m->cr3s[0];
    return true;
}

static bool make_caches(bctx *b)
{
    machine *m = b->m;
    const scenario *s = b->s;
    struct cache **slots[] = {&m->tlb, &m->gpwc, &m->npwc, &m->ntlb};
    uint32_t entries[] = {s->tlb_entries, s->pwc_entries, m->nf ? s->pwc_entries : 0, m->nf || m->ops->flat_table ? s->ntlb_entries : 0};
    uint32_t ways[] = {s->tlb_ways, 0, 0, s->ntlb_ways};
    for (int i = 0; i < 4; i++) {
        if (!entries[i])
            continue;
        *slots[i] = calloc(1, sizeof(cache));
        if (!*slots[i] || !cache_init(*slots[i], entries[i], ways[i]))
            return berr(b, "out of memory for the caches");
    }
    return true;
}

/* The tables of m->ops's mode, in the order an independent implementation follows
 * (model.md 3): caches, nested or flat tables, guest tables and overrides, PDPTEs,
 * nested overrides. */
bool tables_build(machine *m, char *err, size_t errlen)
{
    const scenario *s = m->s;
    m->gf = guest_format_for(s->paging);
    m->nf = m->ops->nested;
    m->flat_page = m->gf->page_size(1);
    if (!mem_init(&m->mem, MAX_TABLE_FRAMES)) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    bctx b = {.m = m, .s = s, .err = err, .errlen = errlen};
    if (!make_caches(&b) || (m->nf && !build_nested(&b)) || (m->ops->flat_table && !build_flat(&b)) ||
        !build_guest(&b) || !apply_guest_overrides(&b) || (s->paging == PAGING_PAE && !load_pdptes(&b)) ||
        !apply_nested_overrides(&b))
        return false;
    if (m->nf == &nested_ept)
        m->eptp = make_eptp(s, m->nested_root);
    return true;
}

void tables_free(machine *m)
{
    struct cache *caches[] = {m->tlb, m->gpwc, m->npwc, m->ntlb};
    for (int i = 0; i < 4; i++) {
        if (caches[i])
            cache_free(caches[i]);
        free(caches[i]);
    }
    mem_free(&m->mem);
}

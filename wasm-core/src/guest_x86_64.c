/* x86-64 paging, 4 and 5 levels (SDM vol. 3, 4.5): 512 8-byte entries per table. */
#include "model.h"
#include "guest_entry.h"

static uint32_t index64(uint64_t gva, int level)
{
    return x86_64_index(gva, level);
}

static bool is_leaf64(const scenario *s, uint64_t e, int level)
{
    (void)s;
    return x86_64_is_leaf(e, level);
}

static uint64_t reserved64(const scenario *s, uint64_t e, int level, bool leaf)
{
    return x86_64_reserved(s, e, level, leaf);
}

static uint64_t table_addr64(uint64_t e)
{
    return x86_64_table_addr(e);
}

static uint64_t page_addr64(uint64_t e, int level)
{
    return x86_64_page_addr(e, level);
}

static uint64_t page_size64(int level)
{
    return x86_64_page_size(level);
}

static int leaf_level64(enum vm_page p)
{
    return p == PAGE_4K ? 1 : p == PAGE_2M ? 2 : p == PAGE_1G ? 3 : 0;
}

static uint64_t nonleaf64(int level)
{
    (void)level;
    return 0x7;                         /* P, RW, US: the leaf decides */
}

/* The flags of an x86 leaf (P, RW, US, PS, G, XD) around an already encoded address;
 * the three x86 formats share it. */
uint64_t x86_leaf_flags(const guest_map *g, uint64_t encoded, int level)
{
    uint64_t e = encoded | 1;
    if (g->writable) e |= BIT(1);
    if (g->user) e |= BIT(2);
    if (level > 1) e |= BIT(7);
    if (g->global) e |= BIT(8);
    if (g->nx) e |= BIT(63);
    return e;
}

static uint64_t leaf64(const guest_map *g, uint64_t addr, int level)
{
    return x86_leaf_flags(g, addr, level);
}

/* SDM vol. 3, 4.6, shared by the three x86 formats (the rules are in guest_entry.h). */
int x86_access_fault(const scenario *s, uint64_t leaf, int op, bool user, bool rw, bool us, bool xd, uint64_t *code)
{
    (void)leaf;
    (void)code;
    return x86_rights_fault(s, op, user, rw, us, xd);
}

const guest_format guest_x86_64_4level = {
    .name = "4level", .levels = 4, .entry_size = 8, .has_xd = true,
    .index = index64, .is_leaf = is_leaf64, .reserved = reserved64,
    .table_addr = table_addr64, .page_addr = page_addr64, .page_size = page_size64,
    .leaf_level = leaf_level64, .build_levels = 4, .nonleaf = nonleaf64, .make_leaf = leaf64,
    .page_shift = 12, .index_bits = 9, .table_bytes = 4096, .has_ad = true, .access_fault = x86_access_fault,
};

const guest_format guest_x86_64_5level = {
    .name = "5level", .levels = 5, .entry_size = 8, .has_xd = true,
    .index = index64, .is_leaf = is_leaf64, .reserved = reserved64,
    .table_addr = table_addr64, .page_addr = page_addr64, .page_size = page_size64,
    .leaf_level = leaf_level64, .build_levels = 5, .nonleaf = nonleaf64, .make_leaf = leaf64,
    .page_shift = 12, .index_bits = 9, .table_bytes = 4096, .has_ad = true, .access_fault = x86_access_fault,
};

/* PAE paging (SDM vol. 3, 4.4): a 4-entry PDPT whose entries are loaded into registers
 * when CR3 is written, then 512-entry PD and PT with 8-byte entries. A walk reads two
 * entries from memory. */
#include "model.h"

static uint32_t index_pae(uint64_t gva, int level)
{
    if (level == 3)
        return (uint32_t)(gva >> 30) & 3u;
    return (uint32_t)(gva >> (12 + 9 * (level - 1))) & 511u;
}

static bool is_leaf_pae(const scenario *s, uint64_t e, int level)
{
    (void)s;
    return level == 1 || (level == 2 && (e & BIT(7)));
}

static uint64_t reserved_pae(const scenario *s, uint64_t e, int level, bool leaf)
{
    uint64_t r = (s->above_maxphyaddr | bits_range(62, 52));
    if (!s->efer_nxe)
        r |= BIT(63);
    if (leaf && level == 2)
        r |= bits_range(20, 13);
    return e & r;
}

static uint64_t table_addr_pae(uint64_t e)
{
    return e & bits_range(51, 12);
}

static uint64_t page_addr_pae(uint64_t e, int level)
{
    return e & bits_range(51, level == 2 ? 21 : 12);
}

static uint64_t page_size_pae(int level)
{
    return level == 2 ? (1ull << 21) : (1ull << 12);
}

static int leaf_level_pae(enum vm_page p)
{
    return p == PAGE_4K ? 1 : p == PAGE_2M ? 2 : 0;
}

static uint64_t nonleaf_pae(int level)
{
    return level == 3 ? 0x1 : 0x7;      /* PDPTE bits 2:1 are reserved */
}

static uint64_t leaf_pae(const guest_map *g, uint64_t addr, int level)
{
    return x86_leaf_flags(g, addr, level);
}

const guest_format guest_pae = {
    .name = "pae", .levels = 2, .entry_size = 8, .has_xd = true,
    .index = index_pae, .is_leaf = is_leaf_pae, .reserved = reserved_pae,
    .table_addr = table_addr_pae, .page_addr = page_addr_pae, .page_size = page_size_pae,
    .leaf_level = leaf_level_pae, .build_levels = 3, .nonleaf = nonleaf_pae, .make_leaf = leaf_pae,
    .page_shift = 12, .index_bits = 9, .table_bytes = 4096, .has_ad = true, .access_fault = x86_access_fault,
};

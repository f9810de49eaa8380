/* 32-bit paging (SDM vol. 3, 4.3): 1024 4-byte entries per table; with CR4.PSE a PDE
 * may map a 4 MiB page, whose bits 20:13 carry physical address bits 39:32 (PSE-36). */
#include "model.h"

static uint32_t index32(uint64_t gva, int level)
{
    return (uint32_t)(gva >> (level == 2 ? 22 : 12)) & 1023u;
}

static bool is_leaf32(const scenario *s, uint64_t e, int level)
{
    return level == 1 || (level == 2 && s->cr4_pse && (e & BIT(7)));
}

static uint64_t reserved32(const scenario *s, uint64_t e, int level, bool leaf)
{
    if (!(leaf && level == 2))
        return 0;
    int m = s->maxphyaddr < 40 ? s->maxphyaddr : 40;
    return e & (BIT(21) | bits_range(20, 13 + m - 32));
}

static uint64_t table_addr32(uint64_t e)
{
    return e & 0xFFFFF000u;
}

static uint64_t page_addr32(uint64_t e, int level)
{
    if (level == 2)
        return (e & 0xFFC00000u) | (((e >> 13) & 0xFFu) << 32);
    return e & 0xFFFFF000u;
}

static uint64_t page_size32(int level)
{
    return level == 2 ? (1ull << 22) : (1ull << 12);
}

static int leaf_level32(enum vm_page p)
{
    return p == PAGE_4K ? 1 : p == PAGE_4M ? 2 : 0;
}

static uint64_t nonleaf32(int level)
{
    (void)level;
    return 0x7;
}

/* A 4 MiB page keeps address bits 39:32 in entry bits 20:13 (PSE-36). */
static uint64_t encode32(uint64_t addr, int level)
{
    if (level == 2)
        return (addr & 0xFFC00000u) | (((addr >> 32) & 0xFFu) << 13);
    return addr;
}

static uint64_t leaf32(const guest_map *g, uint64_t addr, int level)
{
    return x86_leaf_flags(g, encode32(addr, level), level);
}

const guest_format guest_32bit = {
    .name = "32bit", .levels = 2, .entry_size = 4, .has_xd = false,
    .index = index32, .is_leaf = is_leaf32, .reserved = reserved32,
    .table_addr = table_addr32, .page_addr = page_addr32, .page_size = page_size32,
    .leaf_level = leaf_level32, .build_levels = 2, .nonleaf = nonleaf32, .make_leaf = leaf32,
    .page_shift = 12, .index_bits = 10, .table_bytes = 4096, .has_ad = true, .access_fault = x86_access_fault,
};

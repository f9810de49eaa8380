/* Intel EPT (SDM vol. 3, 29.3): entries with R/W/X in bits 2:0, memory type in 5:3 of a
 * leaf, A/D in bits 8/9 when the EPTP enables them. Misconfigurations are checked here
 * in the order docs/model.md 4.1 gives. */
#include "model.h"

static bool ept_is_leaf(uint64_t e, int level)
{
    return level == 1 || ((level == 2 || level == 3) && (e & BIT(7)));
}

static enum nested_check ept_check(const scenario *s, uint64_t e, int level, int *detail)
{
    if ((e & 7) == 0)
        return NC_NOT_PRESENT;
    if ((e & 2) && !(e & 1)) {
        *detail = MC_WRITE_WITHOUT_READ;
        return NC_MISCONFIG;
    }
    if (!s->execute_only && (e & 7) == 4) {
        *detail = MC_EXECUTE_ONLY;
        return NC_MISCONFIG;
    }
    bool leaf = ept_is_leaf(e, level);
    uint64_t r = bits_range(51, s->maxphyaddr);
    if (level >= 4)
        r |= bits_range(7, 3);
    else if (!leaf && level >= 2)
        r |= bits_range(6, 3);
    if (leaf && level == 3)
        r |= bits_range(29, 12);
    if (leaf && level == 2)
        r |= bits_range(20, 12);
    if (e & r) {
        *detail = MC_RESERVED_BITS;
        return NC_MISCONFIG;
    }
    if (leaf) {
        unsigned mt = (unsigned)(e >> 3) & 7u;
        if (mt == 2 || mt == 3 || mt == 7) {
            *detail = MC_MEMORY_TYPE;
            return NC_MISCONFIG;
        }
        return NC_LEAF;
    }
    return NC_TABLE;
}

static unsigned ept_perms(const scenario *s, uint64_t e)
{
    (void)s;
    return (unsigned)(e & 7);           /* bits 0/1/2 are PERM_R/W/X */
}

static uint64_t ept_make_leaf(const scenario *s, const nested_map *nm, uint64_t hpa)
{
    (void)s;
    uint64_t e = hpa | (nm->perm & 7u) | ((uint64_t)nm->memtype << 3);
    if (nm->ipat)
        e |= BIT(6);
    if (nm->page != PAGE_4K)
        e |= BIT(7);
    return e;
}

static uint64_t ept_page_addr(uint64_t e, int level)
{
    return e & bits_range(51, 12 + 9 * (level - 1));
}

const nested_format nested_ept = {
    .name = "ept", .check = ept_check, .perms = ept_perms,
    .accessed_bit = BIT(8), .dirty_bit = BIT(9), .nonleaf_bits = 0x7,
    .make_leaf = ept_make_leaf, .page_addr = ept_page_addr,
};

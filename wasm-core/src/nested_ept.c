/* Intel EPT (SDM vol. 3, 29.3): entries with R/W/X in bits 2:0, memory type in 5:3 of a
 * leaf, A/D in bits 8/9 when the EPTP enables them. The entry checks live in
 * nested_entry.h so the walk can inline them. */
#include "model.h"
#include "nested_entry.h"

static enum nested_check ept_check(const scenario *s, uint64_t e, int level, int *detail)
{
    return ept_entry_check(s, e, level, detail);
}

static unsigned ept_perms(const scenario *s, uint64_t e)
{
    return ept_entry_perms(s, e);
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

const nested_format nested_ept = {
    .name = "ept", .check = ept_check, .perms = ept_perms,
    .accessed_bit = BIT(8), .dirty_bit = BIT(9), .nonleaf_bits = 0x7,
    .make_leaf = ept_make_leaf, .page_addr = nested_entry_page_addr,
};

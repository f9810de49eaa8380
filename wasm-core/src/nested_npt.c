/* AMD NPT (APM vol. 2, 15.25): the nested table uses the long-mode page-table format,
 * rooted at nCR3. Every nested access is a user access; guest table accesses are
 * writes (15.25.5). The entry checks live in nested_entry.h so the walk can inline them. */
#include "model.h"
#include "nested_entry.h"

static enum nested_check npt_check(const scenario *s, uint64_t e, int level, int *detail)
{
    return npt_entry_check(s, e, level, detail);
}

static unsigned npt_perms(const scenario *s, uint64_t e)
{
    return npt_entry_perms(s, e);
}

static uint64_t npt_make_leaf(const scenario *s, const nested_map *nm, uint64_t hpa)
{
    (void)s;
    uint64_t e = hpa | 1;
    if (nm->perm & PERM_W)
        e |= BIT(1);
    if (nm->user)
        e |= BIT(2);
    if (nm->page != PAGE_4K)
        e |= BIT(7);
    if (!(nm->perm & PERM_X))
        e |= BIT(63);
    return e;
}

const nested_format nested_npt = {
    .name = "npt", .check = npt_check, .perms = npt_perms,
    .accessed_bit = BIT(5), .dirty_bit = BIT(6), .nonleaf_bits = 0x7,
    .make_leaf = npt_make_leaf, .page_addr = nested_entry_page_addr,
};

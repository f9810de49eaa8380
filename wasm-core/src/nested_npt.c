/* AMD NPT (APM vol. 2, 15.25): the nested table uses the long-mode page-table format,
 * rooted at nCR3. Every nested access is a user access; guest table accesses are
 * writes (15.25.5). */
#include "model.h"

static enum nested_check npt_check(const scenario *s, uint64_t e, int level, int *detail)
{
    (void)detail;
    if (!(e & 1))
        return NC_NOT_PRESENT;
    bool leaf = level == 1 || ((level == 2 || level == 3) && (e & BIT(7)));
    uint64_t r = bits_range(51, s->maxphyaddr);
    if (!s->host_nxe)
        r |= BIT(63);
    if (level >= 4)
        r |= BIT(7);
    if (leaf && level == 3)
        r |= bits_range(29, 13);
    if (leaf && level == 2)
        r |= bits_range(20, 13);
    if (e & r)
        return NC_RESERVED;
    return leaf ? NC_LEAF : NC_TABLE;
}

static unsigned npt_perms(const scenario *s, uint64_t e)
{
    unsigned p = PERM_R;
    if (e & BIT(1))
        p |= PERM_W;
    if (e & BIT(2))
        p |= PERM_U;
    if (!s->host_nxe || !(e & BIT(63)))
        p |= PERM_X;
    return p;
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

static uint64_t npt_page_addr(uint64_t e, int level)
{
    return e & bits_range(51, 12 + 9 * (level - 1));
}

const nested_format nested_npt = {
    .name = "npt", .check = npt_check, .perms = npt_perms,
    .accessed_bit = BIT(5), .dirty_bit = BIT(6), .nonleaf_bits = 0x7,
    .make_leaf = npt_make_leaf, .page_addr = npt_page_addr,
};

/* The x86-64 guest entry format (4level and 5level) and the x86 access rights, inline
 * so that the guest walk of those formats runs without indirect calls, as the nested
 * walk does with nested_entry.h. guest_x86_64.c exposes the same functions through the
 * guest_format interface, which the other formats (pae, 32bit, sunway) use. */
#ifndef VMSIM_GUEST_ENTRY_H
#define VMSIM_GUEST_ENTRY_H

#include "model.h"

/* x86-64 paging (SDM vol. 3, 4.5): 512 8-byte entries per table. */
static inline uint32_t x86_64_index(uint64_t gva, int level)
{
    return (uint32_t)(gva >> (12 + 9 * (level - 1))) & 511u;
}

static inline bool x86_64_is_leaf(uint64_t e, int level)
{
    return level == 1 || ((level == 2 || level == 3) && (e & BIT(7)));
}

static inline uint64_t x86_64_reserved(const scenario *s, uint64_t e, int level, bool leaf)
{
    uint64_t r = s->above_maxphyaddr;
    if (!s->efer_nxe)
        r |= BIT(63);
    if (level >= 4)
        r |= BIT(7) | (s->mode == MODE_NPT ? BIT(8) : 0);   /* no large pages at PML4E/PML5E; on
                                           AMD (mode npt) bits 8:7 are both MBZ (APM vol. 2, 5.3.3) */
    if (leaf && level == 3)
        r |= bits_range(29, 13);        /* 1 GiB page: address bits below 30 (bit 12 is PAT) */
    if (leaf && level == 2)
        r |= bits_range(20, 13);
    return e & r;
}

/* The common case first (as nested_entry.h's table_test): bits an entry that points to
 * the next table may not have, computed once per walk: bit 7 (reserved at levels 4 and
 * 5, the page size at 2 and 3) and the reserved bits. */
static inline uint64_t x86_64_table_reserved(const scenario *s)
{
    return s->above_maxphyaddr | BIT(7) | (s->efer_nxe ? 0 : BIT(63));
}

/* Bits reserved at levels 4 and 5 only: bit 8 of a PML4E/PML5E on AMD (mode npt, where
 * KVM's nonleaf_bit8_rsvd holds for AMD guests); Intel ignores it. */
static inline uint64_t x86_64_top_reserved(const scenario *s)
{
    return s->mode == MODE_NPT ? BIT(8) : 0;
}

/* True only for a present entry that points to the next table with no reserved bits. */
static inline bool x86_64_is_table(uint64_t table_reserved, uint64_t top_reserved, uint64_t e, int level)
{
    return level > 1 && (e & 1) && !(e & table_reserved) && !(level >= 4 && (e & top_reserved));
}

static inline uint64_t x86_64_table_addr(uint64_t e)
{
    return e & bits_range(51, 12);
}

static inline uint64_t x86_64_page_addr(uint64_t e, int level)
{
    return e & bits_range(51, 12 + 9 * (level - 1));
}

static inline uint64_t x86_64_page_size(int level)
{
    return 1ull << (12 + 9 * (level - 1));
}

/* SDM vol. 3, 4.6: access rights from the combined R/W, U/S and XD of the walk; shared
 * by the three x86 formats. Returns REASON_PERMISSION, or -1 when allowed. */
static inline int x86_rights_fault(const scenario *s, int op, bool user, bool rw, bool us, bool xd)
{
    bool ok;
    if (op == OP_FETCH && xd)
        ok = false;
    else if (user)
        ok = us && !(op == OP_WRITE && !rw);
    else
        ok = !(op == OP_WRITE && !rw && s->cr0_wp) && !(op == OP_FETCH && us && s->cr4_smep) &&
             !(op != OP_FETCH && us && s->cr4_smap);
    return ok ? -1 : REASON_PERMISSION;
}

#endif

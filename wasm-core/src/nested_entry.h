/* The EPT and NPT entry checks, inline so that the nested walk (the hot path: 20 of the
 * 24 references of a 2-D walk) runs without indirect calls. nested_ept.c and
 * nested_npt.c expose the same functions through the nested_format interface. */
#ifndef VMSIM_NESTED_ENTRY_H
#define VMSIM_NESTED_ENTRY_H

#include "model.h"

static inline bool nested_entry_is_leaf(uint64_t e, int level)
{
    return level == 1 || ((level == 2 || level == 3) && (e & BIT(7)));
}

/* Intel EPT (SDM vol. 3, 29.3): R/W/X in bits 2:0; misconfigurations in the order
 * docs/model.md 4.1 gives. */
static inline enum nested_check ept_entry_check(const scenario *s, uint64_t e, int level, int *detail)
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
    bool leaf = nested_entry_is_leaf(e, level);
    uint64_t r = s->above_maxphyaddr;
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

/* The common case first, an entry that points to the next table: a walk computes the
 * test once (ept_table_test, npt_table_test) and applies it to each entry; it is true
 * only where the full check would return NC_TABLE, and anything else takes the full
 * check. */
typedef struct table_test {
    uint64_t reserved;      /* bits a table entry may not have */
    unsigned rwx_ok;        /* EPT: bit n set when R/W/X = n is allowed in a table entry */
} table_test;

/* An EPT table entry has bits 7:3 clear at every level (reserved at levels 4 and 5; 6:3
 * reserved and 7 the page size at levels 2 and 3), and R/W/X is R, RW, RX, RWX, or X
 * alone where execute-only is supported. Level 1 has no table entries. */
static inline table_test ept_table_test(const scenario *s)
{
    return (table_test){.reserved = s->above_maxphyaddr | bits_range(7, 3),
                        .rwx_ok = 0xAAu | (s->execute_only ? 0x10u : 0)};
}

static inline bool ept_entry_is_table(table_test t, uint64_t e, int level)
{
    return level > 1 && ((t.rwx_ok >> (e & 7)) & 1) && !(e & t.reserved);
}

static inline unsigned ept_entry_perms(const scenario *s, uint64_t e)
{
    (void)s;
    return (unsigned)(e & 7);           /* bits 0/1/2 are PERM_R/W/X */
}

/* AMD NPT (APM vol. 2, 15.25): the long-mode format; reserved bits give #NPF with RSVD. */
static inline enum nested_check npt_entry_check(const scenario *s, uint64_t e, int level, int *detail)
{
    (void)detail;
    if (!(e & 1))
        return NC_NOT_PRESENT;
    bool leaf = nested_entry_is_leaf(e, level);
    uint64_t r = s->above_maxphyaddr;
    if (!s->host_nxe)
        r |= BIT(63);
    if (level >= 4)
        r |= bits_range(8, 7);          /* AMD: PML4E/PML5E bits 8:7 are MBZ (APM vol. 2, 5.3.3) */
    if (leaf && level == 3)
        r |= bits_range(29, 13);
    if (leaf && level == 2)
        r |= bits_range(20, 13);
    if (e & r)
        return NC_RESERVED;
    return leaf ? NC_LEAF : NC_TABLE;
}

/* An NPT table entry is present, has bit 7 clear (reserved at levels 4 and 5, the page
 * size at 2 and 3) and no reserved bits (bit 8 too at levels 4 and 5). */
static inline table_test npt_table_test(const scenario *s)
{
    return (table_test){.reserved = s->above_maxphyaddr | BIT(7) | (s->host_nxe ? 0 : BIT(63))};
}

static inline bool npt_entry_is_table(table_test t, uint64_t e, int level)
{
    return level > 1 && (e & 1) && !(e & (t.reserved | (level >= 4 ? BIT(8) : 0)));
}

static inline unsigned npt_entry_perms(const scenario *s, uint64_t e)
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

static inline uint64_t nested_entry_page_addr(uint64_t e, int level)
{
    return e & bits_range(51, 12 + 9 * (level - 1));
}

#endif

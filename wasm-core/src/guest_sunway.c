/* Sunway guest paging, as the swFNPT paper describes it: 8 KiB pages, four levels of
 * 1024 8-byte entries (a 53-bit virtual address), the page frame number at bit 28,
 * and fault-on-read/write/execute bits instead of hardware accessed/dirty flags. The
 * TLB is refilled in software (HMcode walks these tables). Bit layout of this model,
 * after the Alpha lineage the architecture comes from: bit 0 V (valid), 1 FOR, 2 FOW,
 * 3 FOE, 4 ASM (global), 8 KRE, 9 URE, 12 KWE, 13 UWE (kernel/user read/write enable);
 * execution needs read enable. Fault codes (error_code): 0 TNV (not valid), 1 ACV
 * (access violation or reserved bits), 2 FOR, 3 FOW, 4 FOE. */
#include "model.h"

#define SW_V BIT(0)
#define SW_FOR BIT(1)
#define SW_FOW BIT(2)
#define SW_FOE BIT(3)
#define SW_ASM BIT(4)
#define SW_KRE BIT(8)
#define SW_URE BIT(9)
#define SW_KWE BIT(12)
#define SW_UWE BIT(13)
#define SW_PFN_SHIFT 28
#define SW_PAGE_SHIFT 13

static uint32_t index_sw(uint64_t gva, int level)
{
    return (uint32_t)(gva >> (SW_PAGE_SHIFT + 10 * (level - 1))) & 1023u;
}

static bool is_leaf_sw(const scenario *s, uint64_t e, int level)
{
    (void)s;
    (void)e;
    return level == 1;
}

static uint64_t reserved_sw(const scenario *s, uint64_t e, int level, bool leaf)
{
    (void)level;
    (void)leaf;
    /* frame numbers beyond maxphyaddr, and the bits between the flags and the PFN */
    return e & (bits_range(63, SW_PFN_SHIFT + s->maxphyaddr - SW_PAGE_SHIFT) | bits_range(27, 14) | bits_range(7, 5) |
                bits_range(11, 10));
}

static uint64_t addr_sw(uint64_t e)
{
    return (e >> SW_PFN_SHIFT) << SW_PAGE_SHIFT;
}

static uint64_t page_addr_sw(uint64_t e, int level)
{
    (void)level;
    return addr_sw(e);
}

static uint64_t page_size_sw(int level)
{
    (void)level;
    return 1ull << SW_PAGE_SHIFT;
}

static int leaf_level_sw(enum vm_page p)
{
    return p == PAGE_8K ? 1 : 0;
}

static uint64_t nonleaf_sw(int level)
{
    (void)level;
    return SW_V;
}

static uint64_t leaf_sw(const guest_map *g, uint64_t addr, int level)
{
    (void)level;
    uint64_t e = ((addr >> SW_PAGE_SHIFT) << SW_PFN_SHIFT) | SW_V | SW_KRE;
    if (g->writable) e |= SW_KWE;
    if (g->user) e |= SW_URE | (g->writable ? SW_UWE : 0);
    if (g->global) e |= SW_ASM;
    if (g->nx) e |= SW_FOE;
    return e;
}

/* The encoding puts the table address where a PTE holds its frame number. */
static uint64_t table_ptr_sw(uint64_t addr)
{
    return (addr >> SW_PAGE_SHIFT) << SW_PFN_SHIFT;
}

static int access_fault_sw(const scenario *s, uint64_t e, int op, bool user, bool rw, bool us, bool xd, uint64_t *code)
{
    (void)s;
    (void)rw;
    (void)us;
    (void)xd;
    uint64_t need = op == OP_WRITE ? (user ? SW_UWE : SW_KWE) : (user ? SW_URE : SW_KRE);
    if (!(e & need)) {
        *code = 1;                      /* ACV */
        return REASON_PERMISSION;
    }
    uint64_t fo = op == OP_READ ? SW_FOR : op == OP_WRITE ? SW_FOW : SW_FOE;
    if (e & fo) {
        *code = op == OP_READ ? 2 : op == OP_WRITE ? 3 : 4;
        return REASON_FAULT_ON;
    }
    return -1;
}

const guest_format guest_sunway = {
    .name = "sunway", .levels = 4, .entry_size = 8, .has_xd = false,
    .index = index_sw, .is_leaf = is_leaf_sw, .reserved = reserved_sw,
    .table_addr = addr_sw, .page_addr = page_addr_sw, .page_size = page_size_sw,
    .leaf_level = leaf_level_sw, .build_levels = 4, .nonleaf = nonleaf_sw, .make_leaf = leaf_sw,
    .page_shift = 13, .index_bits = 10, .table_bytes = 8192, .has_ad = false, .access_fault = access_fault_sw, .table_ptr = table_ptr_sw,
};

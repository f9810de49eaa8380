/* The engine's types: a scenario, the machine built from it, and the trace of one
 * access. The semantics are specified in docs/model.md; section numbers below refer
 * to it. */
#ifndef VMSIM_MODEL_H
#define VMSIM_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dcache.h"
#include "mem.h"

#define BIT(n) (1ull << (n))
/* Bits hi..lo set (hi >= lo), empty when hi < lo. */
static inline uint64_t bits_range(int hi, int lo)
{
    if (hi < lo)
        return 0;
    uint64_t top = hi >= 63 ? ~0ull : (BIT(hi + 1) - 1);
    return top & ~(BIT(lo) - 1);
}

enum vm_mode { MODE_NATIVE, MODE_EPT, MODE_NPT, MODE_FLAT, MODE_SHADOW, MODE_AGILE };
enum vm_paging { PAGING_4LEVEL, PAGING_5LEVEL, PAGING_PAE, PAGING_32BIT, PAGING_SUNWAY };
enum vm_op { OP_READ, OP_WRITE, OP_FETCH, OP_VMFUNC, OP_VMCALL, OP_MOV_CR3, OP_INVLPG, OP_PTE_WRITE };
enum vm_page { PAGE_4K, PAGE_2M, PAGE_1G, PAGE_4M, PAGE_8K };

enum vm_outcome {
    OUT_OK, OUT_GUEST_PF, OUT_EPT_VIOLATION, OUT_EPT_MISCONFIG, OUT_NPT_FAULT, OUT_FLAT_FAULT,
    OUT_VMFUNC_EXIT, OUT_INVALID_OPCODE, OUT_VMCALL_EXIT, OUT_SHADOW_UNMAPPED, OUT_COUNT
};
enum vm_dim { DIM_GUEST, DIM_NESTED };
enum vm_step_kind {
    STEP_READ, STEP_AD_WRITE, STEP_PDPTE, STEP_VMM_FILL, STEP_EPTP_LIST, STEP_TLB_HIT, STEP_PWC_HIT, STEP_NTLB_HIT,
    STEP_VMEXIT, STEP_VMM_READ
};
enum vm_step_result {
    RES_TABLE, RES_PAGE, RES_NOT_PRESENT, RES_RESERVED, RES_MISCONFIG, RES_WRITTEN, RES_BLOCKED,
    RES_HIDDEN_PF, RES_PT_WRITE, RES_CR3_WRITE, RES_REFLECTED
};
enum vm_reason {
    REASON_NOT_PRESENT, REASON_RESERVED, REASON_PERMISSION, REASON_MISCONFIG, REASON_FAULT_ON, REASON_UNMAPPED,
    REASON_INVALID_EPTP, REASON_INDEX_RANGE, REASON_FUNCTION, REASON_HYPERCALL, REASON_VMFUNC_DISABLED
};
enum vm_misconfig {
    MC_NONE, MC_WRITE_WITHOUT_READ, MC_EXECUTE_ONLY, MC_RESERVED_BITS, MC_MEMORY_TYPE
};

/* Permission letters used by nested mappings and combined walk permissions. */
#define PERM_R 1u
#define PERM_W 2u
#define PERM_X 4u
#define PERM_U 8u   /* NPT only: the entry allows user access */

typedef struct guest_map {
    uint64_t gva, gpa;
    enum vm_page page;
    uint32_t pages;
    bool writable, user, nx, global;
} guest_map;

typedef struct guest_override {
    uint64_t gva;
    int level;
    uint64_t set, clear;
} guest_override;

/* A guest page table given entry by entry (guest.tables): the frame at gpa holds these
 * values and zero elsewhere. How a real guest's tables are loaded as they are. */
typedef struct guest_entry {
    uint32_t index;
    uint64_t value;
} guest_entry;

typedef struct guest_table {
    uint64_t gpa;
    guest_entry *entries;
    uint32_t n_entries;
} guest_table;

typedef struct nested_map {
    uint64_t gpa, hpa;
    enum vm_page page;
    uint32_t pages;
    unsigned perm;
    int memtype;
    bool ipat, user;
} nested_map;

typedef struct nested_override {
    bool by_guest_table;
    uint64_t gpa;
    uint64_t gt_gva;
    int gt_level;
    int level;
    uint64_t set, clear;
} nested_override;

typedef struct vm_access {
    uint64_t gva;
    enum vm_op op;
    bool user;
    uint32_t eptp_index;    /* OP_VMFUNC: ECX; OP_MOV_CR3: the address space; OP_PTE_WRITE: level */
    uint64_t set, clear;    /* OP_PTE_WRITE: bits the guest sets and clears in the entry */
    uint32_t function;      /* OP_VMFUNC: EAX (0 = EPTP switching) */
} vm_access;

/* One EPT of an EPTP list, built like the main nested table. */
typedef struct ept_def {
    nested_map *maps;
    uint32_t n_maps;
    nested_override *ovr;
    uint32_t n_ovr;
} ept_def;

#define EPTP_LIST_ENTRIES 512

#define AGILE_MAX_SUBTREES 64
/* Agile paging's switch bit: bit 11 of a shadow entry (one the MMU ignores in x86-64
 * paging); set, the entry holds the gpa of the guest's next table (model.md 1). */
#define AGILE_SWITCH_BIT BIT(11)

typedef struct scenario {
    char *name;
    enum vm_mode mode;
    int maxphyaddr;
    uint64_t above_maxphyaddr;  /* bits 51:maxphyaddr, reserved in every entry format */
    /* guest */
    enum vm_paging paging;
    uint64_t guest_table_base;
    bool cr0_wp, efer_nxe, cr4_pse, cr4_smep, cr4_smap;
    uint32_t address_spaces;    /* copies of the guest tables, one CR3 each */
    bool pcid;                  /* TLB entries tagged by address space: mov cr3 keeps them */
    guest_map *gmaps;
    uint32_t n_gmaps;
    guest_override *govr;
    uint32_t n_govr;
    guest_table *gtables;       /* guest.tables: the tables as given, at their own frames */
    uint32_t n_gtables;
    uint64_t given_cr3;         /* guest.cr3, with guest.tables */
    /* nested */
    int nested_levels;
    uint64_t nested_table_base;
    bool ept_ad;
    int eptp_memtype;
    bool execute_only;
    bool host_nxe, host_smep;
    nested_map *nmaps;
    uint32_t n_nmaps;
    nested_override *novr;
    uint32_t n_novr;
    bool nested_on_demand;      /* nested.on_demand: mappings are memory slots, entries filled on first touch */
    bool vmfunc;                /* VM functions enabled with EPTP switching (EPT only) */
    ept_def *eptp_list;         /* EPTP-list entries 1..n (entry 0 is the main EPT) */
    uint32_t n_eptp_list;
    /* flat nested table (mode flat) */
    bool flat_sunway;
    uint64_t flat_table_base, flat_guest_ram;
    bool flat_prefill;
    nested_map *fmaps;          /* memslots: gpa -> hpa ranges the VMM fills from */
    uint32_t n_fmaps;
    /* shadow paging (mode shadow): memory slots in fmaps */
    uint64_t shadow_table_base;
    uint32_t cr3_targets;       /* VMX CR3-target values: the first n address spaces */
    bool pv_cr3_cache;          /* the 2007 paravirtual 4-entry guest_cr3 -> host_cr3 cache */
    bool shadow_prefill;        /* shadow.prefill: every mapped page shadowed at build time */
    bool agile_prefill;         /* agile.prefill: the shadow part of every mapped page filled at build time */
    /* agile paging (mode agile): shadow tables at shadow_table_base over an EPT */
    int agile_switch_level;     /* guest levels at and below it are walked nested; 0 = all shadow */
    uint64_t agile_sub_gva[AGILE_MAX_SUBTREES];     /* agile.subtrees: nested from the start */
    int agile_sub_level[AGILE_MAX_SUBTREES];
    uint32_t n_agile_subs;
    uint32_t agile_write_threshold; /* pt_write exits to one table before its subtree goes nested (0 = never) */
    uint32_t agile_quiet;           /* accesses without a write before a subtree goes back to shadow (0 = never) */
    /* caches (all sizes 0 = off) */
    uint32_t tlb_entries, tlb_ways, pwc_entries, ntlb_entries, ntlb_ways;
    bool flush_on_eptp_switch;
    bool cache_contents;        /* the result lists what each cache holds after each access */
    /* accesses */
    vm_access *accesses;
    uint32_t n_accesses;
} scenario;

/* One step of the trace (5, "Each step"). */
typedef struct vm_step {
    uint8_t kind, dim, level, stage, result, ad_set; /* ad_set: bit0 A, bit1 D */
    bool gpa_valid;
    uint16_t ref;                                    /* 0 = not a memory reference */
    uint32_t index;
    uint64_t gpa, table, entry_hpa, entry;
} vm_step;

/* The longest access: 5 guest levels x (5 nested + 1) + 5 final + 5 A/D writes. */
#define VM_MAX_STEPS 48

typedef struct vm_fault {
    uint8_t dim, level, stage, reason, detail;
    uint64_t error_code;        /* guest #PF */
    uint64_t qualification;     /* EPT violation */
    uint64_t fault_gpa;         /* EPT: guest-physical address; NPT: EXITINFO2 */
    uint64_t exitinfo1;         /* NPT */
} vm_fault;

typedef struct vm_result {
    enum vm_outcome outcome;
    bool gpa_valid, hpa_valid;
    uint64_t gpa, hpa;
    uint64_t guest_page_size, nested_page_size;     /* 0 = null */
    uint32_t memory_refs, guest_refs, nested_refs, ad_writes, exits;
    int8_t tlb_hit;                                 /* -1 no TLB, 0 miss, 1 hit */
    uint32_t pwc_hits, ntlb_hits;
    vm_fault fault;
    bool record;                                    /* fill steps[]? */
    uint32_t nsteps;
    vm_step steps[VM_MAX_STEPS];
} vm_result;

/* A guest paging format (4level, 5level, pae, 32bit): one table entry per format. */
typedef struct guest_format {
    const char *name;
    int levels;             /* levels read from memory, top first; pae: 2 (+ PDPTE registers) */
    int entry_size;         /* bytes */
    bool has_xd;            /* 64-bit entries with an XD bit */
    uint32_t (*index)(uint64_t gva, int level);
    bool (*is_leaf)(const struct scenario *s, uint64_t entry, int level);
    uint64_t (*reserved)(const struct scenario *s, uint64_t entry, int level, bool leaf);
    uint64_t (*table_addr)(uint64_t entry);
    uint64_t (*page_addr)(uint64_t entry, int level);
    uint64_t (*page_size)(int level);
    int (*leaf_level)(enum vm_page page);           /* 0 = this page size is not allowed */
    uint32_t table_bytes;                           /* one table: 4 KiB, or 8 KiB on Sunway */
    uint8_t page_shift, index_bits;                 /* an entry at level L covers 2^(page_shift + index_bits (L-1)) */
    bool has_ad;                                    /* hardware A/D bits (Sunway uses fault-on bits) */
    /* Access rights once the leaf is known; returns a vm_reason or -1 when allowed, and
     * for formats with their own fault codes sets *code. rw/us/xd are the x86 combined
     * bits; other formats look at the leaf alone. */
    int (*access_fault)(const struct scenario *s, uint64_t leaf, int op, bool user, bool rw, bool us, bool xd,
                        uint64_t *code);
    int build_levels;                               /* levels of tables in memory (pae: 3) */
    uint64_t (*nonleaf)(int level);                 /* flags of a table-pointing entry */
    uint64_t (*make_leaf)(const struct guest_map *g, uint64_t addr, int level);
    uint64_t (*table_ptr)(uint64_t table_addr);     /* NULL: the address as it is */
} guest_format;

/* The outcome of checking one nested entry. */
enum nested_check { NC_TABLE, NC_LEAF, NC_NOT_PRESENT, NC_RESERVED, NC_MISCONFIG };

/* A nested format (EPT, NPT): the walk driver is shared, the entry format is not. */
typedef struct nested_format {
    const char *name;
    enum nested_check (*check)(const struct scenario *s, uint64_t entry, int level, int *detail);
    unsigned (*perms)(const struct scenario *s, uint64_t entry);   /* PERM_* bits the entry grants */
    uint64_t accessed_bit, dirty_bit;                                /* 0 = no A/D */
    uint64_t nonleaf_bits;
    uint64_t (*make_leaf)(const struct scenario *s, const nested_map *nm, uint64_t hpa);
    uint64_t (*page_addr)(uint64_t entry, int level);
} nested_format;

extern const guest_format guest_x86_64_4level, guest_x86_64_5level, guest_pae, guest_32bit, guest_sunway;
extern const nested_format nested_ept, nested_npt;

struct machine;
struct strbuf;
struct nested_req;
struct nested_out;

/* A walk of the nested dimension for one gpa (walk.h): false with the fault in r. */
typedef bool nested_walk_fn(struct machine *m, vm_result *r, uint64_t gpa, const struct nested_req *q,
                            struct nested_out *o);

/* A paging mode: one table of operations, one file (native.c, tdp.c, flat.c, shadow.c,
 * agile.c), chosen once when the machine is built (mode.c). translate.c calls through
 * it and never asks which mode it is; the walk the modes share is walk.c, the shadow
 * tables shadow and agile paging share are vmm.c (docs/model.md, "Adding a mode"). */
typedef struct mode_ops {
    const char *name;                   /* the scenario's "mode" */
    const struct nested_format *nested; /* the nested tables built for it (NULL: none) */
    bool flat_table;                    /* a flat nested table built for it */
    bool memslots;                      /* the VMM's gpa -> hpa is its memory slots (no nested table) */
    bool shadow;                        /* the MMU starts in the VMM's shadow tables */
    /* After the tables are built: the mode's own structures (NULL: none). */
    bool (*build)(struct machine *m, char *err, size_t errlen);
    /* The tables built in advance where the scenario asks (NULL: nothing to fill). */
    bool (*prefill)(struct machine *m, char *err, size_t errlen);
    /* An access the TLB did not answer: the walk, its exits and fills. */
    void (*translate)(struct machine *m, const vm_access *a, vm_result *r);
    /* mov cr3 and guest page-table writes. */
    void (*event)(struct machine *m, const vm_access *a, vm_result *r);
    /* Before every entry of the access list: the VMM policy's clock (NULL: none). */
    void (*tick)(struct machine *m);
    /* The result's "shadow" object (NULL: null). */
    void (*summary)(struct strbuf *sb, const struct machine *m);
    /* The gva bits above a guest walk-cache line of this level, as the mode's walk forms
     * its keys (NULL: the guest format's own; caches.contents reads it). */
    int (*gpwc_shift)(const struct machine *m, int level);
    void (*free)(struct machine *m);    /* NULL: nothing of its own */
} mode_ops;

extern const mode_ops mode_native, mode_ept, mode_npt, mode_flat, mode_shadow, mode_agile;

typedef struct machine {
    const scenario *s;
    const mode_ops *ops;        /* the mode */
    mem mem;
    const guest_format *gf;
    const nested_format *nf;    /* NULL in native, flat and shadow mode */
    nested_walk_fn *nwalk[2];   /* the nested dimension without and with steps; NULL: a 1-D mode */
    uint64_t sroot[64];         /* shadow root per address space */
    uint32_t shadow_frames;     /* shadow table frames allocated */
    uint64_t *wp_gfns;          /* write-protected guest page-table frames (open addressing) */
    uint32_t wp_cap, wp_count;
    uint32_t pv_cache[4], pv_n; /* paravirtual guest_cr3 -> host_cr3 cache (address spaces, LRU first) */
    uint32_t exit_counts[4];    /* shadow exits: hidden page fault, pt write, cr3 write, reflected #PF */
    uint32_t nested_fills;      /* nested.on_demand: EPT violations / NPT faults the VMM filled */
    dcache *dc;                 /* the data caches page-table entry reads go through (the replay's); NULL: none */
    struct agile_subtree {
        uint64_t base;          /* first gva the level-`level` table maps */
        int level;
        uint32_t writes;        /* pt_write exits to the table since it went (back) to shadow */
        uint64_t last_write;    /* access count at the last write to the table (nested) */
        bool nested;
    } agile_subs[AGILE_MAX_SUBTREES];
    uint32_t n_agile_subs;
    uint64_t agile_clock;       /* accesses seen (the quiet period's clock) */
    uint32_t agile_to_nested, agile_to_shadow;
    uint64_t flat_page;         /* bytes per guest frame in the flat table */
    uint64_t cr3;               /* of the active address space */
    uint64_t cr3s[64];          /* one per address space */
    uint32_t asid;              /* the active address space */
    struct cache *tlb, *gpwc, *npwc, *ntlb;   /* NULL when off */
    uint32_t tlb_shifts;        /* page-size shifts present in the TLB (bit n = 2^n pages) */
    uint32_t ntlb_shifts;
    uint64_t nested_root;       /* of the active EPT */
    uint64_t eptp_list_hpa;     /* 0 unless VM functions are enabled */
    uint32_t eptp_index;        /* the VMCS EPTP-index field */
    uint64_t eptp;
    uint64_t pdpte[4], pdpte_hpa[4];
    uint32_t guest_frames, nested_frames;
} machine;

/* A page-table entry read at hpa: where the data caches found it (when the machine has them). */
static inline void dc_ref(machine *m, uint64_t hpa)
{
    if (m->dc)
        m->dc->refs[dcache_access(m->dc, hpa)]++;
}

uint64_t page_bytes(enum vm_page p);
const guest_format *guest_format_for(enum vm_paging p);

/* guest_x86_64.c: the access rights of x86 paging (SDM vol. 3, 4.6), shared by the
 * three x86 formats. */
int x86_access_fault(const struct scenario *s, uint64_t leaf, int op, bool user, bool rw, bool us, bool xd,
                     uint64_t *code);
uint64_t x86_leaf_flags(const struct guest_map *g, uint64_t encoded, int level);

/* A machine whose walk has a nested dimension (ept, npt, flat, agile's nested part). */
static inline bool machine_two_d(const machine *m)
{
    return m->nwalk[0] != NULL;
}

/* vmfunc.c */
void vmfunc_execute(machine *m, const vm_access *a, vm_result *r);

/* build.c: the VMM's memory slots (flat and shadow mode), and the flat table's size */
bool memslot_lookup(const scenario *s, uint64_t gpa, uint64_t *hpa);
uint64_t flat_table_bytes(const scenario *s);

/* scenario.c */
bool scenario_parse(const char *text, size_t len, scenario *s, char *err, size_t errlen);
void scenario_free(scenario *s);

/* mode.c: the machine for a scenario, its mode's table chosen; false with err set
 * when the scenario cannot be built (3). */
bool machine_build(machine *m, const scenario *s, char *err, size_t errlen);
void machine_free(machine *m);
/* build.c: the page tables (nested, flat, guest) and the caches of m->ops's mode */
bool tables_build(machine *m, char *err, size_t errlen);
void tables_free(machine *m);
/* Lookup through the nested tables without checks or A/D: the hypervisor's view. */
bool nested_lookup(machine *m, uint64_t gpa, uint64_t *hpa);
/* nested.on_demand: the VMM's answer to a not-present nested entry for gpa: the leaf of
 * the memory slot holding it (tables as needed). False when no slot holds gpa or the
 * entry is there already (a fault of another kind). */
bool nested_demand_fill(machine *m, uint64_t gpa, uint64_t *leaf_hpa, uint64_t *leaf);

/* translate.c (4): one access, through the mode's table */
void translate(machine *m, const vm_access *a, vm_result *r);

/* result.c (5) */
void result_json_begin(struct strbuf *sb, const machine *m);
void result_json_access(struct strbuf *sb, const machine *m, const vm_access *a, const vm_result *r, bool contents);
#define CONTENTS_MAX_ACCESSES 256   /* caches.contents: accesses listed (the result stays a few MB at most) */
#define CONTENTS_MAX_LINES 32       /* caches.contents: lines listed per cache, most recently used first */
void machine_mark_caches(machine *m);
void result_json_end(struct strbuf *sb, const machine *m, const vm_result *totals, const uint32_t counts[OUT_COUNT],
                     uint32_t n);
void step_flags(const machine *m, const vm_step *st, char *out, size_t outlen, bool json);
void image_json(struct strbuf *sb, const machine *m);
void explain_access(struct strbuf *sb, const machine *m, const vm_access *a, const vm_result *r, uint32_t i);

extern const char *const op_names[];
extern const char *const outcome_names[];

#endif

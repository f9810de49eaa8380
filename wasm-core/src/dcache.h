/* The caches a page-table entry read goes through (model.md 5c, "Where a reference is
 * found"): an L1 data cache, an L1 instruction cache beside it, and below them an L2 and
 * (x86) an LLC, each physically indexed and set-associative, of 64-byte lines with LRU
 * replacement, sized from the machine preset. A read looks in its L1, then L2, then the
 * LLC; a miss at a level fills it (levels are neither inclusive nor exclusive: a line found
 * in L2 is copied into the L1, nothing is written back). Page-table entry reads and the
 * program's loads and stores go through the L1 data cache, its instruction fetches through
 * the L1 instruction cache; they all share L2 and the LLC, so a program's data and code
 * compete with the walk's entries. */
#ifndef VMSIM_DCACHE_H
#define VMSIM_DCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The highest host address the caches tell apart: a line's number + 1 is kept in 32 bits. */
#define DCACHE_HPA_LIMIT (1ull << 38)

enum { DC_L1, DC_L2, DC_LLC, DC_MEMORY, DC_WHERE };
enum { DC_DATA, DC_CODE };      /* which L1: the data cache, the instruction cache */

typedef struct dcache_level {
    uint32_t sets, ways;
    uint32_t set_mask;      /* sets - 1 when sets is a power of two (every preset), else 0 */
    uint32_t *line;         /* line number + 1; 0 = invalid (host addresses below 2^38) */
    uint32_t *stamp;        /* L1: the tick of the last use */
    uint8_t *rank;          /* L2, LLC: the order of use within the set (0 the most recent) */
    uint8_t *mru;           /* per set, the way used last: looked at first (the search's
                               shortcut; which way holds a line is read from line[]) */
} dcache_level;

/* One L1 with what the search skips: the lines of the last two distinct uses of this L1,
 * the last first, and where each sits in it. An L1 line is evicted only after its set's
 * other ways were all used after it, so the last two lines used (with 2 or more ways) are
 * still where they were put: using either again is a hit found without a search. The
 * last one is the most recent in its set and its stamp says so already: using it again
 * changes nothing (only the order of the lines' last uses matters, and no other line of
 * this L1 was used in between). 0: none. */
typedef struct dcache_l1 {
    dcache_level c;
    uint32_t last_key[2];
    size_t last_idx[2];
} dcache_l1;

typedef struct dcache {
    int levels;             /* 2 or 3, the L1s counted once */
    /* The replay's L1 data caches shared between modes (replay.md, "One L1 for the
     * modes"): the sets whose lines this cache keeps itself (bit per set); the others are
     * the shared L1's, kept by the replay, and a page-table entry read into one of those
     * first has `take` copy it here. take NULL: every set is this cache's own. */
    uint64_t own;
    void (*take)(struct dcache *d, uint32_t set);
    void *take_ctx;
    dcache_l1 l1[2];        /* DC_DATA, DC_CODE */
    dcache_level lv[3];     /* lv[1] L2, lv[2] LLC (lv[0] unused: the L1s above) */
    uint32_t tick;
    uint64_t refs[DC_WHERE];    /* page-table entry reads, by where they were found */
    uint64_t data[DC_WHERE];    /* the program's accesses, by where they were found (L1: its L1) */
} dcache;

/* bytes and ways per level, L1 data, L2, LLC (0 bytes: no such level), and the L1
 * instruction cache's. False when out of memory or a level has more than 255 ways. */
bool dcache_init(dcache *d, const uint32_t bytes[3], const uint32_t ways[3], uint32_t l1i_bytes, uint32_t l1i_ways);
void dcache_free(dcache *d);
int dcache_search(dcache *d, uint64_t hpa, int which);
/* A line not in the L1: where L2 or the LLC found it (DC_L2 .. DC_MEMORY), those levels
 * filled, the L1 untouched (the shared L1 keeps it). */
int dcache_below(dcache *d, uint64_t hpa);
/* One set of L1 `which`: its lines (line number + 1), the most recent first; how many. */
uint32_t dcache_l1_set_read(const dcache *d, int which, uint32_t set, uint32_t *keys);
/* The set made to hold keys[0..n) (the most recent first) and nothing else; the L1's
 * memory of its last two lines forgotten. */
void dcache_l1_set_load(dcache *d, int which, uint32_t set, const uint32_t *keys, uint32_t n);

/* Where the line holding hpa was found through L1 `which` (DC_L1 .. DC_MEMORY); the
 * levels above it filled. The last two lines of that L1 need no search. */
static inline int dcache_lookup(dcache *d, uint64_t hpa, int which)
{
    dcache_l1 *l = &d->l1[which];
    uint32_t key = (uint32_t)(hpa >> 6) + 1;
    if (key == l->last_key[0])
        return DC_L1;
    if (key == l->last_key[1] && d->tick < UINT32_MAX - 1) {     /* else next_tick: the stamps restamped */
        size_t idx = l->last_idx[1];
        l->c.stamp[idx] = ++d->tick;
        l->last_key[1] = l->last_key[0];
        l->last_idx[1] = l->last_idx[0];
        l->last_key[0] = key;
        l->last_idx[0] = idx;
        return DC_L1;
    }
    return dcache_search(d, hpa, which);
}

/* a page-table entry read: through the L1 data cache (its set made this cache's own first
 * when the replay shares the L1) */
static inline int dcache_access(dcache *d, uint64_t hpa)
{
    if (d->take) {
        uint32_t set = (uint32_t)(hpa >> 6) & d->l1[DC_DATA].c.set_mask;
        if (!(d->own >> set & 1))
            d->take(d, set);
    }
    return dcache_lookup(d, hpa, DC_DATA);
}

#endif

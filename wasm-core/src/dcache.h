/* The data caches a page-table entry read goes through (model.md 5c, "Where a reference
 * is found"): up to three levels of a physically indexed, set-associative cache of 64-byte
 * lines with LRU replacement, sized from the machine preset. A read looks in L1, then L2,
 * then the LLC; a miss at a level fills it (levels are neither inclusive nor exclusive:
 * a line found in L2 is copied into L1, nothing is written back). The program's own data
 * accesses go through the same caches, so they compete with the walk's entries. */
#ifndef VMSIM_DCACHE_H
#define VMSIM_DCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { DC_L1, DC_L2, DC_LLC, DC_MEMORY, DC_WHERE };

typedef struct dcache_level {
    uint32_t sets, ways;
    uint64_t *line;         /* line number + 1; 0 = invalid */
    uint32_t *stamp;        /* the tick of the last use */
} dcache_level;

typedef struct dcache {
    int levels;             /* 2 or 3 */
    dcache_level lv[3];
    uint32_t tick;
    uint64_t last_key;      /* the line of the last access, now in L1 at last_idx: the next */
    size_t last_idx;        /* access to it is an L1 hit found without a search */
    uint64_t refs[DC_WHERE];    /* page-table entry reads, by where they were found */
    uint64_t data[DC_WHERE];    /* the program's accesses, by where they were found */
} dcache;

/* bytes and ways per level (0 bytes: no such level). False when out of memory. */
bool dcache_init(dcache *d, const uint32_t bytes[3], const uint32_t ways[3]);
void dcache_free(dcache *d);
int dcache_access_search(dcache *d, uint64_t hpa);
/* Where the line holding hpa was found (DC_L1 .. DC_MEMORY); the levels above it filled.
 * The same line as the last access is still in L1: marked used there, no search. */
static inline int dcache_access(dcache *d, uint64_t hpa)
{
    if ((hpa >> 6) + 1 == d->last_key && d->tick != UINT32_MAX) {
        d->lv[0].stamp[d->last_idx] = ++d->tick;
        return DC_L1;
    }
    return dcache_access_search(d, hpa);
}

#endif

/* A set-associative cache with LRU replacement, the one mechanism behind the TLB, the
 * page-walk caches of each dimension and the nested TLB. Lines are tagged (address
 * space, EPT) so that a switch need not flush. Allocated once per machine; lookups and
 * fills never allocate.
 *
 * What a lookup compares (key, tag) and what replacement needs (age) are kept in arrays
 * of their own, apart from what a hit yields (cache_line): scanning the 32 ways of a
 * page-walk cache reads 256 bytes of keys, not every line. */
#ifndef VMSIM_CACHE_H
#define VMSIM_CACHE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct cache_line {
    uint64_t value, value2; /* what it yields */
    uint16_t aux;           /* rights or flags that came with the value */
} cache_line;

typedef struct cache {
    uint64_t *keys;         /* what is looked up (a page number, a prefix and level, ...) */
    uint32_t *tags;         /* address space / EPT index; must match too */
    uint64_t *age;          /* tick of the last use << 1 | 1 while valid, 0 when invalid: the
                             * victim, the first invalid line else the least recently used
                             * one, is then simply the first line of smallest age */
    cache_line *lines;      /* line i of set s is index s * ways + i in every array */
    uint32_t *filter;       /* wide sets (the fully associative walk caches) only: valid lines
                             * per hash bucket of their key, so that a zero answers a miss
                             * without scanning the set */
    uint32_t *found;        /* tick of the last lookup that found the line, */
    uint32_t *filled;       /* and of its last fill: with mark, what the access a view shows did */
    uint32_t filter_mask;
    uint32_t sets, ways;
    uint32_t tick;
    uint32_t mark;          /* the tick when the access being shown began (cache_mark) */
} cache;

/* One valid line as a view lists it (cache_contents). */
typedef struct cache_entry {
    uint64_t key;
    uint32_t tag;
    uint32_t set, rank;     /* its set, and its place in the set's LRU order (0: most recently used) */
    bool served;            /* a lookup found it since cache_mark (and it was not refilled after) */
    bool filled;            /* filled (or refilled) since cache_mark */
    cache_line line;
} cache_entry;

/* entries 0 = no cache; ways 0 = fully associative. entries must be a multiple of ways. */
bool cache_init(cache *c, uint32_t entries, uint32_t ways);
void cache_free(cache *c);
static inline bool cache_on(const cache *c)
{
    return c->lines != 0;
}
cache_line *cache_find(cache *c, uint64_t key, uint32_t tag);
void cache_fill(cache *c, uint64_t key, uint32_t tag, uint64_t value, uint64_t value2, uint16_t aux);
void cache_drop(cache *c, uint64_t key, uint32_t tag);
void cache_flush(cache *c);
/* Drops every line whose tag matches (tag_mask selects the tag bits compared). */
void cache_flush_tag(cache *c, uint32_t tag, uint32_t tag_mask);
/* An access begins: what it finds and fills from here on is what cache_contents marks. */
static inline void cache_mark(cache *c)
{
    c->mark = c->tick;
}
/* The valid lines, most recently used first: up to max of them into out (the rest are only
 * counted). Returns how many lines are valid. Allocates nothing; not for the hot path. */
uint32_t cache_contents(const cache *c, cache_entry *out, uint32_t max);

#endif

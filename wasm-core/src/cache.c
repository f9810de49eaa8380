#include "cache.h"

#include <stdlib.h>
#include <string.h>

#define FILTER_MIN_WAYS 16     /* narrower sets are scanned as quickly as a filter is read */

bool cache_init(cache *c, uint32_t entries, uint32_t ways)
{
    memset(c, 0, sizeof *c);
    if (!entries)
        return true;
    if (!ways || ways > entries)
        ways = entries;
    c->ways = ways;
    c->sets = entries / ways;
    size_t n = (size_t)c->sets * ways;
    c->keys = calloc(n, sizeof *c->keys);
    c->tags = calloc(n, sizeof *c->tags);
    c->age = calloc(n, sizeof *c->age);
    c->lines = calloc(n, sizeof *c->lines);
    c->found = calloc(n, sizeof *c->found);
    c->filled = calloc(n, sizeof *c->filled);
    if (ways >= FILTER_MIN_WAYS) {
        uint32_t buckets = 64;
        while (buckets < 2 * n)
            buckets *= 2;
        c->filter = calloc(buckets, sizeof *c->filter);
        c->filter_mask = buckets - 1;
        if (!c->filter) {
            cache_free(c);
            return false;
        }
    }
    if (!c->keys || !c->tags || !c->age || !c->lines || !c->found || !c->filled) {
        cache_free(c);
        return false;
    }
    return true;
}

void cache_free(cache *c)
{
    free(c->keys);
    free(c->tags);
    free(c->age);
    free(c->lines);
    free(c->filter);
    free(c->found);
    free(c->filled);
    memset(c, 0, sizeof *c);
}

/* Index of the first line of key's set. */
static size_t set_of(const cache *c, uint64_t key)
{
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    uint32_t sets = c->sets, i = (uint32_t)(h >> 32);
    return (size_t)((sets & (sets - 1)) == 0 ? i & (sets - 1) : i % sets) * c->ways;
}

static inline bool holds(const cache *c, size_t i, uint64_t key, uint32_t tag)
{
    return c->keys[i] == key && (c->age[i] & 1) && c->tags[i] == tag;
}

/* Marks line i as just used. */
static inline void touch(cache *c, size_t i)
{
    c->age[i] = (uint64_t)++c->tick << 1 | 1;
}

/* The filter's counter for key (another part of the same product as the set index). */
static inline uint32_t *filter_count(const cache *c, uint64_t key)
{
    return &c->filter[(uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 40) & c->filter_mask];
}

/* The valid line of the set holding key with this tag, or -1. */
static long find_in_set(const cache *c, size_t set, uint64_t key, uint32_t tag)
{
    if (c->filter && *filter_count(c, key) == 0)
        return -1;              /* no valid line has this key */
    for (size_t i = set; i < set + c->ways; i++)
        if (holds(c, i, key, tag))
            return (long)i;
    return -1;
}

cache_line *cache_find(cache *c, uint64_t key, uint32_t tag)
{
    if (!c->lines)
        return NULL;
    long i = find_in_set(c, set_of(c, key), key, tag);
    if (i < 0)
        return NULL;
    touch(c, (size_t)i);
    c->found[i] = c->tick;
    return &c->lines[i];
}

/* The first line of smallest age: the first invalid line, else the least recently used. */
static size_t oldest_in_set(const cache *c, size_t set)
{
    const uint64_t *age = c->age + set;
    uint64_t min = age[0];
    uint32_t victim = 0;
    for (uint32_t w = 1; w < c->ways; w++)
        if (age[w] < min) {
            min = age[w];
            victim = w;
        }
    return set + victim;
}

/* Replaces the line already holding key, else the first invalid line of the set, else
 * the least recently used one. */
void cache_fill(cache *c, uint64_t key, uint32_t tag, uint64_t value, uint64_t value2, uint16_t aux)
{
    if (!c->lines)
        return;
    size_t set = set_of(c, key);
    long held = find_in_set(c, set, key, tag);
    size_t victim = held >= 0 ? (size_t)held : oldest_in_set(c, set);
    if (c->filter && held < 0) {
        if (c->age[victim] & 1)
            --*filter_count(c, c->keys[victim]);
        ++*filter_count(c, key);
    }
    c->keys[victim] = key;
    c->tags[victim] = tag;
    touch(c, victim);
    c->filled[victim] = c->tick;
    c->lines[victim] = (cache_line){.value = value, .value2 = value2, .aux = aux};
}

void cache_drop(cache *c, uint64_t key, uint32_t tag)
{
    if (!c->lines)
        return;
    long i = find_in_set(c, set_of(c, key), key, tag);
    if (i >= 0) {
        touch(c, (size_t)i);        /* found as by cache_find, then dropped */
        c->age[i] = 0;
        if (c->filter)
            --*filter_count(c, key);
    }
}

void cache_flush(cache *c)
{
    if (c->lines)
        memset(c->age, 0, (size_t)c->sets * c->ways * sizeof *c->age);
    if (c->filter)
        memset(c->filter, 0, ((size_t)c->filter_mask + 1) * sizeof *c->filter);
}

void cache_flush_tag(cache *c, uint32_t tag, uint32_t tag_mask)
{
    for (size_t i = 0; c->lines && i < (size_t)c->sets * c->ways; i++)
        if ((c->age[i] & 1) && (c->tags[i] & tag_mask) == (tag & tag_mask)) {
            c->age[i] = 0;
            if (c->filter)
                --*filter_count(c, c->keys[i]);
        }
}

/* Insertion of line i into out[0..n) ordered by age, newest first, keeping at most max. */
static uint32_t keep_newest(const cache *c, uint32_t *out, uint32_t n, uint32_t max, uint32_t i)
{
    uint32_t at = n < max ? n : max;
    while (at > 0 && c->age[out[at - 1]] < c->age[i])
        at--;
    if (at >= max)
        return n;
    uint32_t last = n < max ? n : max - 1;
    memmove(out + at + 1, out + at, (size_t)(last - at) * sizeof *out);
    out[at] = i;
    return n < max ? n + 1 : n;
}

uint32_t cache_contents(const cache *c, cache_entry *out, uint32_t max)
{
    uint32_t idx[256], valid = 0, kept = 0;
    if (max > 256)
        max = 256;
    for (uint32_t i = 0; c->lines && i < c->sets * c->ways; i++)
        if (c->age[i] & 1) {
            valid++;
            if (max)
                kept = keep_newest(c, idx, kept, max, i);
        }
    for (uint32_t k = 0; k < kept; k++) {
        uint32_t i = idx[k], set = i / c->ways, rank = 0;
        for (uint32_t w = set * c->ways; w < (set + 1) * c->ways; w++)
            rank += (c->age[w] & 1) && c->age[w] > c->age[i];
        out[k] = (cache_entry){.key = c->keys[i], .tag = c->tags[i], .set = set, .rank = rank,
                               .served = c->found[i] > c->mark && c->found[i] > c->filled[i],
                               .filled = c->filled[i] > c->mark,
                               .line = c->lines[i]};
    }
    return valid;
}

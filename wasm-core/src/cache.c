#include "cache.h"

#include <stdlib.h>
#include <string.h>

bool cache_init(cache *c, uint32_t entries, uint32_t ways)
{
    memset(c, 0, sizeof *c);
    if (!entries)
        return true;
    if (!ways || ways > entries)
        ways = entries;
    c->ways = ways;
    c->sets = entries / ways;
    c->lines = calloc((size_t)c->sets * ways, sizeof *c->lines);
    return c->lines != NULL;
}

void cache_free(cache *c)
{
    free(c->lines);
    memset(c, 0, sizeof *c);
}

static cache_line *set_of(cache *c, uint64_t key)
{
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    return c->lines + (size_t)((h >> 32) % c->sets) * c->ways;
}

cache_line *cache_find(cache *c, uint64_t key, uint32_t tag)
{
    if (!c->lines)
        return NULL;
    cache_line *set = set_of(c, key);
    for (uint32_t w = 0; w < c->ways; w++) {
        if (set[w].valid && set[w].key == key && set[w].tag == tag) {
            set[w].lru = ++c->tick;
            return &set[w];
        }
    }
    return NULL;
}

void cache_fill(cache *c, uint64_t key, uint32_t tag, uint64_t value, uint64_t value2, uint16_t aux)
{
    if (!c->lines)
        return;
    cache_line *set = set_of(c, key), *victim = &set[0];
    for (uint32_t w = 0; w < c->ways; w++) {
        if (set[w].valid && set[w].key == key && set[w].tag == tag) {
            victim = &set[w];
            break;
        }
        if (!set[w].valid) {
            if (victim->valid)
                victim = &set[w];
        } else if (victim->valid && set[w].lru < victim->lru) {
            victim = &set[w];
        }
    }
    *victim = (cache_line){.key = key, .value = value, .value2 = value2, .tag = tag, .aux = aux, .valid = true,
                           .lru = ++c->tick};
}

void cache_drop(cache *c, uint64_t key, uint32_t tag)
{
    cache_line *l = cache_find(c, key, tag);
    if (l)
        l->valid = false;
}

void cache_flush(cache *c)
{
    if (c->lines)
        memset(c->lines, 0, (size_t)c->sets * c->ways * sizeof *c->lines);
}

void cache_flush_tag(cache *c, uint32_t tag, uint32_t tag_mask)
{
    for (size_t i = 0; c->lines && i < (size_t)c->sets * c->ways; i++)
        if (c->lines[i].valid && (c->lines[i].tag & tag_mask) == (tag & tag_mask))
            c->lines[i].valid = false;
}

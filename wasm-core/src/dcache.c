#include "dcache.h"

#include <stdlib.h>
#include <string.h>

bool dcache_init(dcache *d, const uint32_t bytes[3], const uint32_t ways[3])
{
    memset(d, 0, sizeof *d);
    for (int i = 0; i < 3 && bytes[i]; i++) {
        dcache_level *l = &d->lv[i];
        l->ways = ways[i];
        l->sets = bytes[i] / 64 / ways[i];
        size_t n = (size_t)l->sets * l->ways;
        l->line = calloc(n, sizeof *l->line);
        l->stamp = calloc(n, sizeof *l->stamp);
        d->levels = i + 1;
        if (!l->line || !l->stamp) {
            dcache_free(d);
            return false;
        }
    }
    return true;
}

void dcache_free(dcache *d)
{
    for (int i = 0; i < 3; i++) {
        free(d->lv[i].line);
        free(d->lv[i].stamp);
    }
    memset(d, 0, sizeof *d);
}

/* The tick wraps after 2^32 uses: every stamp is then set back to 0 (the order within a
 * set is lost once, the contents kept). */
static uint32_t next_tick(dcache *d)
{
    if (++d->tick == 0) {
        for (int i = 0; i < d->levels; i++)
            memset(d->lv[i].stamp, 0, (size_t)d->lv[i].sets * d->lv[i].ways * sizeof *d->lv[i].stamp);
        d->tick = 1;
        d->last_key = 0;
    }
    return d->tick;
}

int dcache_access_search(dcache *d, uint64_t hpa)
{
    uint64_t key = (hpa >> 6) + 1;
    uint32_t now = next_tick(d);
    if (key == d->last_key) {           /* the same line again: it is still in L1 */
        d->lv[0].stamp[d->last_idx] = now;
        return DC_L1;
    }
    int found = DC_MEMORY;
    size_t base[3];
    for (int i = 0; i < d->levels; i++) {
        dcache_level *l = &d->lv[i];
        base[i] = (size_t)(((hpa >> 6) % l->sets) * l->ways);
        for (uint32_t w = 0; w < l->ways; w++)
            if (l->line[base[i] + w] == key) {
                l->stamp[base[i] + w] = now;
                found = i;
                if (i == 0)
                    d->last_idx = base[0] + w;
                break;
            }
        if (found == i)
            break;
    }
    /* fill the levels that missed: the first invalid way, else the least recently used */
    for (int i = 0; i < d->levels && i < found; i++) {
        dcache_level *l = &d->lv[i];
        size_t victim = base[i];
        for (uint32_t w = 0; w < l->ways; w++) {
            size_t k = base[i] + w;
            if (!l->line[k]) {
                victim = k;
                break;
            }
            if (l->stamp[k] < l->stamp[victim])
                victim = k;
        }
        l->line[victim] = key;
        l->stamp[victim] = now;
        if (i == 0)
            d->last_idx = victim;
    }
    d->last_key = d->levels ? key : 0;
    return found;
}

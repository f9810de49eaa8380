#include "dcache.h"

#include <stdlib.h>
#include <string.h>

/* An L1 keeps a stamp a line (the tick of its last use: its hits are many and cheap);
 * L2 and the LLC keep each set's order of use as a byte a line (0 the most recent,
 * RANK_EMPTY an invalid way): a quarter of the memory, the same order. */
#define RANK_EMPTY 255
static bool level_init(dcache_level *l, uint32_t bytes, uint32_t ways, bool l1)
{
    l->ways = ways;
    l->sets = ways ? bytes / 64 / ways : 0;
    l->set_mask = (l->sets & (l->sets - 1)) == 0 ? l->sets - 1 : 0;
    size_t n = (size_t)l->sets * l->ways;
    l->line = calloc(n, sizeof *l->line);
    if (l1)
        l->stamp = calloc(n, sizeof *l->stamp);
    else if ((l->rank = malloc(n)))
        memset(l->rank, RANK_EMPTY, n);
    l->mru = calloc(l->sets, 1);
    return l->line && (l1 ? l->stamp != NULL : l->rank != NULL) && l->mru && ways >= 1 && ways < RANK_EMPTY &&
           l->sets >= 1;
}

static void level_free(dcache_level *l)
{
    free(l->line);
    free(l->stamp);
    free(l->rank);
    free(l->mru);
}

bool dcache_init(dcache *d, const uint32_t bytes[3], const uint32_t ways[3], uint32_t l1i_bytes, uint32_t l1i_ways)
{
    memset(d, 0, sizeof *d);
    if (!bytes[0] || !bytes[1])
        return false;
    d->levels = bytes[2] ? 3 : 2;
    bool ok = level_init(&d->l1[DC_DATA].c, bytes[0], ways[0], true) &&
              level_init(&d->l1[DC_CODE].c, l1i_bytes, l1i_ways, true);
    for (int i = 1; ok && i < d->levels; i++)
        ok = level_init(&d->lv[i], bytes[i], ways[i], false);
    if (!ok)
        dcache_free(d);
    return ok;
}

void dcache_free(dcache *d)
{
    for (int i = 0; i < 3; i++)
        level_free(&d->lv[i]);
    level_free(&d->l1[DC_DATA].c);
    level_free(&d->l1[DC_CODE].c);
    memset(d, 0, sizeof *d);
}

/* Each valid line's stamp replaced by its rank in its set's order of use (1 the least
 * recent): the same order, in stamps no larger than the ways. */
static void restamp(dcache_level *l)
{
    for (size_t base = 0; base < (size_t)l->sets * l->ways; base += l->ways) {
        uint32_t rank[256];
        for (uint32_t w = 0; w < l->ways; w++) {
            rank[w] = 0;
            if (l->line[base + w])
                for (uint32_t v = 0; v < l->ways; v++)
                    rank[w] += l->line[base + v] && l->stamp[base + v] <= l->stamp[base + w] &&
                               (l->stamp[base + v] < l->stamp[base + w] || v <= w);
        }
        for (uint32_t w = 0; w < l->ways; w++)
            l->stamp[base + w] = rank[w];
    }
}

/* The tick counts uses of a line other than its L1's last one; before it wraps (after
 * 2^32), every L1 stamp becomes its rank in its set, and the count goes on above the
 * ways: the order of use is kept exactly, whatever the length of the trace (what the
 * replay's shared L1 relies on: an L1's hits and misses follow from that order alone). */
static uint32_t next_tick(dcache *d)
{
    if (d->tick >= UINT32_MAX - 1) {
        restamp(&d->l1[DC_DATA].c);
        restamp(&d->l1[DC_CODE].c);
        d->tick = 256;
    }
    return ++d->tick;
}

static inline size_t set_of(const dcache_level *l, uint32_t line)
{
    return l->set_mask ? line & l->set_mask : line % l->sets;
}

/* The way of set `set` holding key, or ways when none; the set's last used way first. */
static inline uint32_t way_of(const dcache_level *l, size_t set, uint32_t key)
{
    const uint32_t *ln = l->line + set * l->ways;
    uint32_t w = l->mru[set];
    if (ln[w] != key)
        for (w = 0; w < l->ways && ln[w] != key; w++)
            ;
    return w;
}

/* way w of the set at base becomes the set's most recent (L2, LLC) */
static void use_rank(dcache_level *l, size_t base, uint32_t w)
{
    uint8_t *rk = l->rank + base, r = rk[w];
    for (uint32_t v = 0; v < l->ways; v++)
        rk[v] += rk[v] < r;
    rk[w] = 0;
}

/* key goes into set `set` of L2 or the LLC: the first invalid way, else the least recently
 * used (the highest rank) */
static void fill_ranked(dcache_level *l, size_t set, uint32_t key)
{
    size_t base = set * l->ways;
    uint32_t victim = 0;
    for (uint32_t w = 0; w < l->ways; w++) {
        if (!l->line[base + w]) {
            victim = w;
            break;
        }
        if (l->rank[base + w] > l->rank[base + victim])
            victim = w;
    }
    l->line[base + victim] = key;
    l->rank[base + victim] = RANK_EMPTY;    /* older than every line: all move down one */
    use_rank(l, base, victim);
    l->mru[set] = (uint8_t)victim;
}

/* key goes into set `set` of an L1: the first invalid way, else the least recently used. Its index. */
static size_t fill(dcache_level *l, size_t set, uint32_t key, uint32_t now)
{
    size_t base = set * l->ways, victim = base;
    for (uint32_t w = 0; w < l->ways; w++) {
        size_t k = base + w;
        if (!l->line[k]) {
            victim = k;
            break;
        }
        if (l->stamp[k] < l->stamp[victim])
            victim = k;
    }
    l->line[victim] = key;
    l->stamp[victim] = now;
    l->mru[set] = (uint8_t)(victim - base);
    return victim;
}

/* key is now the last line of this L1, at idx */
static inline void remember(dcache_l1 *l1, uint32_t key, size_t idx)
{
    if (l1->c.ways >= 2) {
        l1->last_key[1] = l1->last_key[0];
        l1->last_idx[1] = l1->last_idx[0];
    }
    l1->last_key[0] = key;
    l1->last_idx[0] = idx;
}

/* Not in the L1: L2, then the LLC; the levels that missed filled. */
static int lower_levels(dcache *d, uint32_t line)
{
    uint32_t key = line + 1;
    int found = DC_MEMORY;
    size_t set[3] = {0, 0, 0};
    for (int i = 1; i < d->levels; i++) {
        dcache_level *l = &d->lv[i];
        set[i] = set_of(l, line);
        uint32_t w = way_of(l, set[i], key);
        if (w < l->ways) {
            use_rank(l, set[i] * l->ways, w);
            l->mru[set[i]] = (uint8_t)w;
            found = i;
            break;
        }
    }
    for (int i = found < d->levels ? found : d->levels; i-- > 1;)
        fill_ranked(&d->lv[i], set[i], key);
    return found;
}

/* Not in the L1: the levels below, then the L1 filled. */
static int __attribute__((noinline)) below_l1(dcache *d, dcache_l1 *l1, uint32_t line, size_t l1_set, uint32_t now)
{
    int found = lower_levels(d, line);
    remember(l1, line + 1, fill(&l1->c, l1_set, line + 1, now));
    return found;
}

int dcache_below(dcache *d, uint64_t hpa)
{
    return lower_levels(d, (uint32_t)(hpa >> 6));
}

uint32_t dcache_l1_set_read(const dcache *d, int which, uint32_t set, uint32_t *keys)
{
    const dcache_level *l = &d->l1[which].c;
    size_t base = (size_t)set * l->ways;
    uint32_t n = 0;
    for (uint32_t w = 0; w < l->ways; w++)
        if (l->line[base + w]) {      /* insertion by stamp, the most recent first */
            uint32_t k = n++, s = l->stamp[base + w];
            for (; k && l->stamp[base + keys[k - 1]] < s; k--)
                keys[k] = keys[k - 1];
            keys[k] = w;
        }
    for (uint32_t k = 0; k < n; k++)
        keys[k] = l->line[base + keys[k]];
    return n;
}

void dcache_l1_set_load(dcache *d, int which, uint32_t set, const uint32_t *keys, uint32_t n)
{
    dcache_l1 *l1 = &d->l1[which];
    dcache_level *l = &l1->c;
    size_t base = (size_t)set * l->ways;
    uint32_t now = 0;
    for (uint32_t k = 0; k < l->ways; k++)
        now = next_tick(d);     /* the least recent of them below any stamp to come */
    for (uint32_t w = 0; w < l->ways; w++) {
        l->line[base + w] = w < n ? keys[w] : 0;
        l->stamp[base + w] = w < n ? now - w : 0;
    }
    l->mru[set] = 0;
    l1->last_key[0] = l1->last_key[1] = 0;
}

int dcache_search(dcache *d, uint64_t hpa, int which)
{
    uint32_t line = (uint32_t)(hpa >> 6), key = line + 1;
    uint32_t now = next_tick(d);
    dcache_l1 *l1 = &d->l1[which];
    if (key == l1->last_key[0])         /* (after the tick wrapped) still the most recent */
        return DC_L1;
    if (key == l1->last_key[1]) {       /* the one before: still in this L1 */
        size_t idx = l1->last_idx[1];
        l1->c.stamp[idx] = now;
        l1->last_key[1] = l1->last_key[0];
        l1->last_idx[1] = l1->last_idx[0];
        l1->last_key[0] = key;
        l1->last_idx[0] = idx;
        return DC_L1;
    }
    dcache_level *l = &l1->c;
    size_t set = set_of(l, line);
    uint32_t w = way_of(l, set, key);
    if (w == l->ways)
        return below_l1(d, l1, line, set, now);
    size_t k = set * l->ways + w;
    l->stamp[k] = now;
    l->mru[set] = (uint8_t)w;
    remember(l1, key, k);
    return DC_L1;
}

#include "mem.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK_FRAMES 64u

static uint32_t hash_pfn(uint64_t pfn, uint32_t cap)
{
    /* Fibonacci hashing: consecutive table frames spread over the slots. */
    return (uint32_t)((pfn * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

bool mem_init(mem *m, uint32_t max_frames)
{
    memset(m, 0, sizeof *m);
    m->cap = 64;
    m->max_frames = max_frames;
    m->slots = calloc(m->cap, sizeof *m->slots);
    return m->slots != NULL;
}

void mem_free(mem *m)
{
    for (uint32_t i = 0; i < m->nchunks; i++)
        free(m->chunks[i]);
    free(m->chunks);
    free(m->slots);
    memset(m, 0, sizeof *m);
}

static uint8_t *hash_find(const mem *m, uint64_t key)
{
    uint32_t i = hash_pfn(key, m->cap);
    while (m->slots[i].pfn_plus1) {
        if (m->slots[i].pfn_plus1 == key)
            return m->slots[i].frame;
        i = (i + 1) & (m->cap - 1);
    }
    return NULL;
}

uint8_t *mem_frame_slow(mem *m, uint64_t key)
{
    uint8_t *f = hash_find(m, key);
    if (f) {
        uint32_t i = (uint32_t)(key - 1) & (MEM_CACHE_SETS - 1);
        m->cache_key[1][i] = m->cache_key[0][i];
        m->cache_frame[1][i] = m->cache_frame[0][i];
        m->cache_key[0][i] = key;
        m->cache_frame[0][i] = f;
    }
    return f;
}

static bool grow(mem *m)
{
    uint32_t ncap = m->cap * 2;
    mem_slot *ns = calloc(ncap, sizeof *ns);
    if (!ns)
        return false;
    for (uint32_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].pfn_plus1)
            continue;
        uint32_t j = hash_pfn(m->slots[i].pfn_plus1, ncap);
        while (ns[j].pfn_plus1)
            j = (j + 1) & (ncap - 1);
        ns[j] = m->slots[i];
    }
    free(m->slots);
    m->slots = ns;
    m->cap = ncap;
    return true;
}

static uint8_t *new_frame(mem *m)
{
    if (m->nchunks == 0 || m->chunk_used == CHUNK_FRAMES) {
        uint8_t **nc = realloc(m->chunks, (m->nchunks + 1) * sizeof *nc);
        if (!nc)
            return NULL;
        m->chunks = nc;
        m->chunks[m->nchunks] = calloc(CHUNK_FRAMES, FRAME_SIZE);
        if (!m->chunks[m->nchunks])
            return NULL;
        m->nchunks++;
        m->chunk_used = 0;
    }
    return m->chunks[m->nchunks - 1] + (size_t)FRAME_SIZE * m->chunk_used++;
}

uint8_t *mem_frame_create(mem *m, uint64_t hpa)
{
    uint8_t *f = mem_frame(m, hpa);
    if (f)
        return f;
    if (m->used >= m->max_frames)
        return NULL;
    if ((m->used + 1) * 2 > m->cap && !grow(m))
        return NULL;
    f = new_frame(m);
    if (!f)
        return NULL;
    uint64_t key = (hpa >> FRAME_SHIFT) + 1;
    uint32_t i = hash_pfn(key, m->cap);
    while (m->slots[i].pfn_plus1)
        i = (i + 1) & (m->cap - 1);
    m->slots[i].pfn_plus1 = key;
    m->slots[i].frame = f;
    m->used++;
    return f;
}

bool mem_write_existing(mem *m, uint64_t hpa, int size, uint64_t value)
{
    uint8_t *f = mem_frame(m, hpa);
    if (!f)
        return false;
    uint8_t *p = f + (hpa & (FRAME_SIZE - 1));
    p[0] = (uint8_t)value;
    p[1] = (uint8_t)(value >> 8);
    p[2] = (uint8_t)(value >> 16);
    p[3] = (uint8_t)(value >> 24);
    if (size == 8) {
        p[4] = (uint8_t)(value >> 32);
        p[5] = (uint8_t)(value >> 40);
        p[6] = (uint8_t)(value >> 48);
        p[7] = (uint8_t)(value >> 56);
    }
    return true;
}

/* Simulated host physical memory: sparse 4 KiB frames, zero until written.
 * Frames are created only while building tables; translating never allocates. */
#ifndef VMSIM_MEM_H
#define VMSIM_MEM_H

#include <stdint.h>
#include <stdbool.h>

#define FRAME_SHIFT 12
#define FRAME_SIZE 4096u

typedef struct mem_slot {
    uint64_t pfn_plus1;     /* 0 = empty slot */
    uint8_t *frame;
} mem_slot;

/* A 2-way set-associative pfn -> frame cache in front of the hash: a walk alternates
 * between guest and nested table frames, and two ways keep both when their frame
 * numbers share a set. Keys and frames are arrays of their own, so that the frame is
 * loaded at once, in parallel with the key it is checked against: every level of a
 * walk waits for this lookup. */
#define MEM_CACHE_SETS 2048u

typedef struct mem {
    uint64_t cache_key[2][MEM_CACHE_SETS];  /* pfn + 1, 0 = empty; way 0 the most recently filled */
    uint8_t *cache_frame[2][MEM_CACHE_SETS];
    mem_slot *slots;
    uint32_t cap;           /* power of two */
    uint32_t used;
    uint32_t max_frames;
    uint8_t **chunks;       /* frames come from chunks of 64 */
    uint32_t nchunks, chunk_used;
} mem;

bool mem_init(mem *m, uint32_t max_frames);
void mem_free(mem *m);

uint8_t *mem_frame_slow(mem *m, uint64_t key);

/* The frame holding hpa, or NULL if never written. Walks touch a few hot table frames
 * again and again: the cache in front of the hash table answers most lookups with one
 * or two compares, inline in the walk. */
static inline uint8_t *mem_frame(mem *m, uint64_t hpa)
{
    uint64_t pfn = hpa >> FRAME_SHIFT, key = pfn + 1;
    uint32_t i = (uint32_t)pfn & (MEM_CACHE_SETS - 1);
    if (m->cache_key[0][i] == key)
        return m->cache_frame[0][i];
    if (m->cache_key[1][i] == key)
        return m->cache_frame[1][i];
    return mem_frame_slow(m, key);
}
/* Creates the frame (zeroed) if needed; NULL when the frame limit is reached. */
uint8_t *mem_frame_create(mem *m, uint64_t hpa);

/* Entries are little-endian in simulated memory, whatever the host's byte order. */
static inline uint64_t mem_read(mem *m, uint64_t hpa, int size)
{
    const uint8_t *f = mem_frame(m, hpa);
    if (!f)
        return 0;
    const uint8_t *p = f + (hpa & (FRAME_SIZE - 1));
    uint64_t v = (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24;
    if (size == 8)
        v |= (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
    return v;
}
/* mem_read(m, table + off, 8) for a frame-aligned table and off < FRAME_SIZE: the frame
 * lookup then waits only for the table address, not for the entry's offset in it, one
 * step less at every level of a walk. */
static inline uint64_t mem_read_entry(mem *m, uint64_t table, uint32_t off)
{
    const uint8_t *f = mem_frame(m, table);
    if (!f)
        return 0;
    const uint8_t *p = f + off;
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
           (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}
/* Writes a 4- or 8-byte entry into an existing frame; returns false if the frame does
 * not exist. */
bool mem_write_existing(mem *m, uint64_t hpa, int size, uint64_t value);

#endif

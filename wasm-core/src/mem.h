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

#define MEM_CACHE 4096u                /* direct-mapped pfn -> frame cache in front of the hash */

typedef struct mem {
    uint64_t cache_key[MEM_CACHE];  /* pfn + 1, 0 = empty */
    uint8_t *cache_frame[MEM_CACHE];
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
 * again and again: a direct-mapped cache in front of the hash table answers most
 * lookups with one compare, inline in the walk. */
static inline uint8_t *mem_frame(mem *m, uint64_t hpa)
{
    uint64_t key = (hpa >> FRAME_SHIFT) + 1;
    uint32_t c = (uint32_t)key & (MEM_CACHE - 1);
    if (m->cache_key[c] == key)
        return m->cache_frame[c];
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
/* Writes into an existing frame; returns false if the frame does not exist. */
bool mem_write_existing(mem *m, uint64_t hpa, int size, uint64_t value);

#endif

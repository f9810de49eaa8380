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

typedef struct mem {
    mem_slot *slots;
    uint32_t cap;           /* power of two */
    uint32_t used;
    uint32_t max_frames;
    uint8_t **chunks;       /* frames come from chunks of 64 */
    uint32_t nchunks, chunk_used;
} mem;

bool mem_init(mem *m, uint32_t max_frames);
void mem_free(mem *m);

/* The frame holding hpa, or NULL if never written. */
uint8_t *mem_frame(const mem *m, uint64_t hpa);
/* Creates the frame (zeroed) if needed; NULL when the frame limit is reached. */
uint8_t *mem_frame_create(mem *m, uint64_t hpa);

uint64_t mem_read(const mem *m, uint64_t hpa, int size);
/* Writes into an existing frame; returns false if the frame does not exist. */
bool mem_write_existing(mem *m, uint64_t hpa, int size, uint64_t value);

#endif

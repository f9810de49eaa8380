/* An example program for hw-lab/run trace: a pointer chase over PAGES pages, one node per
 * page at a different cache line of each, linked into one random cycle (Sattolo's
 * algorithm, fixed seed), followed for HOPS hops. Every hop lands on another page: once
 * the pages outnumber the TLB's entries, nearly every load is a TLB miss and a page walk.
 *   pointer-chase [PAGES=2048] [HOPS=100000] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

int main(int argc, char **argv)
{
    size_t pages = argc > 1 ? strtoul(argv[1], NULL, 10) : 2048, hops = argc > 2 ? strtoul(argv[2], NULL, 10) : 100000;
    if (pages < 2 || pages > (1u << 20)) {
        fprintf(stderr, "pointer-chase: PAGES must be 2..1048576\n");
        return 2;
    }
    char *mem = mmap(NULL, pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint32_t *order = malloc(pages * sizeof *order);
    if (mem == MAP_FAILED || !order)
        return 1;
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < pages; i++)
        order[i] = (uint32_t)i;
    for (size_t i = pages - 1; i > 0; i--) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        size_t j = s % i;
        uint32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
#define NODE(i) ((void **)(mem + (size_t)(i) * 4096 + ((size_t)(i) * 64) % 4096))
    for (size_t i = 0; i < pages; i++)
        *NODE(i) = NODE(order[i]);
    void **p = NODE(0);
    for (size_t h = 0; h < hops; h++)
        p = (void **)*p;
    printf("pointer chase: %zu pages, %zu hops, ended at %p\n", pages, hops, (void *)p);
    return 0;
}

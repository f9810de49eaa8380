/* An example program for hw-lab/run trace: a sequential scan of PAGES pages, one 8-byte
 * load per 64-byte cache line, PASSES times, after writing each line once. Consecutive
 * loads share a page 63 times in 64: the TLB misses once per page per pass.
 *   sequential-scan [PAGES=2048] [PASSES=2] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

int main(int argc, char **argv)
{
    size_t pages = argc > 1 ? strtoul(argv[1], NULL, 10) : 2048, passes = argc > 2 ? strtoul(argv[2], NULL, 10) : 2;
    if (pages < 1 || pages > (1u << 20)) {
        fprintf(stderr, "sequential-scan: PAGES must be 1..1048576\n");
        return 2;
    }
    size_t bytes = pages * 4096;
    volatile uint64_t *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return 1;
    for (size_t i = 0; i < bytes / 8; i += 8)
        mem[i] = i;
    uint64_t sum = 0;
    for (size_t p = 0; p < passes; p++)
        for (size_t i = 0; i < bytes / 8; i += 8)
            sum += mem[i];
    printf("sequential scan: %zu pages, %zu passes, sum %llu\n", pages, passes, (unsigned long long)sum);
    return 0;
}

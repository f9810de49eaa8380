/* The recorder's test program: maps N pages, prints where, and writes one byte to each
 * page in the order (7 i + 3) mod N, i = 0..N-1 (a permutation when N is not a multiple
 * of 7), so the trace must hold exactly these N stores in this order
 * (hw-lab/tests/test_hw_trace.py).
 *   touch-pages N */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
    if (n < 1 || n % 7 == 0 || n > 65536) {
        fprintf(stderr, "touch-pages: N must be 1..65536 and not a multiple of 7\n");
        return 2;
    }
    volatile char *mem = mmap(NULL, n * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return 1;
    printf("base %#llx pages %zu\n", (unsigned long long)(uintptr_t)mem, n);
    fflush(stdout);
    for (size_t i = 0; i < n; i++)
        mem[((7 * i + 3) % n) * 4096 + (i % 64) * 64] = 1;
    return 0;
}

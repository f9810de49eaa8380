/* memtouch MIB [PASSES]: touches every page of a fresh mapping and prints the time per
 * page (guest time is emulator time). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }

int main(int argc, char **argv) {
    long mib = argc > 1 ? atol(argv[1]) : 8;
    int passes = argc > 2 ? atoi(argv[2]) : 2;
    long pages = mib * 256;
    unsigned char *p = mmap(0, pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) { perror("mmap"); return 1; }
    for (int pass = 0; pass < passes; pass++) {
        double t0 = now();
        for (long i = 0; i < pages; i++) p[i * 4096] = (unsigned char)(i + pass);
        double t = now() - t0;
        printf("memtouch pass %d: %ld pages in %.3f s, %.2f us/page (%s touch)\n", pass, pages, t, t * 1e6 / pages, pass ? "second" : "first");
    }
    return 0;
}

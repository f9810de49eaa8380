/* cpuidloop [N]: rdtsc; cpuid; rdtsc, N times; min and median cycles. In v86 the TSC is
 * emulator time and cpuid does not exit to any hypervisor: compare with hw-lab on hardware. */
#include <stdio.h>
#include <stdlib.h>

static inline unsigned long long rdtsc(void) { unsigned lo, hi; __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi)); return ((unsigned long long)hi << 32) | lo; }
static int cmp(const void *a, const void *b) { unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b; return x < y ? -1 : x > y; }

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    if (n < 1) n = 1;
    unsigned long long *d = malloc(sizeof *d * n);
    for (int i = 0; i < n; i++) {
        unsigned a = 0, b, c = 0, e;
        unsigned long long t0 = rdtsc();
        __asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(e));
        d[i] = rdtsc() - t0;
    }
    qsort(d, n, sizeof *d, cmp);
    printf("cpuid x%d: min %llu median %llu max %llu TSC cycles (emulator time)\n", n, d[0], d[n / 2], d[n - 1]);
    return 0;
}

/* The program behind the published cpuid figures (the BitVisor article,
 * qiita-bitvisor-cpuid-2019 in wasm-core/data/published-figures.json), written from its
 * description and kept apart from hwlab so that hwlab's cpuid_leaf0 case is compared with
 * a second implementation:
 * 65,536 samples of unfenced `rdtsc; cpuid (leaf 0); rdtsc`, the min and the average
 * printed. Nothing is stored; the min and the sum are kept as the loop runs.
 *
 *   cc -O2 -o published_cpuid published_cpuid.c && ./published_cpuid      ->  "min 1984 avg 2778"
 */
#include <stdio.h>

#define N 65536

static inline unsigned long long rdtsc(void)
{
	unsigned int lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((unsigned long long)hi << 32) | lo;
}

static inline void cpuid(unsigned int leaf)
{
	unsigned int a = leaf, b, c = 0, d;
	__asm__ __volatile__("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
}

int main(void)
{
	unsigned long long min = ~0ull, sum = 0;
	for (int i = 0; i < N; i++) {
		unsigned long long t0 = rdtsc();
		cpuid(0);
		unsigned long long t1 = rdtsc();
		unsigned long long d = t1 - t0;
		if (d < min)
			min = d;
		sum += d;
	}
	printf("min %llu avg %llu\n", min, sum / N);
	return 0;
}

/* One timer for every case. x86: the TSC (lfence-fenced rdtsc); aarch64: the generic
 * timer's virtual count; anything else (sw_64, or HWLAB_GENERIC_ONLY): CLOCK_MONOTONIC
 * in nanoseconds. The unit and the frequency go into the result with how they were found. */
#ifndef HWLAB_TIMER_H
#define HWLAB_TIMER_H

#include <stdint.h>
#include <time.h>

#if defined(__x86_64__) && !defined(HWLAB_GENERIC_ONLY)
#define HWLAB_X86 1
#define HWLAB_TIMER_NAME "rdtsc"
#define HWLAB_TIMER_UNIT "tsc_cycles"
static inline uint64_t hw_now(void)
{
	uint32_t lo, hi;
	/* lfence before: earlier work has finished; after: later work has not started */
	__asm__ volatile("lfence; rdtsc; lfence" : "=a"(lo), "=d"(hi) : : "memory");
	return ((uint64_t)hi << 32) | lo;
}
/* rdtsc with no fence: what the published cpuid program uses. The CPU may start it
 * before earlier instructions finish and run later ones before it, so a sample is a few
 * dozen cycles shorter than with hw_now(); cpuid itself serializes. */
static inline uint64_t hw_rdtsc_unfenced(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi) : : "memory");
	return ((uint64_t)hi << 32) | lo;
}
#elif defined(__aarch64__) && !defined(HWLAB_GENERIC_ONLY)
#define HWLAB_TIMER_NAME "cntvct_el0"
#define HWLAB_TIMER_UNIT "counter_ticks"
static inline uint64_t hw_now(void)
{
	uint64_t v;
	__asm__ volatile("isb; mrs %0, cntvct_el0; isb" : "=r"(v) : : "memory");
	return v;
}
#else
#define HWLAB_TIMER_NAME "clock_gettime_monotonic"
#define HWLAB_TIMER_UNIT "ns"
static inline uint64_t hw_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
#endif

static inline uint64_t hw_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct hw_timer_info {
	const char *source;      /* HWLAB_TIMER_NAME */
	const char *unit;        /* HWLAB_TIMER_UNIT */
	double freq_hz;          /* ticks per second, best source */
	const char *freq_method; /* how freq_hz was found */
	double calibrated_hz;    /* always measured against CLOCK_MONOTONIC, as a cross-check */
};

void hw_timer_info(struct hw_timer_info *t, int quick);

#endif

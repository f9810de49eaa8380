#define _GNU_SOURCE
#include "harness.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifdef HWLAB_X86
#include <cpuid.h>
#endif

/* ---------------------------------------------------------------- samples */

int hw_samples_init(struct hw_samples *s, size_t cap)
{
	s->n = 0;
	s->cap = cap ? cap : 16;
	s->v = malloc(s->cap * sizeof(double));
	return s->v ? 0 : -1;
}

void hw_samples_push(struct hw_samples *s, double v)
{
	if (s->n == s->cap) {
		double *nv = realloc(s->v, 2 * s->cap * sizeof(double));
		if (!nv)
			return; /* keep what we have; the count in the result says how many */
		s->v = nv;
		s->cap *= 2;
	}
	s->v[s->n++] = v;
}

void hw_samples_free(struct hw_samples *s)
{
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

struct hw_summary hw_summarize(const double *v, size_t n)
{
	struct hw_summary s = {0};
	s.count = n;
	if (!n)
		return s;
	double *c = malloc(n * sizeof(double));
	if (!c)
		return s;
	memcpy(c, v, n * sizeof(double));
	qsort(c, n, sizeof(double), cmp_double);
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += c[i];
	s.min = c[0];
	s.max = c[n - 1];
	s.mean = sum / (double)n;
	s.median = (n & 1) ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2.0;
	free(c);
	return s;
}

int hw_sample_each(hw_op op, void *arg, size_t n, struct hw_samples *out)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t t0 = hw_now();
		op(arg);
		uint64_t t1 = hw_now();
		hw_samples_push(out, (double)(t1 - t0));
	}
	return 0;
}

uint64_t hw_sample_batched(hw_loop loop, void *arg, uint64_t goal_ns, size_t nsamples,
			   struct hw_samples *out)
{
	uint64_t iters = 1;
	for (;;) {
		uint64_t t0 = hw_mono_ns();
		loop(arg, iters);
		uint64_t dt = hw_mono_ns() - t0;
		if (dt >= goal_ns || iters >= (1ull << 40))
			break;
		iters *= 2;
	}
	for (size_t i = 0; i < nsamples; i++) {
		uint64_t t0 = hw_now();
		loop(arg, iters);
		uint64_t t1 = hw_now();
		hw_samples_push(out, (double)(t1 - t0) / (double)iters);
	}
	return iters;
}

void hw_progress(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("hwlab: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* ---------------------------------------------------------------- JSON */

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

static void json_key(struct hw_ctx *c, const char *key)
{
	if (c->need_comma[c->depth])
		fputc(',', c->out);
	c->need_comma[c->depth] = 1;
	if (key) {
		json_string(c->out, key);
		fputc(':', c->out);
	}
}

void hw_json_open(struct hw_ctx *c, const char *key, char bracket)
{
	json_key(c, key);
	fputc(bracket, c->out);
	c->depth++;
	c->need_comma[c->depth] = 0;
	c->bracket[c->depth] = bracket;
}

void hw_json_unwind(struct hw_ctx *c, int depth)
{
	while (c->depth > depth)
		hw_json_close(c, c->bracket[c->depth] == '{' ? '}' : ']');
}

void hw_json_close(struct hw_ctx *c, char bracket)
{
	c->depth--;
	fputc(bracket, c->out);
	if (c->depth == 0)
		fputc('\n', c->out);
}

void hw_json_str(struct hw_ctx *c, const char *key, const char *val)
{
	json_key(c, key);
	json_string(c->out, val);
}

void hw_json_u64(struct hw_ctx *c, const char *key, uint64_t val)
{
	json_key(c, key);
	fprintf(c->out, "%" PRIu64, val);
}

void hw_json_i64(struct hw_ctx *c, const char *key, int64_t val)
{
	json_key(c, key);
	fprintf(c->out, "%" PRId64, val);
}

void hw_json_num(struct hw_ctx *c, const char *key, double val)
{
	json_key(c, key);
	if (isfinite(val))
		fprintf(c->out, "%.17g", val);
	else
		fputs("null", c->out);
}

void hw_json_bool(struct hw_ctx *c, const char *key, int val)
{
	json_key(c, key);
	fputs(val ? "true" : "false", c->out);
}

const char *hw_timer_unit(void)
{
	return HWLAB_TIMER_UNIT;
}

void hw_metric(struct hw_ctx *c, const char *name, const char *unit, const char *per,
	       const double *v, size_t n)
{
	if (!n) {
		hw_note(c, "metric %s: no samples", name);
		return;
	}
	struct hw_summary s = hw_summarize(v, n);
	hw_json_open(c, NULL, '{');
	hw_json_str(c, "name", name);
	hw_json_str(c, "unit", unit);
	hw_json_str(c, "per", per);
	hw_json_num(c, "min", s.min);
	hw_json_num(c, "median", s.median);
	hw_json_num(c, "mean", s.mean);
	hw_json_num(c, "max", s.max);
	hw_json_u64(c, "count", s.count);
	hw_json_close(c, '}');
}

void hw_sub_begin(struct hw_ctx *c, const char *name)
{
	hw_json_open(c, NULL, '{');
	hw_json_str(c, "name", name);
	c->nsub++;
}

void hw_sub_end(struct hw_ctx *c, const char *status, const char *reason)
{
	hw_json_str(c, "status", status);
	if (reason)
		hw_json_str(c, "reason", reason);
	hw_json_close(c, '}');
}

void hw_note(struct hw_ctx *c, const char *fmt, ...)
{
	char buf[HW_NOTE_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	fprintf(stderr, "hwlab: note: %s\n", buf);
	if (c->nnotes < (int)(sizeof c->notes / sizeof c->notes[0]))
		memcpy(c->notes[c->nnotes++], buf, sizeof buf);
}

/* ---------------------------------------------------------------- page sizes */

static int pow2(size_t v)
{
	return v && !(v & (v - 1));
}

void hw_pages_parse(struct hw_pages *pg, long sysconf_page, const char *thp_pmd_text,
		    const char *meminfo_text)
{
	pg->base = sysconf_page > 0 && pow2((size_t)sysconf_page) ? (size_t)sysconf_page : 0;
	pg->base_from = "sysconf(_SC_PAGESIZE)";
	if (!pg->base) { /* no answer: the smallest page any Linux port uses */
		pg->base = 4096;
		pg->base_from = "assumed: sysconf(_SC_PAGESIZE) gave no power of two";
	}
	pg->huge = 0;
	unsigned long long v;
	if (thp_pmd_text && sscanf(thp_pmd_text, "%llu", &v) == 1 && pow2(v) && v > pg->base) {
		pg->huge = v;
		pg->huge_from = "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size";
	}
	const char *h = meminfo_text ? strstr(meminfo_text, "Hugepagesize:") : NULL;
	if (!pg->huge && h && sscanf(h, "Hugepagesize: %llu kB", &v) == 1 && pow2(v * 1024) &&
	    v * 1024 > pg->base) {
		pg->huge = v * 1024;
		pg->huge_from = "/proc/meminfo Hugepagesize";
	}
	if (!pg->huge) {
		pg->huge = pg->base * (pg->base / 8);
		pg->huge_from = "derived: base page x (base page / 8-byte entries) per PMD entry";
	}
}

static char *slurp(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	size_t k = fread(buf, 1, n - 1, f);
	fclose(f);
	buf[k] = 0;
	return buf;
}

static struct hw_pages pages_now;
static int pages_read;

const struct hw_pages *hw_pages(void)
{
	if (!pages_read) {
		static char thp[64], meminfo[8192];
		hw_pages_parse(&pages_now, sysconf(_SC_PAGESIZE),
			       slurp("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", thp,
				     sizeof thp),
			       slurp("/proc/meminfo", meminfo, sizeof meminfo));
		pages_read = 1;
	}
	return &pages_now;
}

void hw_pages_override(const struct hw_pages *pg)
{
	pages_now = *pg;
	pages_read = 1;
}

const char *hw_size_tag(size_t bytes, char *buf, size_t n)
{
	if (bytes >= (1ul << 20) && !(bytes % (1ul << 20)))
		snprintf(buf, n, "%zum", bytes >> 20);
	else
		snprintf(buf, n, "%zuk", bytes >> 10);
	return buf;
}

const char *hw_size_words(size_t bytes, char *buf, size_t n)
{
	if (bytes >= (1ul << 30) && !(bytes % (1ul << 30)))
		snprintf(buf, n, "%zu GiB", bytes >> 30);
	else if (bytes >= (1ul << 20) && !(bytes % (1ul << 20)))
		snprintf(buf, n, "%zu MiB", bytes >> 20);
	else
		snprintf(buf, n, "%zu KiB", bytes >> 10);
	return buf;
}

/* ---------------------------------------------------------------- memory helpers */

void *hw_map(size_t bytes, int huge)
{
	size_t align = hw_pages()->huge;
	size_t len = bytes + align;
	char *raw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	/* Keep a huge-page aligned window so THP can back it; give the rest back. */
	char *p = (char *)(((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1));
	if (p > raw)
		munmap(raw, (size_t)(p - raw));
	size_t tail = (size_t)((raw + len) - (p + bytes));
	if (tail)
		munmap(p + bytes, tail);
#ifdef MADV_HUGEPAGE
	madvise(p, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
#endif
	return p;
}

void hw_unmap(void *p, size_t bytes)
{
	if (p)
		munmap(p, bytes);
}

uint64_t hw_anon_huge_kib(const void *p)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f)
		return 0;
	char line[256];
	int inside = 0;
	uint64_t kib = 0;
	uintptr_t a = (uintptr_t)p;
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
			inside = a >= lo && a < hi;
			continue;
		}
		if (inside && sscanf(line, "AnonHugePages: %" SCNu64, &kib) == 1)
			break;
	}
	fclose(f);
	return kib;
}

uint64_t hw_rand(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1Dull;
}

/* ---------------------------------------------------------------- timer frequency */

static double calibrate_hz(uint64_t window_ns)
{
	uint64_t n0 = hw_mono_ns(), t0 = hw_now();
	while (hw_mono_ns() - n0 < window_ns)
		;
	uint64_t n1 = hw_mono_ns(), t1 = hw_now();
	return (double)(t1 - t0) * 1e9 / (double)(n1 - n0);
}

void hw_timer_info(struct hw_timer_info *t, int quick)
{
	t->source = HWLAB_TIMER_NAME;
	t->unit = HWLAB_TIMER_UNIT;
	t->calibrated_hz = calibrate_hz(quick ? 20000000ull : 200000000ull);
	t->freq_hz = t->calibrated_hz;
	t->freq_method = "calibrated_against_clock_monotonic";
#if defined(HWLAB_X86)
	unsigned a, b, c, d;
	/* Leaf 0x15: TSC/crystal ratio and crystal frequency (Intel, when ECX is filled in). */
	if (__get_cpuid_max(0, NULL) >= 0x15) {
		__cpuid_count(0x15, 0, a, b, c, d);
		if (a && b && c) {
			t->freq_hz = (double)c * b / a;
			t->freq_method = "cpuid_leaf_0x15";
			return;
		}
	}
	/* Leaf 0x40000010: TSC kHz from the hypervisor (VMware convention, also KVM/others). */
	__cpuid(1, a, b, c, d);
	if (c & (1u << 31)) {
		__cpuid(0x40000000, a, b, c, d);
		if (a >= 0x40000010) {
			__cpuid(0x40000010, a, b, c, d);
			if (a) {
				t->freq_hz = (double)a * 1000.0;
				t->freq_method = "cpuid_leaf_0x40000010";
				return;
			}
		}
	}
#elif defined(__aarch64__) && !defined(HWLAB_GENERIC_ONLY)
	uint64_t f;
	__asm__ volatile("mrs %0, cntfrq_el0" : "=r"(f));
	if (f) {
		t->freq_hz = (double)f;
		t->freq_method = "cntfrq_el0";
	}
#else
	t->freq_hz = 1e9;
	t->freq_method = "nanoseconds_by_definition";
#endif
}

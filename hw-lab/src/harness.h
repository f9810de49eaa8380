/* The shared timing harness: one timer, one sample buffer, one summary, one JSON writer.
 * Every benchmark is a small case in the table in main.c that calls these. */
#ifndef HWLAB_HARNESS_H
#define HWLAB_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "timer.h"

#define HW_NOTE_MAX 480

/* The running system's page sizes: never a 4 KiB constant (Sunway uses 8 KiB pages). */
struct hw_pages {
	size_t base;           /* sysconf(_SC_PAGESIZE) */
	size_t huge;           /* the THP/PMD size: what MADV_HUGEPAGE can give */
	const char *base_from; /* where each came from, for the result */
	const char *huge_from;
};

struct hw_ctx {
	int quick;
	size_t mem_bytes;          /* memtouch size and ptrchase's largest working set */
	const char *subcase;       /* "--only kvm_exits:pio_user" selects one sub-case */
	unsigned kvm_iters;        /* 0: the case's default */
	unsigned timeout_s;        /* hard limit for anything that can hang (KVM_RUN) */
	FILE *out;
	/* JSON writer state: one comma flag per nesting depth */
	int depth;
	int need_comma[32];
	char bracket[32];          /* open brackets, so an error path can unwind */
	/* notes a case leaves for the result (what it fell back to, why something is odd) */
	char notes[16][HW_NOTE_MAX];
	int nnotes;
	int nsub;                  /* sub-cases emitted by the running case */
};

/* A case answers NULL when it can run here, or why it cannot ("no /dev/kvm"). */
struct hw_case {
	const char *name;
	const char *teaches;
	const char *(*unsupported)(struct hw_ctx *ctx);
	int (*run)(struct hw_ctx *ctx);    /* 0 ok, else an error already reported */
};

struct hw_samples {
	double *v;
	size_t n, cap;
};

struct hw_summary {
	double min, median, mean, max;
	size_t count;
};

/* samples */
int hw_samples_init(struct hw_samples *s, size_t cap);
void hw_samples_push(struct hw_samples *s, double v);
void hw_samples_free(struct hw_samples *s);
struct hw_summary hw_summarize(const double *v, size_t n);

/* Time each call of op(arg) on its own: n samples of (timer after - timer before). */
typedef void (*hw_op)(void *arg);
int hw_sample_each(hw_op op, void *arg, size_t n, struct hw_samples *out);

/* vmexit.c style: double the iteration count until one batch lasts goal_ns, then take
 * nsamples batches of that size; each sample is the mean cost of one iteration. */
typedef void (*hw_loop)(void *arg, uint64_t iters);
uint64_t hw_sample_batched(hw_loop loop, void *arg, uint64_t goal_ns, size_t nsamples,
			   struct hw_samples *out);

/* progress on stderr */
void hw_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* JSON output (stdout), always well formed; hw_json_unwind closes down to a depth */
void hw_json_unwind(struct hw_ctx *c, int depth);
void hw_json_open(struct hw_ctx *c, const char *key, char bracket);
void hw_json_close(struct hw_ctx *c, char bracket);
void hw_json_str(struct hw_ctx *c, const char *key, const char *val);
void hw_json_u64(struct hw_ctx *c, const char *key, uint64_t val);
void hw_json_i64(struct hw_ctx *c, const char *key, int64_t val);
void hw_json_num(struct hw_ctx *c, const char *key, double val);
void hw_json_bool(struct hw_ctx *c, const char *key, int val);

/* One metric: a summary of samples with its unit and what one sample is. */
void hw_metric(struct hw_ctx *c, const char *name, const char *unit, const char *per,
	       const double *v, size_t n);
/* One named sub-case inside a benchmark's "cases" array. */
void hw_sub_begin(struct hw_ctx *c, const char *name);
void hw_sub_end(struct hw_ctx *c, const char *status, const char *reason);

/* The timer's unit, for metrics measured with hw_now(). */
const char *hw_timer_unit(void);

/* A case's params/metrics/notes live inside the object main.c opened for it. */
void hw_note(struct hw_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Page sizes from what the system says: the base page from sysconf, the huge page from
 * /sys/kernel/mm/transparent_hugepage/hpage_pmd_size, else /proc/meminfo's Hugepagesize,
 * else derived (one page-table page of 8-byte entries mapped by one PMD entry: base *
 * base / 8). hw_pages_parse is the pure part, for tests with other sizes injected. */
void hw_pages_parse(struct hw_pages *pg, long sysconf_page, const char *thp_pmd_text,
		    const char *meminfo_text);
const struct hw_pages *hw_pages(void);       /* the running system's, read once */
void hw_pages_override(const struct hw_pages *pg); /* tests only: pretend another geometry */
/* "4k", "8k", "64k": a page size as the case names spell it; "4 KiB", "2 MiB" in prose */
const char *hw_size_tag(size_t bytes, char *buf, size_t n);
const char *hw_size_words(size_t bytes, char *buf, size_t n);

/* shared helpers for the memory cases */
void *hw_map(size_t bytes, int huge);      /* huge-page aligned, MADV_(NO)HUGEPAGE; NULL on failure */
void hw_unmap(void *p, size_t bytes);
uint64_t hw_anon_huge_kib(const void *p);  /* AnonHugePages of the mapping holding p, or 0 */
uint64_t hw_rand(uint64_t *state);         /* xorshift64*, seeded: runs are reproducible */

#endif

/* memtouch: write one byte per base page of a fresh mapping, twice, timing every page.
 * The first pass pays the page fault (and, in a VM, the EPT/NPT or shadow fill); the
 * second pass does not. With THP one fault maps a whole huge page (2 MiB on x86), so only
 * the first write into each huge-page region pays: that write is its own metric
 * (region_first_touch), because the median over all pages hides it.
 *
 * Page and huge-page sizes come from the running system (hw_pages), never a constant:
 * Sunway's base page is 8 KiB. Each case runs on fresh mappings several times, until the
 * smallest first pass stops falling: a VM's host backs guest memory lazily, so the first
 * run may pay host-side faults that later runs do not. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"

#define MIN_RUNS 3
#define STABLE_PCT 5.0 /* the min moved less than this in the last two runs: stable */

struct touch {
	volatile char *base;
	size_t i, stride;
};

static void op_touch(void *arg)
{
	struct touch *t = arg;
	t->base[t->i * t->stride] = 1;
	t->i++;
}

static void op_nothing(void *arg)
{
	(void)arg;
	__asm__ volatile("" ::: "memory");
}

/* Every page written once more, the whole pass timed as one loop: no per-page timer. */
static double batched_pass(volatile char *p, size_t pages, size_t stride)
{
	uint64_t t0 = hw_now();
	for (size_t i = 0; i < pages; i++)
		p[i * stride] = 2;
	uint64_t t1 = hw_now();
	return (double)(t1 - t0) / (double)pages;
}

struct pool {
	struct hw_samples first, second, region_first, region_pass, batched, pass_ns, overhead;
};

static int pool_init(struct pool *p, size_t pages, size_t regions, int max_runs)
{
	memset(p, 0, sizeof *p);
	return hw_samples_init(&p->first, pages * 2) || hw_samples_init(&p->second, pages * 2) ||
	       hw_samples_init(&p->region_first, regions ? regions * 2 : 16) ||
	       hw_samples_init(&p->region_pass, regions ? regions * 2 : 16) ||
	       hw_samples_init(&p->batched, 16) || hw_samples_init(&p->pass_ns, max_runs) ||
	       hw_samples_init(&p->overhead, 4096);
}

static void pool_free(struct pool *p)
{
	hw_samples_free(&p->first);
	hw_samples_free(&p->second);
	hw_samples_free(&p->region_first);
	hw_samples_free(&p->region_pass);
	hw_samples_free(&p->batched);
	hw_samples_free(&p->pass_ns);
	hw_samples_free(&p->overhead);
}

static double min_of(const double *v, size_t n)
{
	double m = v[0];
	for (size_t i = 1; i < n; i++)
		if (v[i] < m)
			m = v[i];
	return m;
}

/* Stable once the newest two runs each moved the min by less than STABLE_PCT. */
static int min_is_stable(const double *pass, size_t n)
{
	if (n < MIN_RUNS)
		return 0;
	double now = min_of(pass, n), before = min_of(pass, n - 1), before2 = min_of(pass, n - 2);
	return (before - now) * 100.0 < STABLE_PCT * before &&
	       (before2 - before) * 100.0 < STABLE_PCT * before2;
}

static int one(struct hw_ctx *c, const char *name, int huge)
{
	const struct hw_pages *pg = hw_pages();
	const size_t page = pg->base, region = pg->huge, per_region = region / page;
	size_t bytes = c->mem_bytes;
	if (bytes >= region)
		bytes -= bytes % region; /* whole huge-page regions */
	const size_t pages = bytes / page, regions = bytes / region;
	const int max_runs = c->quick ? 5 : 8;
	char ps[32], hs[32], per1[96], per2[160], per3[160];
	hw_size_words(page, ps, sizeof ps);
	hw_size_words(region, hs, sizeof hs);

	struct pool pl;
	if (pool_init(&pl, pages, regions, max_runs)) {
		pool_free(&pl);
		hw_sub_begin(c, name);
		hw_sub_end(c, "error", "out of memory for the samples; try --mem-mib with less");
		return -1;
	}
	uint64_t huge_kib_runs[16] = {0};
	int runs = 0;
	while (runs < max_runs) {
		char *p = hw_map(bytes, huge);
		if (!p) {
			pool_free(&pl);
			hw_sub_begin(c, name);
			hw_sub_end(c, "error", "mmap failed: not enough memory; try --mem-mib with less");
			return -1;
		}
		size_t f0 = pl.first.n;
		struct touch t = {p, 0, page};
		uint64_t n0 = hw_mono_ns();
		hw_sample_each(op_touch, &t, pages, &pl.first);
		uint64_t n1 = hw_mono_ns();
		t.i = 0;
		hw_sample_each(op_touch, &t, pages, &pl.second);
		for (int k = 0; k < 3; k++)
			hw_samples_push(&pl.batched, batched_pass(p, pages, page));
		huge_kib_runs[runs] = hw_anon_huge_kib(p);
		hw_unmap(p, bytes);
		for (size_t r = 0; r < regions && pl.first.n == f0 + pages; r++) {
			const double *v = pl.first.v + f0 + r * per_region;
			double sum = 0;
			for (size_t i = 0; i < per_region; i++)
				sum += v[i];
			hw_samples_push(&pl.region_first, v[0]);
			hw_samples_push(&pl.region_pass, sum);
		}
		hw_samples_push(&pl.pass_ns, (double)(n1 - n0));
		runs++;
		if (min_is_stable(pl.pass_ns.v, pl.pass_ns.n))
			break;
	}
	hw_sample_each(op_nothing, NULL, 4096, &pl.overhead);

	hw_sub_begin(c, name);
	hw_json_open(c, "params", '{');
	hw_json_u64(c, "bytes", bytes);
	hw_json_u64(c, "page_bytes", page);
	hw_json_str(c, "page_bytes_from", pg->base_from);
	hw_json_u64(c, "region_bytes", region);
	hw_json_str(c, "region_bytes_from", pg->huge_from);
	hw_json_u64(c, "pages", pages);
	if (page == 4096)
		hw_json_u64(c, "pages_4k", pages); /* the name older readers know */
	hw_json_u64(c, "regions", regions);
	hw_json_str(c, "madvise", huge ? "MADV_HUGEPAGE" : "MADV_NOHUGEPAGE");
	hw_json_u64(c, "anon_huge_kib", huge_kib_runs[runs - 1]);
	hw_json_open(c, "anon_huge_kib_runs", '[');
	for (int r = 0; r < runs; r++)
		hw_json_u64(c, NULL, huge_kib_runs[r]);
	hw_json_close(c, ']');
	hw_json_u64(c, "runs", (uint64_t)runs);
	hw_json_u64(c, "runs_max", (uint64_t)max_runs);
	hw_json_bool(c, "min_stable", min_is_stable(pl.pass_ns.v, pl.pass_ns.n));
	hw_json_open(c, "first_pass_s_runs", '[');
	for (size_t r = 0; r < pl.pass_ns.n; r++)
		hw_json_num(c, NULL, pl.pass_ns.v[r] / 1e9);
	hw_json_close(c, ']');
	hw_json_num(c, "first_pass_s", min_of(pl.pass_ns.v, pl.pass_ns.n) / 1e9);
	hw_json_close(c, '}');

	hw_json_open(c, "metrics", '[');
	snprintf(per1, sizeof per1, "%s page written (all runs)", ps);
	hw_metric(c, "first_touch", hw_timer_unit(), per1, pl.first.v, pl.first.n);
	hw_metric(c, "second_touch", hw_timer_unit(), per1, pl.second.v, pl.second.n);
	if (huge)
		snprintf(per2, sizeof per2, "first write into each %s region (with THP: the "
			 "region's one huge-page fault)", hs);
	else
		snprintf(per2, sizeof per2, "first write into each %s region (one %s page fault; "
			 "the region's other pages fault too)", hs, ps);
	hw_metric(c, "region_first_touch", hw_timer_unit(), per2, pl.region_first.v,
		  pl.region_first.n);
	snprintf(per3, sizeof per3, "first pass over one %s region: %zu writes of a %s page, "
		 "summed", hs, per_region, ps);
	hw_metric(c, "region_first_pass", hw_timer_unit(), per3, pl.region_pass.v,
		  pl.region_pass.n);
	snprintf(per3, sizeof per3, "write to an already-mapped %s page, a whole pass timed as "
		 "one loop (no per-page timer cost)", ps);
	hw_metric(c, "warm_touch_batched", hw_timer_unit(), per3, pl.batched.v, pl.batched.n);
	hw_metric(c, "first_pass", "ns", "first pass over the whole mapping, one fresh mapping "
		  "per run", pl.pass_ns.v, pl.pass_ns.n);
	hw_metric(c, "timer_overhead", hw_timer_unit(), "an empty timed sample: the timer's own "
		  "cost, inside every per-page sample", pl.overhead.v, pl.overhead.n);
	hw_json_close(c, ']');
	hw_sub_end(c, "ok", NULL);

	struct hw_summary second = hw_summarize(pl.second.v, pl.second.n);
	struct hw_summary over = hw_summarize(pl.overhead.v, pl.overhead.n);
	struct hw_summary batched = hw_summarize(pl.batched.v, pl.batched.n);
	double lo = min_of(pl.pass_ns.v, pl.pass_ns.n), hi = lo;
	for (size_t r = 0; r < pl.pass_ns.n; r++)
		hi = pl.pass_ns.v[r] > hi ? pl.pass_ns.v[r] : hi;
	if (huge && !huge_kib_runs[runs - 1])
		hw_note(c, "memtouch %s: no huge pages were used (THP off, memory fragmented, or "
			"the mapping is smaller than one %s huge page)", name, hs);
	if (!regions)
		hw_note(c, "memtouch %s: %zu bytes is less than one %s region: no region metrics; "
			"give --mem-mib more", name, bytes, hs);
	if (hi > 2 * lo)
		hw_note(c, "memtouch %s: the first pass took %.3f to %.3f s over %d runs (%.1fx): "
			"in a VM the host faults too the first time the guest uses a guest-physical "
			"page (host-side first touch of fresh guest memory), later runs reuse memory "
			"the host already backs; with THP a run may also get fewer huge pages "
			"(anon_huge_kib_runs). The min is the guest-side cost", name, lo / 1e9,
			hi / 1e9, runs, hi / lo);
	if (!min_is_stable(pl.pass_ns.v, pl.pass_ns.n))
		hw_note(c, "memtouch %s: the smallest first pass still moved by more than %.0f %% "
			"after %d runs: this machine is noisy now", name, STABLE_PCT, runs);
	if (second.median < 1)
		hw_note(c, "memtouch %s: second_touch (median %.0f %s) is below one tick of this "
			"timer; a write to a mapped page costs %.2f per page timed as one loop "
			"(warm_touch_batched)", name, second.median, hw_timer_unit(), batched.median);
	else if (over.median * 2 >= second.median)
		hw_note(c, "memtouch %s: second_touch (median %.0f %s) is mostly the timer's own "
			"cost (timer_overhead median %.0f); a write to a mapped page costs %.1f per "
			"page timed as one loop (warm_touch_batched)", name, second.median,
			hw_timer_unit(), over.median, batched.median);
	hw_progress("memtouch %s: %d runs, first pass min %.3f s (max %.3f s), %zu x %s pages, "
		    "%zu x %s regions", name, runs, lo / 1e9, hi / 1e9, pages, ps, regions, hs);
	pool_free(&pl);
	return 0;
}

int memtouch_run(struct hw_ctx *c)
{
	char base[16];
	hw_size_tag(hw_pages()->base, base, sizeof base);
	if (!c->subcase || !strcmp(c->subcase, base))
		if (one(c, base, 0))
			return -1;
	if (!c->subcase || !strcmp(c->subcase, "thp"))
		if (one(c, "thp", 1))
			return -1;
	return 0;
}

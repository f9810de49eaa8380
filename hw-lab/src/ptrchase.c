/* ptrchase: a random cyclic chain with one node per base page. Each load depends on the
 * previous one, so the time per step is the memory latency plus, once the pages outgrow
 * the TLB, a page walk. Base pages vs THP over growing working sets: the walk-cost curve.
 * The base page size comes from the running system (4 KiB on x86, 8 KiB on Sunway). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"

struct chase {
	void **p;
};

static void loop_chase(void *arg, uint64_t iters)
{
	struct chase *c = arg;
	void **p = c->p;
	while (iters--)
		p = (void **)*p;
	c->p = p; /* keeps the chain live for the compiler */
}

/* Sattolo's shuffle gives one cycle through every page. The node sits at a different
 * cache line in each page so the chain does not hammer one cache set. */
static void **build(char *base, size_t pages, size_t page, uint64_t seed)
{
	uint32_t *order = malloc(pages * sizeof *order);
	if (!order)
		return NULL;
	for (size_t i = 0; i < pages; i++)
		order[i] = (uint32_t)i;
	for (size_t i = pages - 1; i > 0; i--) {
		size_t j = hw_rand(&seed) % i;
		uint32_t t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	const size_t lines = page / 64;
#define NODE(pg) ((void **)(base + (size_t)(pg) * page + ((pg) % lines) * 64))
	for (size_t i = 0; i < pages; i++)
		*NODE(order[i]) = NODE(order[(i + 1) % pages]);
	void **start = NODE(order[0]);
	free(order);
	return start;
}

static int one(struct hw_ctx *c, size_t ws, int huge)
{
	const size_t page = hw_pages()->base;
	char name[48], tag[16], per[96], words[32];
	snprintf(name, sizeof name, "%s_%zuMiB", huge ? "thp" : hw_size_tag(page, tag, sizeof tag),
		 ws >> 20);
	if (c->subcase && strcmp(c->subcase, name))
		return 0;
	size_t pages = ws / page;
	char *p = hw_map(ws, huge);
	if (!p) {
		hw_sub_begin(c, name);
		hw_sub_end(c, "error", "mmap failed: not enough memory; try --mem-mib with less");
		return -1;
	}
	memset(p, 0, ws); /* fault everything in first: this measures walks, not faults */
	struct chase ch = {build(p, pages, page, 0x9e3779b97f4a7c15ull ^ ws)};
	if (!ch.p) {
		hw_unmap(p, ws);
		return -1;
	}
	struct hw_samples s;
	hw_samples_init(&s, 16);
	loop_chase(&ch, pages); /* one lap to warm what fits */
	size_t nsamples = c->quick ? 5 : 11;
	uint64_t iters = hw_sample_batched(loop_chase, &ch, c->quick ? 10000000ull : 100000000ull,
					   nsamples, &s);
	uint64_t huge_kib = hw_anon_huge_kib(p);

	hw_sub_begin(c, name);
	hw_json_open(c, "params", '{');
	hw_json_u64(c, "working_set_bytes", ws);
	hw_json_u64(c, "page_bytes", page);
	hw_json_u64(c, "pages", pages);
	if (page == 4096)
		hw_json_u64(c, "pages_4k", pages); /* the name older readers know */
	hw_json_str(c, "madvise", huge ? "MADV_HUGEPAGE" : "MADV_NOHUGEPAGE");
	hw_json_u64(c, "anon_huge_kib", huge_kib);
	hw_json_u64(c, "steps_per_sample", iters);
	hw_json_close(c, '}');
	hw_json_open(c, "metrics", '[');
	snprintf(per, sizeof per, "dependent load, one %s page per node",
		 hw_size_words(page, words, sizeof words));
	hw_metric(c, "access", hw_timer_unit(), per, s.v, s.n);
	hw_json_close(c, ']');
	hw_sub_end(c, "ok", NULL);
	struct hw_summary sum = hw_summarize(s.v, s.n);
	hw_progress("ptrchase %s: median %.1f %s per access", name, sum.median, hw_timer_unit());
	hw_samples_free(&s);
	hw_unmap(p, ws);
	return 0;
}

int ptrchase_run(struct hw_ctx *c)
{
	/* 4 MiB, 16 MiB, ... up to the memory size (64 MiB quick, 1 GiB full) */
	for (int huge = 0; huge <= 1; huge++)
		for (size_t ws = 4ul << 20; ws <= c->mem_bytes; ws *= 4)
			if (one(c, ws, huge))
				return -1;
	return 0;
}

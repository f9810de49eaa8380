/* memtouch: write one byte per 4 KiB page of a fresh mapping, twice, timing every page.
 * The first pass pays the page fault (and, in a VM, the EPT/NPT or shadow fill); the
 * second pass does not. With THP one fault maps 2 MiB, so only 1 page in 512 pays. */
#include <stdint.h>
#include <string.h>

#include "cases.h"

#define PAGE 4096ul

struct touch {
	volatile char *base;
	size_t i;
};

static void op_touch(void *arg)
{
	struct touch *t = arg;
	t->base[t->i * PAGE] = 1;
	t->i++;
}

static int one(struct hw_ctx *c, const char *name, int huge)
{
	size_t bytes = c->mem_bytes, pages = bytes / PAGE;
	char *p = hw_map(bytes, huge);
	if (!p) {
		hw_sub_begin(c, name);
		hw_sub_end(c, "error", "mmap failed: not enough memory; try --mem-mib with less");
		return -1;
	}
	struct hw_samples first, second;
	if (hw_samples_init(&first, pages) || hw_samples_init(&second, pages))
		return -1;
	struct touch t = {p, 0};
	uint64_t n0 = hw_mono_ns();
	hw_sample_each(op_touch, &t, pages, &first);
	uint64_t n1 = hw_mono_ns();
	t.i = 0;
	hw_sample_each(op_touch, &t, pages, &second);
	uint64_t n2 = hw_mono_ns();
	uint64_t huge_kib = hw_anon_huge_kib(p);

	hw_sub_begin(c, name);
	hw_json_open(c, "params", '{');
	hw_json_u64(c, "bytes", bytes);
	hw_json_u64(c, "pages_4k", pages);
	hw_json_str(c, "madvise", huge ? "MADV_HUGEPAGE" : "MADV_NOHUGEPAGE");
	hw_json_u64(c, "anon_huge_kib", huge_kib);
	hw_json_num(c, "first_pass_s", (double)(n1 - n0) / 1e9);
	hw_json_num(c, "second_pass_s", (double)(n2 - n1) / 1e9);
	hw_json_close(c, '}');
	hw_json_open(c, "metrics", '[');
	hw_metric(c, "first_touch", hw_timer_unit(), "4 KiB page written", first.v, first.n);
	hw_metric(c, "second_touch", hw_timer_unit(), "4 KiB page written", second.v, second.n);
	hw_json_close(c, ']');
	hw_sub_end(c, "ok", NULL);
	if (huge && !huge_kib)
		hw_note(c, "memtouch thp: no huge pages were used (THP off or memory fragmented)");
	hw_progress("memtouch %s: first pass %.3f s, second %.3f s", name, (n1 - n0) / 1e9,
		    (n2 - n1) / 1e9);
	hw_samples_free(&first);
	hw_samples_free(&second);
	hw_unmap(p, bytes);
	return 0;
}

int memtouch_run(struct hw_ctx *c)
{
	if (!c->subcase || !strcmp(c->subcase, "4k"))
		if (one(c, "4k", 0))
			return -1;
	if (!c->subcase || !strcmp(c->subcase, "thp"))
		if (one(c, "thp", 1))
			return -1;
	return 0;
}

/* Page geometry without the running system: hw_pages_parse on recorded /sys and /proc
 * text, then memtouch and ptrchase with an 8 KiB base page (Sunway's) injected, their
 * JSON on stdout for tests/test_hw_pages.py.
 *
 *   pages_test parse            checks the parser, prints "parse ok"
 *   pages_test run BASE HUGE    memtouch + ptrchase (16 MiB) with that geometry, as JSON */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "harness.h"

static int failures;

static void expect(const char *what, long sysconf_page, const char *thp, const char *meminfo,
		   size_t base, size_t huge, const char *huge_from_prefix)
{
	struct hw_pages pg;
	hw_pages_parse(&pg, sysconf_page, thp, meminfo);
	if (pg.base != base || pg.huge != huge ||
	    strncmp(pg.huge_from, huge_from_prefix, strlen(huge_from_prefix))) {
		printf("FAIL %s: base %zu huge %zu (%s), wanted %zu %zu (%s...)\n", what, pg.base,
		       pg.huge, pg.huge_from, base, huge, huge_from_prefix);
		failures++;
	}
}

static int parse_checks(void)
{
	const char *mi_x86 = "MemTotal:       24576000 kB\nHugePages_Total:       0\n"
			     "Hugepagesize:       2048 kB\nHugetlb:               0 kB\n";
	const char *mi_sw = "MemTotal:       33554432 kB\nHugepagesize:       8192 kB\n";
	expect("x86 with THP", 4096, "2097152\n", mi_x86, 4096, 2u << 20, "/sys/kernel/mm");
	expect("x86, no THP file", 4096, NULL, mi_x86, 4096, 2u << 20, "/proc/meminfo");
	expect("Sunway 8 KiB pages, meminfo only", 8192, NULL, mi_sw, 8192, 8u << 20,
	       "/proc/meminfo");
	expect("8 KiB pages, nothing says the huge size", 8192, NULL, "MemTotal: 1 kB\n", 8192,
	       8u << 20, "derived");
	expect("64 KiB pages, nothing says", 65536, NULL, NULL, 65536, 512u << 20, "derived");
	expect("garbage THP file falls to meminfo", 8192, "madvise\n", mi_sw, 8192, 8u << 20,
	       "/proc/meminfo");
	expect("a THP size below the base page is ignored", 8192, "4096\n", mi_sw, 8192,
	       8u << 20, "/proc/meminfo");
	expect("sysconf failed", -1, "2097152\n", NULL, 4096, 2u << 20, "/sys/kernel/mm");
	expect("not a power of two", 12288, NULL, mi_x86, 4096, 2u << 20, "/proc/meminfo");
	char b[32];
	if (strcmp(hw_size_tag(8192, b, sizeof b), "8k") || strcmp(hw_size_tag(4096, b, sizeof b), "4k") ||
	    strcmp(hw_size_words(8u << 20, b, sizeof b), "8 MiB") ||
	    strcmp(hw_size_words(8192, b, sizeof b), "8 KiB")) {
		printf("FAIL size words\n");
		failures++;
	}
	/* hw_map aligns to the injected huge page, not to 2 MiB */
	struct hw_pages sw = {8192, 8u << 20, "injected", "injected"};
	hw_pages_override(&sw);
	for (int i = 0; i < 4; i++) {
		char *p = hw_map(3u << 20, i & 1);
		if (!p || ((uintptr_t)p & ((8u << 20) - 1))) {
			printf("FAIL hw_map: %p is not 8 MiB aligned\n", (void *)p);
			failures++;
		}
		hw_unmap(p, 3u << 20);
	}
	if (!failures)
		printf("parse ok\n");
	return failures ? 1 : 0;
}

static int run(size_t base, size_t huge)
{
	struct hw_pages pg = {base, huge, "injected by pages_test", "injected by pages_test"};
	hw_pages_override(&pg);
	struct hw_ctx ctx = {0};
	ctx.out = stdout;
	ctx.quick = 1;
	ctx.mem_bytes = 16u << 20;
	ctx.timeout_s = 60;
	int rc = 0;
	static const struct {
		const char *name;
		int (*fn)(struct hw_ctx *);
	} benches[] = {{"memtouch", memtouch_run}, {"ptrchase", ptrchase_run}};
	hw_json_open(&ctx, NULL, '[');
	for (size_t i = 0; i < 2; i++) {
		ctx.nnotes = 0;
		hw_json_open(&ctx, NULL, '{');
		hw_json_str(&ctx, "name", benches[i].name);
		hw_json_open(&ctx, "cases", '[');
		rc |= benches[i].fn(&ctx);
		hw_json_close(&ctx, ']');
		hw_json_open(&ctx, "notes", '[');
		for (int n = 0; n < ctx.nnotes; n++)
			hw_json_str(&ctx, NULL, ctx.notes[n]);
		hw_json_close(&ctx, ']');
		hw_json_close(&ctx, '}');
	}
	hw_json_close(&ctx, ']');
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "parse"))
		return parse_checks();
	if (argc == 4 && !strcmp(argv[1], "run"))
		return run(strtoul(argv[2], NULL, 0), strtoul(argv[3], NULL, 0));
	fprintf(stderr, "usage: pages_test parse | pages_test run BASE HUGE\n");
	return 2;
}

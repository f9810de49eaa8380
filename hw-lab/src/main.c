/* hwlab: the benchmark table and its command line. `hw-lab/run` drives this binary and
 * adds the probe; run it directly to see one benchmark's raw JSON. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cases.h"
#include "harness.h"

#ifndef HWLAB_X86
/* Built without x86: the x86 benchmarks still appear in the result, skipped with why. */
static const char *x86_only(struct hw_ctx *ctx)
{
	(void)ctx;
#if defined(HWLAB_GENERIC_ONLY)
	return "x86 only, and this build has no x86 instructions (-DHWLAB_GENERIC_ONLY)";
#elif defined(__aarch64__)
	return "x86 only (cpuid, the KVM x86 register API); this machine is aarch64";
#else
	return "x86 only (cpuid, the KVM x86 register API); this machine is not x86";
#endif
}
#define cpuid_exit_unsupported x86_only
#define cpuid_exit_run NULL
#define kvm_exits_unsupported x86_only
#define kvm_exits_run NULL
#endif

static const struct hw_case cases[] = {
	{"cpuid_exit", "cpuid always exits under VT-x/SVM: rdtsc;cpuid;rdtsc costs an exit "
		       "and an entry in a VM, a few hundred cycles on bare metal (cpuid_leaf0 "
		       "is the published unfenced method; cpuid_leaf0_fenced the fenced one)",
	 cpuid_exit_unsupported, cpuid_exit_run},
	{"memtouch", "first touch of a page faults (and, in a VM, also fills the EPT/NPT or "
		     "shadow table); second touch does not; huge pages fault 512x less",
	 NULL, memtouch_run},
	{"ptrchase", "a dependent load per page: once the working set outgrows the TLB every "
		     "access pays a page walk (a 2-D walk in a VM); huge pages shorten it",
	 NULL, ptrchase_run},
	{"ctxswitch", "two processes ping-ponging over pipes: a context switch and, in a "
		      "shadow-paged VM, a mov cr3 that exits",
	 NULL, ctxswitch_run},
	{"kvm_exits", "a micro-VM through the KVM API: exit to userspace vs in-kernel exit, "
		      "first-touch (EPT/NPT/shadow fill) vs second touch, guest and host page "
		      "sizes, mov cr3/invlpg exits under shadow paging",
	 kvm_exits_unsupported, kvm_exits_run},
};
#define NCASES (sizeof cases / sizeof cases[0])

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hwlab bench [--quick] [--only NAME[:SUBCASE]] [--mem-mib N] "
		"[--kvm-iters N] [--timeout SECONDS]\n"
		"       hwlab list        names of the benchmarks built for this machine\n"
		"       hwlab cpuid       the x86 CPUID facts the probe needs, as JSON\n"
		"       hwlab timer       the timer (source, unit, frequency), as JSON\n");
}

static int parse_uint(const char *flag, const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s ? s : "", &end, 10);
	if (!s || !*s || *end || errno || v == 0 || v > max || s[0] == '-') {
		fprintf(stderr, "hwlab: %s needs a whole number from 1 to %lu, got '%s'\n", flag,
			max, s ? s : "");
		return -1;
	}
	*out = v;
	return 0;
}

static void emit_timer(struct hw_ctx *c, int quick)
{
	struct hw_timer_info t;
	hw_timer_info(&t, quick);
	hw_json_open(c, "timer", '{');
	hw_json_str(c, "source", t.source);
	hw_json_str(c, "unit", t.unit);
	hw_json_num(c, "freq_hz", t.freq_hz);
	hw_json_str(c, "freq_method", t.freq_method);
	hw_json_num(c, "calibrated_hz", t.calibrated_hz);
	hw_json_close(c, '}');
}

static int bench(int argc, char **argv)
{
	struct hw_ctx ctx = {0};
	const char *only = NULL;
	unsigned long v;
	ctx.out = stdout;
	ctx.timeout_s = 60;
	size_t mem_mib = 0;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--quick")) {
			ctx.quick = 1;
		} else if (!strcmp(a, "--only")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "hwlab: --only needs a benchmark name\n");
				return 2;
			}
			only = argv[++i];
		} else if (!strcmp(a, "--mem-mib")) {
			if (parse_uint(a, i + 1 < argc ? argv[++i] : NULL, 1u << 20, &v))
				return 2;
			mem_mib = v;
		} else if (!strcmp(a, "--kvm-iters")) {
			if (parse_uint(a, i + 1 < argc ? argv[++i] : NULL, 1u << 24, &v))
				return 2;
			ctx.kvm_iters = (unsigned)v;
		} else if (!strcmp(a, "--timeout")) {
			if (parse_uint(a, i + 1 < argc ? argv[++i] : NULL, 86400, &v))
				return 2;
			ctx.timeout_s = (unsigned)v;
		} else {
			fprintf(stderr, "hwlab: unknown option '%s'\n", a);
			usage(stderr);
			return 2;
		}
	}
	ctx.mem_bytes = (mem_mib ? mem_mib : (ctx.quick ? 64 : 1024)) << 20;

	char name[64] = "";
	if (only) {
		snprintf(name, sizeof name, "%s", only);
		char *colon = strchr(name, ':');
		if (colon) {
			*colon = 0;
			ctx.subcase = only + (colon - name) + 1;
		}
		size_t i;
		for (i = 0; i < NCASES; i++)
			if (!strcmp(cases[i].name, name) && cases[i].run)
				break;
		if (i == NCASES) {
			fprintf(stderr, "hwlab: no benchmark named '%s' here; built:", name);
			for (i = 0; i < NCASES; i++)
				if (cases[i].run)
					fprintf(stderr, " %s", cases[i].name);
			fputc('\n', stderr);
			return 2;
		}
	}

	hw_json_open(&ctx, NULL, '{');
	hw_json_str(&ctx, "mode", ctx.quick ? "quick" : "full");
	emit_timer(&ctx, ctx.quick);
	hw_json_open(&ctx, "benchmarks", '[');
	int failed = 0;
	for (size_t i = 0; i < NCASES; i++) {
		const struct hw_case *k = &cases[i];
		if (only && strcmp(k->name, name))
			continue;
		hw_json_open(&ctx, NULL, '{');
		int depth = ctx.depth;
		hw_json_str(&ctx, "name", k->name);
		hw_json_str(&ctx, "teaches", k->teaches);
		const char *why = k->unsupported ? k->unsupported(&ctx) : NULL;
		ctx.nnotes = 0;
		ctx.nsub = 0;
		int rc = 0;
		char reason[128] = "";
		if (why) {
			hw_progress("%s: skipped (%s)", k->name, why);
		} else {
			hw_progress("%s: running%s", k->name, ctx.quick ? " (quick)" : "");
			uint64_t t0 = hw_mono_ns();
			hw_json_open(&ctx, "cases", '[');
			rc = k->run(&ctx);
			hw_json_unwind(&ctx, depth + 1);
			hw_json_close(&ctx, ']');
			hw_json_num(&ctx, "wall_s", (double)(hw_mono_ns() - t0) / 1e9);
			if (ctx.subcase && !ctx.nsub) {
				snprintf(reason, sizeof reason, "no sub-case named '%s' in %s",
					 ctx.subcase, k->name);
				rc = -1;
			}
			hw_progress("%s: %s in %.2f s", k->name, rc ? "FAILED" : "done",
				    (double)(hw_mono_ns() - t0) / 1e9);
		}
		hw_json_str(&ctx, "status", why ? "skipped" : rc ? "error" : "ok");
		if (why || reason[0])
			hw_json_str(&ctx, "reason", why ? why : reason);
		hw_json_open(&ctx, "notes", '[');
		for (int n = 0; n < ctx.nnotes; n++)
			hw_json_str(&ctx, NULL, ctx.notes[n]);
		hw_json_close(&ctx, ']');
		hw_json_close(&ctx, '}');
		failed |= rc != 0;
		fflush(stdout);
	}
	hw_json_close(&ctx, ']');
	hw_json_close(&ctx, '}');
	return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "bench"))
		return bench(argc - 2, argv + 2);
	if (!strcmp(argv[1], "list")) { /* the benchmarks this build can run */
		for (size_t i = 0; i < NCASES; i++)
			if (cases[i].run)
				printf("%s\n", cases[i].name);
		return 0;
	}
	if (!strcmp(argv[1], "cpuid"))
		return cpuid_probe_json(stdout);
	if (!strcmp(argv[1], "timer")) { /* the timer alone, for a result of modules only */
		struct hw_ctx ctx = {0};
		ctx.out = stdout;
		hw_json_open(&ctx, NULL, '{');
		emit_timer(&ctx, 1);
		hw_json_close(&ctx, '}');
		return 0;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "hwlab: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}

/* cpuid_exit and the CPUID half of the probe. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"

#ifdef HWLAB_X86
#include <cpuid.h>

#define CPUID_SAMPLES 65536

/* The method of the published cpuid figures (the BitVisor article,
 * qiita-bitvisor-cpuid-2019 in wasm-core/data/published-figures.json), exactly:
 * CPUID_SAMPLES samples of unfenced `rdtsc; cpuid (leaf 0); rdtsc`, no warm-up, each
 * sample the difference of the two readings. Its min is the figure the article publishes (native 288, BitVisor ~1,856, KVM
 * ~1,984 cycles on a Ryzen 7 2700), so only this case compares with those. */
static void published_loop(uint64_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t a = 0, b, c = 0, d;
		uint64_t t0 = hw_rdtsc_unfenced();
		__asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
		uint64_t t1 = hw_rdtsc_unfenced();
		v[i] = t1 - t0;
	}
}

/* The same pair of unfenced readings with nothing between them. */
static void published_empty_loop(uint64_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t t0 = hw_rdtsc_unfenced();
		uint64_t t1 = hw_rdtsc_unfenced();
		v[i] = t1 - t0;
	}
}

static void op_cpuid(void *arg)
{
	uint32_t leaf = *(uint32_t *)arg, a, b, c, d;
	__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(leaf), "c"(0));
}

static void op_nothing(void *arg)
{
	(void)arg;
	__asm__ volatile("" ::: "memory");
}

const char *cpuid_exit_unsupported(struct hw_ctx *ctx)
{
	(void)ctx;
	return NULL;
}

static void emit(struct hw_ctx *c, const char *name, const char *method, int leaf,
		 unsigned warmup, const char *per, const double *v, size_t n)
{
	hw_sub_begin(c, name);
	hw_json_open(c, "params", '{');
	hw_json_str(c, "method", method);
	hw_json_u64(c, "samples", n);
	hw_json_u64(c, "warmup_samples", warmup);
	if (leaf >= 0)
		hw_json_u64(c, "leaf", (uint64_t)leaf);
	hw_json_close(c, '}');
	hw_json_open(c, "metrics", '[');
	hw_metric(c, "cycles", hw_timer_unit(), per, v, n);
	hw_json_close(c, ']');
	hw_sub_end(c, "ok", NULL);
}

/* The published unfenced loop (cpuid or nothing between the readings). */
static int published_case(struct hw_ctx *c, const char *name, int with_cpuid)
{
	if (c->subcase && strcmp(c->subcase, name))
		return 0;
	uint64_t *raw = calloc(CPUID_SAMPLES, sizeof *raw); /* zeroed: no fault inside the loop */
	double *v = malloc(CPUID_SAMPLES * sizeof *v);
	if (!raw || !v) {
		free(raw);
		free(v);
		return -1;
	}
	if (with_cpuid)
		published_loop(raw, CPUID_SAMPLES);
	else
		published_empty_loop(raw, CPUID_SAMPLES);
	for (size_t i = 0; i < CPUID_SAMPLES; i++)
		v[i] = (double)raw[i];
	if (with_cpuid)
		emit(c, name, "published: unfenced rdtsc; cpuid; rdtsc, no warm-up", 0, 0,
		     "unfenced rdtsc;cpuid;rdtsc sample (the published method)", v,
		     CPUID_SAMPLES);
	else
		emit(c, name, "published: unfenced rdtsc; rdtsc, no warm-up", -1, 0,
		     "unfenced rdtsc;rdtsc pair (the timer's own cost in the published method)", v,
		     CPUID_SAMPLES);
	free(raw);
	free(v);
	return 0;
}

/* The harness's fenced timer (lfence; rdtsc; lfence on each side of a call). */
static int fenced_case(struct hw_ctx *c, const char *name, hw_op op, int leaf, const char *per)
{
	if (c->subcase && strcmp(c->subcase, name))
		return 0;
	struct hw_samples s;
	uint32_t l = leaf < 0 ? 0 : (uint32_t)leaf;
	if (hw_samples_init(&s, CPUID_SAMPLES))
		return -1;
	hw_sample_each(op, &l, 1024, &s); /* warm up caches and the branch predictor */
	s.n = 0;
	hw_sample_each(op, &l, CPUID_SAMPLES, &s);
	emit(c, name, "fenced: lfence; rdtsc; lfence around a call, after 1,024 warm-up samples",
	     leaf, 1024, per, s.v, s.n);
	hw_samples_free(&s);
	return 0;
}

int cpuid_exit_run(struct hw_ctx *c)
{
	/* cpuid_leaf0 is the published method and figure; the fenced pair measures cpuid alone
	 * once its timer overhead (timer_overhead's min) is subtracted. */
	if (published_case(c, "cpuid_leaf0", 1) || published_case(c, "timer_overhead_unfenced", 0))
		return -1;
	if (fenced_case(c, "timer_overhead", op_nothing, -1, "fenced rdtsc;rdtsc pair around an empty call"))
		return -1;
	return fenced_case(c, "cpuid_leaf0_fenced", op_cpuid, 0,
			   "fenced rdtsc;cpuid;rdtsc sample (includes timer_overhead)");
}

static void put_regs_str(char *dst, uint32_t a, uint32_t b, uint32_t c)
{
	memcpy(dst, &a, 4);
	memcpy(dst + 4, &b, 4);
	memcpy(dst + 8, &c, 4);
	dst[12] = 0;
	for (int i = 0; i < 12; i++)
		if ((unsigned char)dst[i] < 0x20 || (unsigned char)dst[i] > 0x7e)
			dst[i] = dst[i] ? '?' : ' ';
}

int cpuid_probe_json(FILE *out)
{
	struct hw_ctx ctx = {0};
	struct hw_ctx *c = &ctx;
	uint32_t a, b, cx, d, max, maxext;
	char vendor[13], sig[13], brand[49] = "";
	c->out = out;

	__cpuid(0, max, b, cx, d);
	put_regs_str(vendor, b, d, cx);
	__cpuid(1, a, b, cx, d);
	uint32_t family = (a >> 8) & 0xf, model = (a >> 4) & 0xf, stepping = a & 0xf;
	if (family == 0xf)
		family += (a >> 20) & 0xff;
	if (family == 0x6 || family >= 0xf)
		model |= ((a >> 16) & 0xf) << 4;
	int hv = (cx >> 31) & 1, vmx = (cx >> 5) & 1;

	__cpuid(0x80000000, maxext, b, cx, d);
	int svm = 0;
	uint32_t svm_edx = 0, svm_rev = 0;
	if (maxext >= 0x80000001) {
		__cpuid(0x80000001, a, b, cx, d);
		svm = (cx >> 2) & 1;
	}
	if (maxext >= 0x80000004) {
		uint32_t r[12];
		for (int i = 0; i < 3; i++)
			__cpuid(0x80000002 + i, r[4 * i], r[4 * i + 1], r[4 * i + 2], r[4 * i + 3]);
		memcpy(brand, r, 48);
		brand[48] = 0;
	}
	if (svm && maxext >= 0x8000000a)
		__cpuid(0x8000000a, svm_rev, b, cx, svm_edx);

	hw_json_open(c, NULL, '{');
	hw_json_bool(c, "available", 1);
	hw_json_str(c, "vendor", vendor);
	hw_json_str(c, "brand", brand);
	hw_json_u64(c, "family", family);
	hw_json_u64(c, "model", model);
	hw_json_u64(c, "stepping", stepping);
	hw_json_u64(c, "max_leaf", max);
	hw_json_bool(c, "hypervisor_bit", hv);
	if (hv) {
		/* Leaf 0x40000000 is only meaningful with the hypervisor bit set. */
		__cpuid(0x40000000, a, b, cx, d);
		put_regs_str(sig, b, cx, d);
		hw_json_str(c, "hypervisor_signature", sig);
		hw_json_u64(c, "hypervisor_max_leaf", a);
	}
	hw_json_bool(c, "vmx", vmx);
	hw_json_bool(c, "svm", svm);
	if (svm && maxext >= 0x8000000a) {
		/* CPUID 0x8000000A EDX (AMD APM vol. 3): the SVM feature bits */
		hw_json_open(c, "svm_features", '{');
		hw_json_bool(c, "npt", svm_edx & 1);
		hw_json_bool(c, "lbr_virt", (svm_edx >> 1) & 1);
		hw_json_bool(c, "nrip_save", (svm_edx >> 3) & 1);
		hw_json_bool(c, "vmcb_clean", (svm_edx >> 5) & 1);
		hw_json_bool(c, "flush_by_asid", (svm_edx >> 6) & 1);
		hw_json_bool(c, "decode_assists", (svm_edx >> 7) & 1);
		hw_json_bool(c, "avic", (svm_edx >> 13) & 1);
		hw_json_bool(c, "vmsave_vmload_virt", (svm_edx >> 15) & 1);
		hw_json_bool(c, "vgif", (svm_edx >> 16) & 1);
		hw_json_u64(c, "svm_revision", svm_rev & 0xff);
		hw_json_close(c, '}');
	}
	hw_json_close(c, '}');
	return 0;
}

#else /* not x86 */

int cpuid_probe_json(FILE *out)
{
	fputs("{\"available\":false}\n", out);
	return 0;
}

#endif

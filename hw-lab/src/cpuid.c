/* cpuid_exit and the CPUID half of the probe. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cases.h"

#ifdef HWLAB_X86
#include <cpuid.h>

#define CPUID_SAMPLES 65536

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

static int one(struct hw_ctx *c, const char *name, hw_op op, uint32_t leaf, const char *per)
{
	struct hw_samples s;
	if (hw_samples_init(&s, CPUID_SAMPLES))
		return -1;
	hw_sample_each(op, &leaf, 1024, &s); /* warm up caches and the branch predictor */
	s.n = 0;
	hw_sample_each(op, &leaf, CPUID_SAMPLES, &s);
	hw_sub_begin(c, name);
	hw_json_open(c, "params", '{');
	hw_json_u64(c, "samples", CPUID_SAMPLES);
	if (op == op_cpuid)
		hw_json_u64(c, "leaf", leaf);
	hw_json_close(c, '}');
	hw_json_open(c, "metrics", '[');
	hw_metric(c, "cycles", hw_timer_unit(), per, s.v, s.n);
	hw_json_close(c, ']');
	hw_sub_end(c, "ok", NULL);
	hw_samples_free(&s);
	return 0;
}

int cpuid_exit_run(struct hw_ctx *c)
{
	/* The harness's own cost (two fenced rdtsc and a call): subtract its min. */
	if (one(c, "timer_overhead", op_nothing, 0, "rdtsc;rdtsc pair"))
		return -1;
	return one(c, "cpuid_leaf0", op_cpuid, 0, "rdtsc;cpuid;rdtsc sample");
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

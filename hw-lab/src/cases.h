/* The benchmarks; each file implements one row of the table in main.c. */
#ifndef HWLAB_CASES_H
#define HWLAB_CASES_H

#include <stdio.h>

#include "harness.h"

int memtouch_run(struct hw_ctx *ctx);
int ptrchase_run(struct hw_ctx *ctx);
int ctxswitch_run(struct hw_ctx *ctx);

#ifdef HWLAB_X86
const char *cpuid_exit_unsupported(struct hw_ctx *ctx);
int cpuid_exit_run(struct hw_ctx *ctx);
const char *kvm_exits_unsupported(struct hw_ctx *ctx);
int kvm_exits_run(struct hw_ctx *ctx);
#endif

/* `hwlab cpuid`: vendor, brand, family/model, hypervisor bit and signature, VMX/SVM
 * feature bits; on other architectures it prints {"available": false}. */
int cpuid_probe_json(FILE *out);

#endif

/* vmsim experiment: synthetic workloads under every mode (see experiment.c). */
#ifndef VMSIM_EXPERIMENT_H
#define VMSIM_EXPERIMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct strbuf;

enum exp_format { EXP_TABLE, EXP_JSON, EXP_CSV };

typedef struct experiment_opts {
    int workload;               /* index into workload_names, -1 = all */
    uint64_t accesses, seed, footprint_mib;
    uint32_t spaces;            /* memcached: address spaces */
    uint32_t cr3_targets;       /* shadow: VMX CR3-target values */
    bool paravirt_cr3;          /* shadow: the paravirtual CR3 cache */
    bool on_demand;             /* tables filled on demand, not built in advance (model.md 5b) */
    double cycles_per_access, cycles_per_ref, cycles_per_exit, cycles_per_vmfunc, refill_trap_cycles;
    enum exp_format format;
    bool progress;
} experiment_opts;

extern const char *const workload_names[], *const workload_descriptions[];

/* The index of a workload by its name or an older alias (mcf, gcc, memcached), or -1. */
int experiment_workload(const char *name);

void experiment_defaults(experiment_opts *o);
/* One workload (not gate) with the default cost model: the overhead of each mode against
 * native on its machine, in the order x86 native, shadow, ept, npt, sunway native, flat. */
bool experiment_overheads(int workload, uint64_t accesses, double overhead_pct[6], char *err, size_t errlen);
/* Returns 0, or 1 with err set. */
int experiment_run(const experiment_opts *o, struct strbuf *out, char *err, size_t errlen);

#endif

/* vmsim: the memory-virtualization translation engine. One scenario (JSON) in, one
 * result (JSON) out; docs/model.md is the contract. The same entry points serve the
 * native CLI and the WebAssembly module. */
#ifndef VMSIM_H
#define VMSIM_H

#include <stddef.h>

#define VMSIM_OK 0
#define VMSIM_BAD_SCENARIO 2
#define VMSIM_NO_MEMORY 3

#ifdef __cplusplus
extern "C" {
#endif

/* Translates every access of the scenario. On VMSIM_OK *out is the result JSON; on an
 * error it is a one-line message naming the field. Either way free it with vmsim_free. */
int vmsim_run(const char *scenario_json, size_t len, char **out);
/* The same walk as a readable table. */
int vmsim_explain(const char *scenario_json, size_t len, char **out);
/* What vmsim_run counts and no more: {"memory_refs": [per access], "exits": [per access],
 * "totals": {"accesses", "memory_refs", "exits"}}. The same walks without their steps, a
 * few KB instead of some MB: what a grader that only weighs references and exits needs. */
int vmsim_counts(const char *scenario_json, size_t len, char **out);
/* The built machine before any access (memory words, CR3s, EPTP, EPTP list, PDPTEs) as
 * JSON: what tests/bochs loads into an executing CPU. */
int vmsim_image(const char *scenario_json, size_t len, char **out);
void vmsim_free(void *p);
const char *vmsim_version(void);

#ifdef __cplusplus
}
#endif

#endif

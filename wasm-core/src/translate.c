/* Translating one access (docs/model.md section 4): the dispatcher. VM functions and
 * invlpg are the same in every mode; everything else goes through the mode's table
 * (mode_ops, chosen when the machine was built), after the TLB when it answers. This
 * file asks no mode what it is. */
#include "walk.h"

#include <stddef.h>

/* Every field before the steps back to zero, the record flag kept. Field by field: a
 * memset of the 120 bytes is a library call in WebAssembly and a slow `rep stos` in
 * GCC's x86 code, once per access. */
static inline void result_reset(vm_result *r)
{
    r->outcome = OUT_OK;
    r->gpa_valid = r->hpa_valid = false;
    r->gpa = r->hpa = 0;
    r->guest_page_size = r->nested_page_size = 0;
    r->memory_refs = r->guest_refs = r->nested_refs = r->ad_writes = r->exits = 0;
    r->tlb_hit = 0;
    r->pwc_hits = r->ntlb_hits = 0;
    r->fault = (vm_fault){0};
    r->nsteps = 0;
}
_Static_assert(offsetof(vm_result, steps) == 120, "a field was added to vm_result: reset it in result_reset");

void translate(machine *m, const vm_access *a, vm_result *r)
{
    const mode_ops *ops = m->ops;
    result_reset(r);
    r->tlb_hit = -1;
    if (ops->tick)
        ops->tick(m);       /* the VMM policy's clock: one tick per entry of the access list */
    if (a->op == OP_VMFUNC || a->op == OP_VMCALL) {
        vmfunc_execute(m, a, r);
        if (a->op == OP_VMFUNC && r->outcome == OUT_OK && m->s->flush_on_eptp_switch) {
            struct cache *c[] = {m->tlb, m->gpwc, m->npwc, m->ntlb};
            for (int i = 0; i < 4; i++)
                if (c[i])
                    cache_flush(c[i]);
        }
        return;
    }
    if (a->op == OP_MOV_CR3 || a->op == OP_PTE_WRITE) {
        ops->event(m, a, r);
        return;
    }
    if (a->op == OP_INVLPG) {
        walk_cache_event(m, a, r);
        return;
    }
    if (m->tlb && tlb_lookup(m, a, r))
        return;
    ops->translate(m, a, r);
}

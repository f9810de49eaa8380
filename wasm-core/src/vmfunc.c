/* VMFUNC leaf 0, EPTP switching (SDM vol. 3, 26.5.6 and 25.5.6), and VMCALL for
 * comparison. With VM functions enabled, VMFUNC with EAX = 0 and ECX = index loads
 * entry ECX of the EPTP list (a 4 KiB page of 512 EPTPs the hypervisor prepared) as
 * the active EPT, with no VM exit. An index >= 512, an invalid EPTP in that entry or
 * a function that is not enabled is a VM exit (reason 59); VMFUNC without VM functions
 * enabled raises #UD in the guest. VMCALL always exits (reason 18). */
#include "model.h"

static void exit_with(vm_result *r, enum vm_outcome out, enum vm_reason why)
{
    r->outcome = out;
    r->exits++;
    r->fault.dim = DIM_NESTED;
    r->fault.level = 1;
    r->fault.stage = 0;
    r->fault.reason = (uint8_t)why;
}

/* SDM 26.5.6.3: the EPTP must be valid as at VM entry: memory type UC or WB, a walk
 * length of the machine's levels, no reserved bits (11:7 and above maxphyaddr). */
static bool eptp_valid(const scenario *s, uint64_t eptp)
{
    unsigned mt = (unsigned)(eptp & 7);
    if (mt != 0 && mt != 6)
        return false;
    if (((eptp >> 3) & 7) != (uint64_t)(s->nested_levels - 1))
        return false;
    return !(eptp & (bits_range(11, 7) | bits_range(63, s->maxphyaddr)));
}

void vmfunc_execute(machine *m, const vm_access *a, vm_result *r)
{
    const scenario *s = m->s;
    if (a->op == OP_VMCALL) {
        exit_with(r, OUT_VMCALL_EXIT, REASON_HYPERCALL);
        return;
    }
    if (m->nf != &nested_ept || !s->vmfunc) {
        r->outcome = OUT_INVALID_OPCODE;
        r->fault = (vm_fault){.dim = DIM_GUEST, .level = 1, .reason = REASON_VMFUNC_DISABLED};
        return;
    }
    if (a->function != 0) {
        exit_with(r, OUT_VMFUNC_EXIT, REASON_FUNCTION);
        return;
    }
    if (a->eptp_index >= EPTP_LIST_ENTRIES) {
        exit_with(r, OUT_VMFUNC_EXIT, REASON_INDEX_RANGE);
        return;
    }
    uint64_t ea = m->eptp_list_hpa + 8u * a->eptp_index;
    uint64_t eptp = mem_read(&m->mem, ea, 8);
    dc_ref(m, ea);
    r->memory_refs++;
    r->nested_refs++;
    bool valid = eptp_valid(s, eptp);
    if (r->record && r->nsteps < VM_MAX_STEPS)
        r->steps[r->nsteps++] = (vm_step){.kind = STEP_EPTP_LIST, .dim = DIM_NESTED, .level = 1, .stage = 0,
                                          .table = m->eptp_list_hpa, .index = a->eptp_index, .entry_hpa = ea,
                                          .entry = eptp, .ref = (uint16_t)r->memory_refs,
                                          .result = valid ? RES_PAGE : RES_MISCONFIG};
    if (!valid) {
        exit_with(r, OUT_VMFUNC_EXIT, REASON_INVALID_EPTP);
        return;
    }
    m->eptp = eptp;
    m->eptp_index = a->eptp_index;
    m->nested_root = eptp & bits_range(51, 12);
    r->outcome = OUT_OK;
}

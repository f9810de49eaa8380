/* Flat nested page tables (swFNPT, after Ahn, Jin and Huh, ISCA 2012): one contiguous
 * array indexed by guest frame number, each 8-byte entry the host frame | valid bit.
 * One reference replaces a whole nested walk. An invalid entry exits to the VMM, which
 * finds the gpa in its memory slots, fills the entry and re-enters. The table itself is
 * built with the others (build.c: its frames, and every slot's entry with flat.prefill). */
#include "walk.h"

/* The flat table: one reference per gpa; an invalid entry exits to the VMM, which
 * fills it from its memory slots (an exit and a fill step) and the read is retried. */
static bool flat_walk(machine *m, vm_result *r, uint64_t gpa, const nested_req *q, nested_out *o)
{
    const scenario *s = m->s;
    const uint64_t entries = flat_table_bytes(s) / 8;
    uint64_t gfn = gpa >> __builtin_ctzll(m->flat_page);      /* frames are 4 or 8 KiB */
    uint64_t table = s->flat_table_base, ea = table + 8 * gfn;
    if (gfn >= entries) {
        /* beyond guest_ram the table has no entry: the miss exits with no reference */
        r->exits++;
        r->outcome = OUT_FLAT_FAULT;
        r->fault = (vm_fault){.dim = DIM_NESTED, .level = 1, .stage = (uint8_t)q->stage,
                              .reason = REASON_UNMAPPED, .fault_gpa = gpa};
        return false;
    }
    for (int attempt = 0;; attempt++) {
        uint64_t e = mem_read(&m->mem, ea, 8);
        dc_ref(m, ea);
        r->memory_refs++;
        r->nested_refs++;
        vm_step *st = NULL;
        if (r->record && r->nsteps < VM_MAX_STEPS) {
            st = &r->steps[r->nsteps++];
            *st = (vm_step){.kind = STEP_READ, .dim = DIM_NESTED, .level = 1, .stage = (uint8_t)q->stage,
                            .gpa_valid = true, .gpa = gpa, .table = table, .index = (uint32_t)gfn, .entry_hpa = ea,
                            .entry = e, .ref = (uint16_t)r->memory_refs, .result = RES_PAGE};
        }
        if (e & 1) {
            o->hpa = (e & bits_range(51, 12) & ~(m->flat_page - 1)) | (gpa & (m->flat_page - 1));
            o->page_size = m->flat_page;
            o->perms = PERM_R | PERM_W | PERM_X | PERM_U;
            o->leaf_level = 1;
            return true;
        }
        if (st)
            st->result = RES_NOT_PRESENT;
        uint64_t hpa;
        r->exits++;
        if (attempt > 0 || !memslot_lookup(s, gpa & ~(m->flat_page - 1), &hpa)) {
            r->outcome = OUT_FLAT_FAULT;
            r->fault = (vm_fault){.dim = DIM_NESTED, .level = 1, .stage = (uint8_t)q->stage,
                                  .reason = REASON_UNMAPPED, .fault_gpa = gpa};
            return false;
        }
        mem_write_existing(&m->mem, ea, 8, hpa | 1);
        if (r->record && r->nsteps < VM_MAX_STEPS)
            r->steps[r->nsteps++] = (vm_step){.kind = STEP_VMM_FILL, .dim = DIM_NESTED, .level = 1,
                                              .stage = (uint8_t)q->stage, .gpa_valid = true, .gpa = gpa,
                                              .table = table, .index = (uint32_t)gfn, .entry_hpa = ea, .entry = e,
                                              .result = RES_WRITTEN};
    }
}

static bool flat_build(machine *m, char *err, size_t errlen)
{
    m->nwalk[0] = m->nwalk[1] = flat_walk;
    return true;
}

const mode_ops mode_flat = {
    .name = "flat",
    .flat_table = true,
    .memslots = true,
    .build = flat_build,
    .translate = walk_guest,
    .event = walk_event,
};

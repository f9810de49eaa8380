/* Two-dimensional paging, Intel EPT and AMD NPT: the guest walk with every gpa it
 * touches (each guest table entry's and the final one) through the nested walk. The
 * two modes differ only in their nested format (nested_ept.c, nested_npt.c), which the
 * shared walk (walk.c) reads through m->nf. */
#include "walk.h"

static bool tdp_build(machine *m, char *err, size_t errlen)
{
    walk_nested_setup(m);
    return true;
}

const mode_ops mode_ept = {
    .name = "ept",
    .nested = &nested_ept,
    .build = tdp_build,
    .translate = walk_guest,
    .event = walk_event,
};

const mode_ops mode_npt = {
    .name = "npt",
    .nested = &nested_npt,
    .build = tdp_build,
    .translate = walk_guest,
    .event = walk_event,
};

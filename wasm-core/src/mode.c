/* The table of modes, and a machine built for one: the row the scenario's mode names,
 * its page tables (build.c), then the mode's own build and prefill. Adding a mode is a
 * file with its mode_ops and a row here (docs/model.md, "Adding a mode"). */
#include "model.h"

#include <string.h>

static const mode_ops *const modes[] = {
    [MODE_NATIVE] = &mode_native, [MODE_EPT] = &mode_ept,       [MODE_NPT] = &mode_npt,
    [MODE_FLAT] = &mode_flat,     [MODE_SHADOW] = &mode_shadow, [MODE_AGILE] = &mode_agile,
};

bool machine_build(machine *m, const scenario *s, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    m->s = s;
    m->ops = modes[s->mode];
    if (!tables_build(m, err, errlen) || (m->ops->build && !m->ops->build(m, err, errlen)) ||
        (m->ops->prefill && !m->ops->prefill(m, err, errlen))) {
        machine_free(m);
        return false;
    }
    return true;
}

void machine_free(machine *m)
{
    if (m->ops && m->ops->free)
        m->ops->free(m);
    tables_free(m);
}

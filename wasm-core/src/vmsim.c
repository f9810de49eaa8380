#include "vmsim.h"
#include "model.h"
#include "json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __EMSCRIPTEN__
#include <emscripten.h>
#define EXPORT EMSCRIPTEN_KEEPALIVE
#else
#define EXPORT
#endif

static int fail_with(char **out, int status, const char *msg)
{
    *out = malloc(strlen(msg) + 1);
    if (*out)
        strcpy(*out, msg);
    return status;
}

/* what: 0 the result JSON, 1 the explain table, 2 the built image, 3 counts only (each
 * access's memory references and exits, and the totals, without its walk: see
 * vmsim_counts). */
static int run(const char *json, size_t len, char **out, int what)
{
    bool explain = what == 1;
    bool counts_only = what == 3;
    char err[512];
    scenario s;
    machine m;
    *out = NULL;
    if (!scenario_parse(json, len, &s, err, sizeof err))
        return fail_with(out, VMSIM_BAD_SCENARIO, err);
    if (!machine_build(&m, &s, err, sizeof err)) {
        scenario_free(&s);
        return fail_with(out, VMSIM_BAD_SCENARIO, err);
    }
    if (what == 2) {
        strbuf ib;
        sb_init(&ib);
        image_json(&ib, &m);
        machine_free(&m);
        scenario_free(&s);
        *out = sb_take(&ib);
        return *out ? VMSIM_OK : fail_with(out, VMSIM_NO_MEMORY, "out of memory while writing the image");
    }
    vm_result *r = malloc(sizeof *r);
    if (!r) {
        machine_free(&m);
        scenario_free(&s);
        return fail_with(out, VMSIM_NO_MEMORY, "out of memory");
    }
    strbuf sb;
    sb_init(&sb);
    vm_result totals = {0};
    uint32_t counts[OUT_COUNT] = {0};
    if (explain)
        sb_printf(&sb, "scenario %s: mode %s, guest %s paging, CR3 0x%llx%s\n", s.name,
                  m.ops->name, m.gf->name,
                  (unsigned long long)m.cr3, "");
    else if (counts_only)
        sb_puts(&sb, "{\"memory_refs\":[");
    else
        result_json_begin(&sb, &m);
    uint32_t *exits = counts_only ? malloc(sizeof *exits * (s.n_accesses ? s.n_accesses : 1)) : NULL;
    if (counts_only && !exits) {
        free(r);
        machine_free(&m);
        scenario_free(&s);
        return fail_with(out, VMSIM_NO_MEMORY, "out of memory");
    }
    for (uint32_t i = 0; i < s.n_accesses; i++) {
        r->record = !counts_only; /* the same walk, its steps not kept */
        bool contents = s.cache_contents && i < CONTENTS_MAX_ACCESSES && !explain && !counts_only;
        if (contents)
            machine_mark_caches(&m);
        translate(&m, &s.accesses[i], r);
        totals.memory_refs += r->memory_refs;
        totals.guest_refs += r->guest_refs;
        totals.nested_refs += r->nested_refs;
        totals.ad_writes += r->ad_writes;
        totals.exits += r->exits;
        counts[r->outcome]++;
        if (explain) {
            explain_access(&sb, &m, &s.accesses[i], r, i);
        } else if (counts_only) {
            sb_printf(&sb, i ? ",%u" : "%u", r->memory_refs);
            exits[i] = r->exits;
        } else {
            if (i)
                sb_putc(&sb, ',');
            result_json_access(&sb, &m, &s.accesses[i], r, contents);
        }
    }
    if (counts_only) {
        sb_puts(&sb, "],\"exits\":[");
        for (uint32_t i = 0; i < s.n_accesses; i++)
            sb_printf(&sb, i ? ",%u" : "%u", exits[i]);
        sb_printf(&sb, "],\"totals\":{\"accesses\":%u,\"memory_refs\":%u,\"exits\":%u}}\n", s.n_accesses,
                  totals.memory_refs, totals.exits);
        free(exits);
    } else if (!explain)
        result_json_end(&sb, &m, &totals, counts, s.n_accesses);
    free(r);
    machine_free(&m);
    scenario_free(&s);
    *out = sb_take(&sb);
    if (!*out)
        return fail_with(out, VMSIM_NO_MEMORY, "out of memory while writing the result");
    return VMSIM_OK;
}

EXPORT int vmsim_run(const char *json, size_t len, char **out)
{
    return run(json, len, out, 0);
}

EXPORT int vmsim_counts(const char *json, size_t len, char **out)
{
    return run(json, len, out, 3);
}

EXPORT int vmsim_explain(const char *json, size_t len, char **out)
{
    return run(json, len, out, 1);
}

EXPORT int vmsim_image(const char *json, size_t len, char **out)
{
    return run(json, len, out, 2);
}

EXPORT void vmsim_free(void *p)
{
    free(p);
}

EXPORT const char *vmsim_version(void)
{
    return "vmsim 0.1.0 (vmsim-result/1)";
}

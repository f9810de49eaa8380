/* vmsim replay --machine FILE: a hw-lab result (hw-lab/schema/result.schema.json) turned
 * into the cost model's numbers, with where each comes from (docs/replay.md, "Your
 * machine"), written from that description apart from the page's web/src/trace/machine.ts
 * (tests/engine/test_replay.py compares the two on the same result):
 * - an exit: the cpuid sample's minimum less the timer's own minimum, when the result was
 *   measured inside a VM (on bare metal cpuid does not exit: no exit cost);
 * - a page-walk reference: the pointer chase's median per access at its largest working
 *   set with 4 KiB pages, less the same working set's with transparent huge pages (a
 *   4 KiB walk reads one level more), to a tenth of a cycle. */
#include "replay_cli.h"
#include "json.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static bool case_ok(const json_value *c)
{
    const json_value *s = json_get(c, "status");
    return !s || (s->type == JSON_STRING && !strcmp(s->str, "ok"));
}

static const json_value *bench(const json_value *root, const char *name)
{
    const json_value *b = json_get(root, "benchmarks");
    for (const json_value *x = b ? b->first_child : NULL; x; x = x->next) {
        const json_value *n = json_get(x, "name");
        if (n && n->type == JSON_STRING && !strcmp(n->str, name))
            return x;
    }
    return NULL;
}

/* metric name's field (min, median) of case c; false when absent */
static bool metric(const json_value *c, const char *name, const char *field, double *out)
{
    const json_value *ms = json_get(c, "metrics");
    for (const json_value *m = ms ? ms->first_child : NULL; m; m = m->next) {
        const json_value *n = json_get(m, "name"), *v = json_get(m, field);
        if (n && n->type == JSON_STRING && !strcmp(n->str, name) && v && v->type == JSON_NUMBER) {
            *out = v->number;
            return true;
        }
    }
    return false;
}

static const char *case_name(const json_value *c)
{
    const json_value *n = json_get(c, "name");
    return n && n->type == JSON_STRING ? n->str : "";
}

static double working_set(const json_value *c)
{
    const json_value *w = json_get(json_get(c, "params"), "working_set_bytes");
    return w && w->type == JSON_NUMBER ? w->number : 0;
}

bool machine_option(const char *text, size_t len, strbuf *o, char *err, size_t errlen)
{
    json_doc doc;
    if (!json_parse(text, len, &doc)) {
        snprintf(err, errlen, "not JSON: give the result file hw-lab/run wrote (results/*.json)");
        return false;
    }
    const json_value *root = doc.root;
    bool ok = false;
    const json_value *benchmarks = json_get(root, "benchmarks"), *probe = json_get(root, "probe");
    if (!benchmarks || benchmarks->type != JSON_ARRAY || !probe || probe->type != JSON_OBJECT) {
        snprintf(err, errlen, "not a hw-lab result (no probe or benchmarks): give the file hw-lab/run wrote");
        goto out;
    }
    const json_value *unit = json_get(json_get(root, "timer"), "unit");
    if (unit && unit->type == JSON_STRING && strcmp(unit->str, "tsc_cycles")) {
        snprintf(err, errlen, "the result is timed in %.40s, not TSC cycles: its costs cannot price cycles", unit->str);
        goto out;
    }
    const json_value *in_vm = json_get(json_get(probe, "virtualization"), "in_vm");
    bool vm = in_vm && in_vm->type == JSON_BOOL && in_vm->boolean;
    char exit_from[160] = "", ref_from[200] = "";
    double exit = -1, ref = -1;
    const json_value *cpuid = json_get(bench(root, "cpuid_exit"), "cases"), *leaf = NULL, *timer = NULL;
    for (const json_value *c = cpuid ? cpuid->first_child : NULL; c; c = c->next) {
        if (!leaf && !strncmp(case_name(c), "cpuid", 5) && case_ok(c))
            leaf = c;
        if (!timer && !strcmp(case_name(c), "timer_overhead") && case_ok(c))
            timer = c;
    }
    double cm, tm;
    if (vm && leaf && timer && metric(leaf, "cycles", "min", &cm) && metric(timer, "cycles", "min", &tm) && cm > tm) {
        exit = cm - tm;
        snprintf(exit_from, sizeof exit_from, "cpuid_exit %.40s min %g - timer_overhead min %g", case_name(leaf), cm, tm);
    }
    const json_value *chase = json_get(bench(root, "ptrchase"), "cases"), *largest = NULL, *huge = NULL;
    for (const json_value *c = chase ? chase->first_child : NULL; c; c = c->next)
        if (case_ok(c) && !strncmp(case_name(c), "4k_", 3) && (!largest || working_set(c) > working_set(largest)))
            largest = c;
    for (const json_value *c = chase && largest ? chase->first_child : NULL; c && !huge; c = c->next)
        if (case_ok(c) && !strncmp(case_name(c), "thp_", 4) && working_set(c) == working_set(largest))
            huge = c;
    double a4, a2;
    if (largest && huge && metric(largest, "access", "median", &a4) && metric(huge, "access", "median", &a2) && a4 > a2) {
        ref = round((a4 - a2) * 10) / 10;
        snprintf(ref_from, sizeof ref_from, "ptrchase %.40s median %.1f - %.40s median %.1f", case_name(largest), a4,
                 case_name(huge), a2);
    }
    const json_value *model = json_get(json_get(probe, "cpu"), "model");
    sb_puts(o, ",\"machine\":{\"label\":");
    sb_json_string(o, model && model->type == JSON_STRING ? model->str : "");
    if (exit >= 0) {
        sb_printf(o, ",\"cycles_per_exit\":%.17g,\"exit_from\":", exit);
        sb_json_string(o, exit_from);
    }
    if (ref >= 0) {
        sb_printf(o, ",\"cycles_per_ref\":%.17g,\"ref_from\":", ref);
        sb_json_string(o, ref_from);
    }
    sb_puts(o, vm ? ",\"in_vm\":true}" : ",\"in_vm\":false}");
    ok = true;
out:
    json_free(&doc);
    return ok;
}

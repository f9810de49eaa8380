/* vmsim: command-line front end of the translation engine.
 *   vmsim run FILE|-       print the result JSON
 *   vmsim explain FILE|-   print the walk as a table
 *   vmsim image FILE|-     print the built machine's memory and registers (JSON)
 * Exit status: 0 ok, 1 usage or I/O error, 2 bad scenario (one line on stderr). */
#include "vmsim.h"
#include "replay_cli.h"
#include "../src/calibrate.h"
#include "../src/experiment.h"
#include "../src/json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: vmsim run FILE        translate the scenario's accesses, print the result JSON\n"
               "       vmsim explain FILE    print each walk as a readable table\n"
               "       vmsim image FILE      print the built machine (memory words, CR3s, EPTP) as JSON\n"
               "       vmsim experiment [--workload NAME] [--accesses N] [--seed N] [--footprint MIB]\n"
               "                        [--spaces N] [--cr3-targets N] [--paravirt-cr3] [--format table|json|csv]\n"
               "                        [--tables built|on-demand]\n"
               "                        [--cycles-per-access C] [--cycles-per-ref C] [--cycles-per-exit C]\n"
               "                        [--cycles-per-vmfunc C] [--refill-trap C]\n"
               "                             run a synthetic workload under every mode (default: all workloads)\n"
               "       vmsim calibrate [--format table|json]\n"
               "                             each seed's experiment rerun in the model, against the published figure\n"
               "       vmsim replay TRACE [--modes LIST] [--preset NAME] [--format table|json|csv] ...\n"
               "                             replay a recorded program trace through every mode (vmsim replay --help)\n"
               "       vmsim --version\n"
               "FILE may be - for standard input. Scenario format: wasm-core/docs/model.md\n");
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "vmsim: cannot open %s: %s\n", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap)
            break;
        if (cap >= (64u << 20)) {
            fprintf(stderr, "vmsim: %s is larger than 64 MiB\n", path);
            free(buf);
            buf = NULL;
            break;
        }
        char *nb = realloc(buf, cap *= 2);
        if (!nb)
            free(buf);
        buf = nb;
    }
    if (buf && ferror(f)) {
        fprintf(stderr, "vmsim: cannot read %s\n", path);
        free(buf);
        buf = NULL;
    }
    if (f != stdin)
        fclose(f);
    *len = n;
    return buf;
}

static bool parse_number(const char *flag, const char *v, double lo, double hi, double *out)
{
    char *end;
    double d = v ? strtod(v, &end) : 0;
    if (!v || *end || end == v || d < lo || d > hi) {
        fprintf(stderr, "vmsim experiment: %s needs a number from %g to %g (got %s)\n", flag, lo, hi, v ? v : "nothing");
        return false;
    }
    *out = d;
    return true;
}

static int experiment_main(int argc, char **argv)
{
    experiment_opts o;
    experiment_defaults(&o);
    o.progress = true;
    for (int i = 2; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double d;
        if (!strcmp(f, "--paravirt-cr3")) {
            o.paravirt_cr3 = true;
            continue;
        }
        if (!strcmp(f, "--quiet")) {
            o.progress = false;
            continue;
        }
        i++;
        if (!strcmp(f, "--workload")) {
            o.workload = v ? experiment_workload(v) : -1;
            if (o.workload < 0)
                o.workload = -2;
            if (v && !strcmp(v, "all"))
                o.workload = -1;
            if (o.workload == -2) {
                fprintf(stderr, "vmsim experiment: --workload must be all or one of:");
                for (int k = 0; workload_names[k]; k++)
                    fprintf(stderr, " %s", workload_names[k]);
                fprintf(stderr, " (mcf, gcc and memcached are older names of random-2g, pt-writes and cswitch)\n");
                return 2;
            }
        } else if (!strcmp(f, "--format")) {
            if (v && !strcmp(v, "table")) o.format = EXP_TABLE;
            else if (v && !strcmp(v, "json")) o.format = EXP_JSON;
            else if (v && !strcmp(v, "csv")) o.format = EXP_CSV;
            else {
                fprintf(stderr, "vmsim experiment: --format must be table, json or csv\n");
                return 2;
            }
        } else if (!strcmp(f, "--accesses")) {
            if (!parse_number(f, v, 1, 1e9, &d)) return 2;
            o.accesses = (uint64_t)d;
        } else if (!strcmp(f, "--seed")) {
            if (!parse_number(f, v, 1, 1e18, &d)) return 2;
            o.seed = (uint64_t)d;
        } else if (!strcmp(f, "--footprint")) {
            if (!parse_number(f, v, 1, 4096, &d)) return 2;
            o.footprint_mib = (uint64_t)d;
        } else if (!strcmp(f, "--spaces")) {
            if (!parse_number(f, v, 1, 64, &d)) return 2;
            o.spaces = (uint32_t)d;
        } else if (!strcmp(f, "--tables")) {
            if (v && (!strcmp(v, "built") || !strcmp(v, "on-demand")))
                o.on_demand = !strcmp(v, "on-demand");
            else {
                fprintf(stderr, "vmsim experiment: --tables must be built or on-demand\n");
                return 2;
            }
        } else if (!strcmp(f, "--cr3-targets")) {
            if (!parse_number(f, v, 0, 4, &d)) return 2;
            o.cr3_targets = (uint32_t)d;
        } else if (!strcmp(f, "--cycles-per-access")) {
            if (!parse_number(f, v, 0, 1e6, &o.cycles_per_access)) return 2;
        } else if (!strcmp(f, "--cycles-per-ref")) {
            if (!parse_number(f, v, 0, 1e6, &o.cycles_per_ref)) return 2;
        } else if (!strcmp(f, "--cycles-per-exit")) {
            if (!parse_number(f, v, 0, 1e9, &o.cycles_per_exit)) return 2;
        } else if (!strcmp(f, "--cycles-per-vmfunc")) {
            if (!parse_number(f, v, 0, 1e6, &o.cycles_per_vmfunc)) return 2;
        } else if (!strcmp(f, "--refill-trap")) {
            if (!parse_number(f, v, 0, 1e6, &o.refill_trap_cycles)) return 2;
        } else {
            fprintf(stderr, "vmsim experiment: unknown option %s (see vmsim --help)\n", f);
            return 2;
        }
    }
    strbuf sb;
    sb_init(&sb);
    char err[512];
    if (experiment_run(&o, &sb, err, sizeof err)) {
        fprintf(stderr, "vmsim experiment: %s\n", err);
        sb_free(&sb);
        return 1;
    }
    fputs(sb.data ? sb.data : "", stdout);
    sb_free(&sb);
    return 0;
}

static int calibrate_main(int argc, char **argv)
{
    bool json = false;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--format") && i + 1 < argc &&
            (!strcmp(argv[i + 1], "json") || !strcmp(argv[i + 1], "table"))) {
            json = !strcmp(argv[++i], "json");
            continue;
        }
        fprintf(stderr, "vmsim calibrate: usage: vmsim calibrate [--format table|json]\n");
        return 2;
    }
    strbuf sb;
    sb_init(&sb);
    char err[512];
    if (calibrate_run(json, &sb, err, sizeof err)) {
        fprintf(stderr, "vmsim calibrate: %s\n", err);
        sb_free(&sb);
        return 1;
    }
    fputs(sb.data ? sb.data : "", stdout);
    sb_free(&sb);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "calibrate"))
        return calibrate_main(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "experiment"))
        return experiment_main(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "replay"))
        return replay_main(argc, argv);
    if (argc == 2 && (strcmp(argv[1], "--version") == 0)) {
        puts(vmsim_version());
        return 0;
    }
    if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        usage(stdout);
        return 0;
    }
    if (argc != 3 || (strcmp(argv[1], "run") != 0 && strcmp(argv[1], "explain") != 0 && strcmp(argv[1], "image") != 0)) {
        usage(stderr);
        return 1;
    }
    size_t len;
    char *text = slurp(argv[2], &len);
    if (!text)
        return 1;
    char *out = NULL;
    int rc = strcmp(argv[1], "run") == 0     ? vmsim_run(text, len, &out)
             : strcmp(argv[1], "image") == 0 ? vmsim_image(text, len, &out)
                                             : vmsim_explain(text, len, &out);
    free(text);
    if (rc == 0) {
        fputs(out, stdout);
    } else {
        const char *name = strcmp(argv[2], "-") == 0 ? "<stdin>" : argv[2];
        fprintf(stderr, "vmsim: %s: %s\n", name, out ? out : "out of memory");
    }
    vmsim_free(out);
    return rc;
}

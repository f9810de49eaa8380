/* vmsim: command-line front end of the translation engine.
 *   vmsim run FILE|-       print the result JSON
 *   vmsim explain FILE|-   print the walk as a table
 * Exit status: 0 ok, 1 usage or I/O error, 2 bad scenario (one line on stderr). */
#include "vmsim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: vmsim run FILE        translate the scenario's accesses, print the result JSON\n"
               "       vmsim explain FILE    print each walk as a readable table\n"
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

int main(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "--version") == 0)) {
        puts(vmsim_version());
        return 0;
    }
    if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        usage(stdout);
        return 0;
    }
    if (argc != 3 || (strcmp(argv[1], "run") != 0 && strcmp(argv[1], "explain") != 0)) {
        usage(stderr);
        return 1;
    }
    size_t len;
    char *text = slurp(argv[2], &len);
    if (!text)
        return 1;
    char *out = NULL;
    int rc = strcmp(argv[1], "run") == 0 ? vmsim_run(text, len, &out) : vmsim_explain(text, len, &out);
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

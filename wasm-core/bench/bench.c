#define _POSIX_C_SOURCE 199309L
/* Translations per second, for `make bench`. Builds one large scenario per mode
 * (1 GiB of guest memory mapped with 4 KiB pages, backed by 4 KiB nested pages) and
 * translates random accesses over it, without and with the step trace. The same file
 * runs natively and as WebAssembly under Node; scripts/bench.py prints the ratio. */
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static uint32_t GUEST_PAGES = 1u << 18;  /* 1 GiB of 4 KiB pages; argv[2] overrides */

static void bench_mode(const char *mode, const char *paging, uint32_t n, bool caches)
{
    char json[2048];
    char slots[256];
    snprintf(slots, sizeof slots, "\"mappings\":[{\"gpa\":\"0x0\",\"hpa\":\"0x100000000\",\"page\":\"4K\",\"pages\":524288}]");
    char extra[512] = "";
    if (!strcmp(mode, "ept") || !strcmp(mode, "npt"))
        snprintf(extra, sizeof extra, ",\"nested\":{\"table_base\":\"0x200000000\",%s}", slots);
    else if (!strcmp(mode, "shadow"))
        snprintf(extra, sizeof extra, ",\"shadow\":{\"table_base\":\"0x200000000\","
                 "\"mappings\":[{\"gpa\":\"0x0\",\"hpa\":\"0x100000000\",\"pages\":524288}]}");
    else if (!strcmp(mode, "agile"))     /* switched at L2: 2 shadow entries, then the 2-D walk */
        snprintf(extra, sizeof extra, ",\"nested\":{\"table_base\":\"0x200000000\",%s},"
                 "\"agile\":{\"table_base\":\"0x300000000\",\"switch_level\":2}", slots);
    else if (!strcmp(mode, "flat"))
        snprintf(extra, sizeof extra, ",\"flat\":{\"table_base\":\"0x200000000\",\"guest_ram\":\"0x80000000\",\"prefill\":true,"
                 "\"mappings\":[{\"gpa\":\"0x0\",\"hpa\":\"0x100000000\",\"pages\":524288}]}");
    /* Guest data at gpa 1 GiB..2 GiB, guest tables from gpa 16 MiB; guest RAM 0..2 GiB. */
    snprintf(json, sizeof json,
             "{\"name\":\"bench\",\"mode\":\"%s\",\"guest\":{\"paging\":\"%s\",\"table_base\":\"0x1000000\","
             "\"mappings\":[{\"gva\":\"0x40000000\",\"gpa\":\"0x40000000\",\"page\":\"4K\",\"pages\":%u}]}%s%s"
             ",\"accesses\":[]}",
             mode, paging, GUEST_PAGES, extra, caches ? ",\"caches\":{\"preset\":\"x86-server\"}" : "");
    char err[512];
    scenario s;
    machine m;
    if (!scenario_parse(json, strlen(json), &s, err, sizeof err) || !machine_build(&m, &s, err, sizeof err)) {
        fprintf(stderr, "bench: %s\n", err);
        exit(1);
    }
    vm_result *r = malloc(sizeof *r);
    for (int trace = 0; trace <= 1; trace++) {
        uint64_t seed = 0x9E3779B97F4A7C15ull;
        uint64_t refs = 0, ok = 0;
        double t0 = now();
        for (uint32_t i = 0; i < n; i++) {
            vm_access a = {.gva = 0x40000000ull + (xorshift(&seed) % ((uint64_t)GUEST_PAGES << 12)), .op = OP_READ};
            r->record = trace;
            translate(&m, &a, r);
            refs += r->memory_refs;
            ok += r->outcome == OUT_OK;
        }
        double dt = now() - t0;
        printf("{\"mode\":\"%s%s\",\"paging\":\"%s\",\"trace\":%s,\"translations\":%u,\"ok\":%llu,\"refs_per_walk\":%.2f,"
               "\"seconds\":%.4f,\"per_second\":%.0f}\n",
               mode, caches ? "+caches" : "", paging, trace ? "true" : "false", n, (unsigned long long)ok, (double)refs / n, dt, n / dt);
    }
    free(r);
    machine_free(&m);
    scenario_free(&s);
}

int main(int argc, char **argv)
{
    uint32_t n = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 2000000u;
    if (argc > 2)
        GUEST_PAGES = (uint32_t)strtoul(argv[2], NULL, 10);
    static const char *const modes[] = {"native", "ept", "npt", "shadow", "flat", "agile"};
    for (int caches = 0; caches <= 1; caches++)
        for (size_t i = 0; i < sizeof modes / sizeof *modes; i++)
            if (caches || (strcmp(modes[i], "shadow") && strcmp(modes[i], "agile")))   /* without caches: only fills */
                bench_mode(modes[i], "4level", n, caches);
    return 0;
}

/* C unit tests of the engine. Expected values are derived from the manuals' rules in
 * the test itself (reference-count formula, error-code bits), not recorded output.
 * Prints "N passed, N failed" and exits non-zero on any failure. */
#include "guest_entry.h"
#include "json.h"
#include "model.h"
#include "nested_entry.h"
#include "vmsim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed;

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (cond) {                                                        \
            passed++;                                                      \
        } else {                                                           \
            failed++;                                                      \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);         \
            printf(__VA_ARGS__);                                           \
            printf("\n");                                                  \
        }                                                                  \
    } while (0)

/* Builds a machine from JSON text and translates access i. */
typedef struct harness {
    scenario s;
    machine m;
    vm_result r;
    char err[512];
    bool ok;
} harness;

static bool load(harness *h, const char *json)
{
    h->ok = scenario_parse(json, strlen(json), &h->s, h->err, sizeof h->err) &&
            machine_build(&h->m, &h->s, h->err, sizeof h->err);
    return h->ok;
}

static void unload(harness *h)
{
    if (h->ok) {
        machine_free(&h->m);
        scenario_free(&h->s);
    }
}

static const vm_result *go(harness *h, uint32_t i)
{
    h->r.record = true;
    translate(&h->m, &h->s.accesses[i], &h->r);
    return &h->r;
}

static void test_bits_range(void)
{
    CHECK(bits_range(51, 46) == 0x000FC00000000000ull, "51:46");
    CHECK(bits_range(63, 63) == 0x8000000000000000ull, "63:63");
    CHECK(bits_range(20, 21) == 0, "empty");
    CHECK(bits_range(7, 3) == 0xF8, "7:3");
}

static void test_json(void)
{
    json_doc d;
    const char *good = "{\"a\":[1,2,{\"b\":\"x\\u00e9\\n\"}],\"c\":true,\"d\":null,\"e\":-12}";
    CHECK(json_parse(good, strlen(good), &d), "%s", d.error);
    const json_value *a = json_get(d.root, "a");
    CHECK(a && a->type == JSON_ARRAY && a->count == 3, "array");
    const json_value *b = json_get(a->first_child->next->next, "b");
    CHECK(b && strcmp(b->str, "x\xc3\xa9\n") == 0, "escapes decoded");
    CHECK(json_get(d.root, "e")->integer == -12, "integer");
    json_free(&d);

    const char *bad[] = {"", "{", "{\"a\":}", "[1,]", "{\"a\":1,\"a\":2}", "\"\\ud800\"", "01", "[1] x", "tru"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK(!json_parse(bad[i], strlen(bad[i]), &d), "accepted %s", bad[i]);
        CHECK(strstr(d.error, "line 1 column") != NULL, "error has a position: %s", d.error);
    }
    char deep[200];
    memset(deep, '[', sizeof deep);
    CHECK(!json_parse(deep, sizeof deep, &d) && strstr(d.error, "nested too deeply"), "depth limit: %s", d.error);
}

static void test_mem(void)
{
    mem m;
    CHECK(mem_init(&m, 3), "init");
    CHECK(mem_read(&m, 0x5000, 8) == 0, "absent frame reads zero");
    CHECK(!mem_write_existing(&m, 0x5000, 8, 1), "no write to an absent frame");
    for (uint64_t f = 0; f < 3; f++)
        CHECK(mem_frame_create(&m, f << 40) != NULL, "create");
    CHECK(mem_frame_create(&m, 0x7000) == NULL, "frame limit");
    CHECK(mem_write_existing(&m, (1ull << 40) + 8, 4, 0xdeadbeef), "write");
    CHECK(mem_read(&m, (1ull << 40) + 8, 8) == 0xdeadbeef, "read back");
    mem_free(&m);
}

static const char *page_name(int level_leaf)
{
    return level_leaf == 1 ? "4K" : level_leaf == 2 ? "2M" : "1G";
}

/* For every guest/nested page size and depth, references = g + (g+1) n, where g is the
 * number of guest levels read and n the nested levels per gpa. */
static void test_reference_formula(void)
{
    const char *modes[] = {"ept", "npt"};
    for (int mi = 0; mi < 2; mi++)
        for (int gl = 4; gl <= 5; gl++)
            for (int nl = 4; nl <= 5; nl++)
                for (int gp = 1; gp <= 3; gp++)
                    for (int np = 1; np <= 3; np++) {
                        char json[1024];
                        /* Guest tables at gpa 1 GiB and data at gpa 2 GiB, each backed by nested pages of
                         * the size under test, 4 GiB higher in host memory. */
                        snprintf(json, sizeof json,
                                 "{\"name\":\"f\",\"mode\":\"%s\",\"guest\":{\"paging\":\"%dlevel\",\"table_base\":\"0x40000000\","
                                 "\"mappings\":[{\"gva\":\"0x80000000\",\"gpa\":\"0x80000000\",\"page\":\"%s\"}]},"
                                 "\"nested\":{\"levels\":%d,\"mappings\":[{\"gpa\":\"0x40000000\",\"hpa\":\"0x140000000\",\"page\":\"%s\","
                                 "\"pages\":%d},{\"gpa\":\"0x80000000\",\"hpa\":\"0x180000000\",\"page\":\"%s\"}]},"
                                 "\"accesses\":[{\"gva\":\"0x80000123\",\"op\":\"read\"}]}",
                                 modes[mi], gl, page_name(gp), nl, page_name(np), np == 1 ? 16 : 1, page_name(np));
                        harness h;
                        if (!load(&h, json)) {
                            CHECK(false, "%s", h.err);
                            continue;
                        }
                        const vm_result *r = go(&h, 0);
                        int g = gl - gp + 1, n = nl - np + 1;
                        CHECK(r->outcome == OUT_OK && (int)r->memory_refs == g + (g + 1) * n,
                              "%s %d-level guest %s on %d-level %s: %u refs, expected %d", modes[mi], gl, page_name(gp), nl,
                              page_name(np), r->memory_refs, g + (g + 1) * n);
                        CHECK(r->hpa == 0x100000000ull + 0x80000123ull, "hpa 0x%llx", (unsigned long long)r->hpa);
                        unload(&h);
                    }
}

static const char *FAULTS =
    "{\"name\":\"pf\",\"mode\":\"native\",\"guest\":{\"paging\":\"4level\",\"cr4_smep\":true,\"cr4_smap\":true,"
    "\"mappings\":[{\"gva\":\"0x1000\",\"gpa\":\"0x1000\",\"user\":true},"
    "{\"gva\":\"0x2000\",\"gpa\":\"0x2000\",\"user\":false,\"writable\":false},"
    "{\"gva\":\"0x3000\",\"gpa\":\"0x3000\"}],"
    "\"overrides\":[{\"gva\":\"0x3000\",\"level\":1,\"set\":\"0x8000000000000\"}]},"
    "\"accesses\":[{\"gva\":\"0x1000\",\"op\":\"fetch\"},{\"gva\":\"0x1000\",\"op\":\"read\"},"
    "{\"gva\":\"0x2000\",\"op\":\"read\",\"user\":true},{\"gva\":\"0x2000\",\"op\":\"write\"},"
    "{\"gva\":\"0x3000\",\"op\":\"write\",\"user\":true},{\"gva\":\"0x1000\",\"op\":\"write\",\"user\":true}]}";

static void test_guest_faults(void)
{
    harness h;
    if (!load(&h, FAULTS)) {
        CHECK(false, "%s", h.err);
        return;
    }
    /* SDM 4.7 error code: P=1, W=2, U=4, RSVD=8, I/D=16. */
    struct { enum vm_outcome out; uint64_t ec; } want[] = {
        {OUT_GUEST_PF, 0x11},   /* SMEP: supervisor fetch from a user page: P | I/D */
        {OUT_GUEST_PF, 0x01},   /* SMAP: supervisor read of a user page: P */
        {OUT_GUEST_PF, 0x05},   /* user read of a supervisor page: P | U */
        {OUT_GUEST_PF, 0x03},   /* supervisor write, read-only page, CR0.WP: P | W */
        {OUT_GUEST_PF, 0x0f},   /* bit 51 set, maxphyaddr 46: P | W | U | RSVD */
        {OUT_OK, 0},
    };
    for (uint32_t i = 0; i < sizeof want / sizeof *want; i++) {
        const vm_result *r = go(&h, i);
        CHECK(r->outcome == want[i].out, "access %u outcome %d", i, r->outcome);
        if (want[i].out == OUT_GUEST_PF)
            CHECK(r->fault.error_code == want[i].ec, "access %u error code 0x%llx, want 0x%llx", i,
                  (unsigned long long)r->fault.error_code, (unsigned long long)want[i].ec);
    }
    /* The first allowed access set A at every level and D in the leaf; a repeat sets nothing. */
    const vm_result *r = &h.r;
    CHECK(r->ad_writes == 4 && r->steps[r->nsteps - 1].ad_set == 3, "first write sets A x4 and D");
    r = go(&h, 5);
    CHECK(r->ad_writes == 0, "repeat write sets nothing");
    unload(&h);
}

/* With EPT A/D enabled, guest paging-structure reads are writes: the EPT leaf of each
 * guest table page gets A and D (SDM 29.3.5); without A/D nothing changes in EPT. */
static void test_ept_ad(void)
{
    for (int ad = 0; ad <= 1; ad++) {
        char json[768];
        snprintf(json, sizeof json,
                 "{\"name\":\"ad\",\"mode\":\"ept\",\"guest\":{\"paging\":\"4level\",\"mappings\":[{\"gva\":\"0x400000\","
                 "\"gpa\":\"0x200000\"}]},\"nested\":{\"ad\":%s,\"mappings\":[{\"gpa\":\"0x0\",\"hpa\":\"0x80000000\","
                 "\"pages\":1024}]},\"accesses\":[{\"gva\":\"0x400000\",\"op\":\"read\"}]}",
                 ad ? "true" : "false");
        harness h;
        if (!load(&h, json)) {
            CHECK(false, "%s", h.err);
            continue;
        }
        go(&h, 0);
        CHECK((h.m.eptp >> 6 & 1) == (uint64_t)ad, "EPTP bit 6");
        uint64_t hpa;
        CHECK(nested_lookup(&h.m, 0x100000, &hpa) && hpa == 0x80100000, "guest CR3 page backing");
        /* EPT PTE for gpa 0x100000: index 256 of the first EPT page table. */
        uint64_t pte = 0;
        for (uint32_t k = 0; k < h.r.nsteps; k++)
            if (h.r.steps[k].dim == DIM_NESTED && h.r.steps[k].level == 1 && h.r.steps[k].gpa == 0x100000)
                pte = mem_read(&h.m.mem, h.r.steps[k].entry_hpa, 8);
        CHECK(((pte >> 8) & 3) == (ad ? 3u : 0u), "EPT A/D of the guest CR3 page: 0x%llx", (unsigned long long)pte);
        unload(&h);
    }
}

/* The walks' quick tests for a table entry must agree with the full entry checks: on
 * every combination of the low 12 bits, a few high bits, each level and each setting
 * that changes the reserved bits. */
static void test_quick_table_tests(void)
{
    static const uint64_t high[] = {0, BIT(12), BIT(20), BIT(29), BIT(35), BIT(40), BIT(45), BIT(51), BIT(52),
                                    BIT(62), BIT(63), 0x7FFFFFFFFFFFF000ull};
    static const int maxphy[] = {36, 46, 52};
    uint32_t mismatches = 0, cases = 0;
    for (int mp = 0; mp < 3; mp++)
        for (int flags = 0; flags < 16; flags++) {
            scenario s = {0};
            s.maxphyaddr = maxphy[mp];
            s.above_maxphyaddr = bits_range(51, maxphy[mp]);
            s.execute_only = flags & 1;
            s.host_nxe = flags & 2;
            s.efer_nxe = flags & 4;
            table_test ept = ept_table_test(&s), npt = npt_table_test(&s);
            s.mode = (flags & 8) ? MODE_NPT : MODE_EPT;   /* PML4E bit 8: reserved on AMD only */
            uint64_t guest = x86_64_table_reserved(&s), guest_top = x86_64_top_reserved(&s);
            for (int level = 1; level <= 5; level++)
                for (size_t h = 0; h < sizeof high / sizeof *high; h++)
                    for (uint64_t low = 0; low < 4096; low++) {
                        uint64_t e = high[h] | low;
                        int detail = 0;
                        bool guest_is_table = (e & 1) && !x86_64_is_leaf(e, level) &&
                                           !x86_64_reserved(&s, e, level, false);
                        bool ept_table = ept_entry_check(&s, e, level, &detail) == NC_TABLE;
                        bool npt_table = npt_entry_check(&s, e, level, &detail) == NC_TABLE;
                        mismatches += ept_entry_is_table(ept, e, level) != ept_table;
                        mismatches += npt_entry_is_table(npt, e, level) != npt_table;
                        mismatches += x86_64_is_table(guest, guest_top, e, level) != guest_is_table;
                        cases += 3;
                    }
        }
    CHECK(mismatches == 0, "%u of %u quick table tests disagree with the full checks", mismatches, cases);
}

/* guest.tables: a 32-bit guest's directory at CR3 0x3000 with a 4 MiB PSE page and a page
 * table at 0x9000 (not next to the directory), walked natively; the expected addresses
 * and reference counts follow SDM 4.3 by hand. Then the errors a student can make. */
#define TABLES32 "{\"name\":\"t\",\"mode\":\"native\",\"guest\":{\"paging\":\"32bit\",\"cr3\":\"0x3000\"," \
    "\"tables\":[{\"gpa\":\"0x3000\",\"entries\":{\"768\":\"0x9027\",\"1\":\"0x01c000e3\"}}," \
    "{\"gpa\":\"0x9000\",\"entries\":{\"5\":\"0x00abc063\"}}]}," \
    "\"accesses\":[{\"gva\":\"0xc0005123\",\"op\":\"read\"},{\"gva\":\"0x00512345\",\"op\":\"read\"}," \
    "{\"gva\":\"0xc0006000\",\"op\":\"read\"}%s]}"

static void test_given_tables(void)
{
    char json[1024];
    snprintf(json, sizeof json, TABLES32, "");
    harness h;
    if (!load(&h, json)) {
        CHECK(false, "%s", h.err);
        return;
    }
    const vm_result *r = go(&h, 0);     /* PDE 768 -> PT 0x9000, PTE 5 -> frame 0xabc000 */
    CHECK(r->outcome == OUT_OK && r->hpa == 0xabc123 && r->memory_refs == 2, "4 KiB page: hpa 0x%llx refs %u",
          (unsigned long long)r->hpa, r->memory_refs);
    CHECK(r->steps[0].entry_hpa == 0x3000 + 4 * 768 && r->steps[1].entry_hpa == 0x9000 + 4 * 5, "entries read at "
          "0x%llx and 0x%llx", (unsigned long long)r->steps[0].entry_hpa, (unsigned long long)r->steps[1].entry_hpa);
    r = go(&h, 1);                      /* PDE 1, PS: 4 MiB page at 0x01c00000 */
    CHECK(r->outcome == OUT_OK && r->hpa == 0x01c00000 + 0x112345 && r->memory_refs == 1, "4 MiB page: hpa 0x%llx",
          (unsigned long long)r->hpa);
    r = go(&h, 2);                      /* PTE 6 not given: zero, not present */
    CHECK(r->outcome == OUT_GUEST_PF && r->fault.error_code == 0, "absent entry faults: %d", r->outcome);
    unload(&h);

    static const struct { const char *from, *to, *msg; } bad[] = {
        {"\"cr3\":\"0x3000\"", "\"cr3\":\"0x4000\"", "guest.cr3: 0x4000 points at no table"},
        {"\"768\":", "\"1024\":", "guest.tables[0].entries.1024: \"1024\" is not an entry index"},
        {"\"0x9027\"", "\"0x100009027\"", "does not fit in a 32-bit 32bit entry"},
        {"\"gpa\":\"0x9000\"", "\"gpa\":\"0x3000\"", "guest.tables[1].gpa: 0x3000 is also guest.tables[0]"},
        {"\"gpa\":\"0x9000\"", "\"gpa\":\"0x9800\"", "guest.tables[1].gpa: 0x9800 is not aligned"},
        {"\"cr3\":\"0x3000\",", "\"cr3\":\"0x3000\",\"mappings\":[],", "guest.mappings: cannot be combined with guest.tables"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[1100];
        const char *at = strstr(json, bad[i].from);
        snprintf(text, sizeof text, "%.*s%s%s", (int)(at - json), json, bad[i].to, at + strlen(bad[i].from));
        harness b;
        CHECK(!load(&b, text) && strstr(b.err, bad[i].msg), "case %zu: %s", i, b.err);
        unload(&b);
    }
}

static void test_api_errors(void)
{
    char *out = NULL;
    const char *txt = "{\"name\":\"x\",\"mode\":\"warp\"}";
    CHECK(vmsim_run(txt, strlen(txt), &out) == VMSIM_BAD_SCENARIO, "bad mode");
    CHECK(out && strstr(out, "mode: \"warp\" is not one of native, ept, npt"), "message: %s", out ? out : "(null)");
    vmsim_free(out);
    const char *nul = "{\"name\":\"x\0\"}";
    CHECK(vmsim_run(nul, 13, &out) == VMSIM_BAD_SCENARIO, "embedded NUL");
    vmsim_free(out);
}

static void test_deterministic_output(void)
{
    char *a = NULL, *b = NULL;
    CHECK(vmsim_run(FAULTS, strlen(FAULTS), &a) == VMSIM_OK, "run 1");
    CHECK(vmsim_run(FAULTS, strlen(FAULTS), &b) == VMSIM_OK, "run 2");
    CHECK(a && b && strcmp(a, b) == 0, "same scenario, same bytes");
    vmsim_free(a);
    vmsim_free(b);
}

int main(void)
{
    test_bits_range();
    test_json();
    test_mem();
    test_reference_formula();
    test_guest_faults();
    test_ept_ad();
    test_quick_table_tests();
    test_given_tables();
    test_api_errors();
    test_deterministic_output();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

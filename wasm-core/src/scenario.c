/* Scenario parsing and validation (docs/model.md section 2). Every error is one line
 * that names the field path and says what would be valid. */
#include "model.h"
#include "json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ACCESSES 4096u
#define MAX_MAPPINGS 4096u
#define MAX_PAGES (1u << 20)

typedef struct pctx {
    char *err;
    size_t errlen;
    bool failed;
    const scenario *s;
} pctx;

static bool errf(pctx *c, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool errf(pctx *c, const char *path, const char *fmt, ...)
{
    if (c->failed)
        return false;
    c->failed = true;
    int n = snprintf(c->err, c->errlen, "%s: ", path);
    if (n < 0 || (size_t)n >= c->errlen)
        return false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    /* Field names and values come from the file: keep the message on one line. */
    for (char *p = c->err; *p; p++)
        if ((unsigned char)*p < 0x20)
            *p = '?';
    return false;
}

static void subpath(char *out, size_t n, const char *path, const char *key)
{
    if (!path[0])
        snprintf(out, n, "%s", key);
    else
        snprintf(out, n, "%s.%s", path, key);
}

static bool check_keys(pctx *c, const json_value *obj, const char *path, const char *const *allowed)
{
    for (const json_value *m = obj->first_child; m; m = m->next) {
        bool ok = false;
        for (const char *const *a = allowed; *a; a++)
            if (strcmp(*a, m->key) == 0)
                ok = true;
        if (!ok) {
            char list[256] = "";
            for (const char *const *a = allowed; *a; a++) {
                if (list[0])
                    strncat(list, ", ", sizeof list - strlen(list) - 1);
                strncat(list, *a, sizeof list - strlen(list) - 1);
            }
            char p[160];
            subpath(p, sizeof p, path, m->key);
            return errf(c, p, "unknown field (expected one of: %s)", list);
        }
    }
    return true;
}

static const json_value *want(pctx *c, const json_value *obj, const char *key, const char *path,
                              json_type t, bool required)
{
    const json_value *v = json_get(obj, key);
    char p[160];
    subpath(p, sizeof p, path, key);
    if (!v) {
        if (required)
            errf(c, p, "missing (required)");
        return NULL;
    }
    if (v->type != t) {
        errf(c, p, "is %s, expected %s", json_type_name(v->type), json_type_name(t));
        return NULL;
    }
    return v;
}

static bool parse_hex_text(const char *s, uint64_t *out)
{
    if (!(s[0] == '0' && (s[1] == 'x' || s[1] == 'X')))
        return false;
    const char *p = s + 2;
    size_t n = strlen(p);
    if (n == 0 || n > 16)
        return false;
    uint64_t v = 0;
    for (; *p; p++) {
        int d;
        if (*p >= '0' && *p <= '9') d = *p - '0';
        else if (*p >= 'a' && *p <= 'f') d = *p - 'a' + 10;
        else if (*p >= 'A' && *p <= 'F') d = *p - 'A' + 10;
        else return false;
        v = (v << 4) | (uint64_t)d;
    }
    *out = v;
    return true;
}

static bool get_hex(pctx *c, const json_value *obj, const char *key, const char *path, bool required,
                    uint64_t dflt, uint64_t *out)
{
    *out = dflt;
    if (c->failed)
        return false;
    const json_value *v = want(c, obj, key, path, JSON_STRING, required);
    if (!v)
        return !c->failed;
    if (!parse_hex_text(v->str, out)) {
        char p[160];
        subpath(p, sizeof p, path, key);
        return errf(c, p, "\"%.40s\" is not a hex string such as \"0x1000\" (0x and 1 to 16 hex digits)", v->str);
    }
    return true;
}

static bool get_bool(pctx *c, const json_value *obj, const char *key, const char *path, bool dflt, bool *out)
{
    *out = dflt;
    if (c->failed)
        return false;
    const json_value *v = want(c, obj, key, path, JSON_BOOL, false);
    if (v)
        *out = v->boolean;
    return !c->failed;
}

static bool get_int(pctx *c, const json_value *obj, const char *key, const char *path, bool required,
                    int64_t lo, int64_t hi, int64_t dflt, int64_t *out)
{
    *out = dflt;
    if (c->failed)
        return false;
    const json_value *v = want(c, obj, key, path, JSON_NUMBER, required);
    if (!v)
        return !c->failed;
    char p[160];
    subpath(p, sizeof p, path, key);
    if (!v->is_integer || v->integer < lo || v->integer > hi)
        return errf(c, p, "%g is not an integer from %lld to %lld", v->number, (long long)lo, (long long)hi);
    *out = v->integer;
    return true;
}

static bool get_enum(pctx *c, const json_value *obj, const char *key, const char *path, bool required,
                     const char *const *names, int dflt, int *out)
{
    *out = dflt;
    if (c->failed)
        return false;
    const json_value *v = want(c, obj, key, path, JSON_STRING, required);
    if (!v)
        return !c->failed;
    for (int i = 0; names[i]; i++) {
        if (strcmp(names[i], v->str) == 0) {
            *out = i;
            return true;
        }
    }
    char list[128] = "";
    for (int i = 0; names[i]; i++) {
        if (list[0])
            strncat(list, ", ", sizeof list - strlen(list) - 1);
        strncat(list, names[i], sizeof list - strlen(list) - 1);
    }
    char p[160];
    subpath(p, sizeof p, path, key);
    return errf(c, p, "\"%.40s\" is not one of %s", v->str, list);
}

static const char *const mode_names[] = {"native", "ept", "npt", "flat", "shadow", "agile", NULL};
static const char *const paging_names[] = {"4level", "5level", "pae", "32bit", "sunway", NULL};
static const char *const page_names[] = {"4K", "2M", "1G", "4M", "8K", NULL};
const char *const op_names[] = {"read", "write", "fetch", "vmfunc", "vmcall", "mov_cr3", "invlpg", "pte_write", NULL};
static const char *const access_ops[] = {"read", "write", "fetch", NULL};

uint64_t page_bytes(enum vm_page p)
{
    static const uint64_t b[] = {1ull << 12, 1ull << 21, 1ull << 30, 1ull << 22, 1ull << 13};
    return b[p];
}

const guest_format *guest_format_for(enum vm_paging p)
{
    static const guest_format *const f[] = {&guest_x86_64_4level, &guest_x86_64_5level, &guest_pae, &guest_32bit,
                                            &guest_sunway};
    return f[p];
}

/* gva bits the format can address, and whether gva is canonical there. */
static bool gva_ok(const scenario *s, uint64_t gva)
{
    switch (s->paging) {
    case PAGING_4LEVEL: {
        uint64_t top = gva >> 47;
        return top == 0 || top == 0x1FFFF;
    }
    case PAGING_5LEVEL: {
        uint64_t top = gva >> 56;
        return top == 0 || top == 0xFF;
    }
    case PAGING_SUNWAY:
        return gva < (1ull << 53);
    default:
        return gva <= 0xFFFFFFFFull;
    }
}

static const char *gva_rule(const scenario *s)
{
    switch (s->paging) {
    case PAGING_4LEVEL: return "not canonical for 4-level paging (bits 63:47 must all equal bit 47)";
    case PAGING_5LEVEL: return "not canonical for 5-level paging (bits 63:56 must all equal bit 56)";
    case PAGING_SUNWAY: return "beyond the 53 bits that 4 Sunway levels of 1024 entries over 8 KiB pages translate";
    default: return "above 4 GiB: 32-bit and PAE paging translate 32-bit addresses";
    }
}

static bool parse_guest_map(pctx *c, const json_value *o, const char *path, guest_map *g)
{
    static const char *const keys[] = {"gva", "gpa", "page", "pages", "writable", "user", "nx", "global", NULL};
    if (o->type != JSON_OBJECT)
        return errf(c, path, "is %s, expected an object", json_type_name(o->type));
    if (!check_keys(c, o, path, keys))
        return false;
    const scenario *s = c->s;
    int page;
    int64_t pages;
    get_hex(c, o, "gva", path, true, 0, &g->gva);
    get_hex(c, o, "gpa", path, true, 0, &g->gpa);
    get_enum(c, o, "page", path, false, page_names, PAGE_4K, &page);
    get_int(c, o, "pages", path, false, 1, MAX_PAGES, 1, &pages);
    get_bool(c, o, "writable", path, true, &g->writable);
    get_bool(c, o, "user", path, true, &g->user);
    get_bool(c, o, "nx", path, false, &g->nx);
    get_bool(c, o, "global", path, false, &g->global);
    if (c->failed)
        return false;
    g->page = (enum vm_page)page;
    g->pages = (uint32_t)pages;
    char p[160];
    const guest_format *gf = guest_format_for(s->paging);
    if (!gf->leaf_level(g->page)) {
        subpath(p, sizeof p, path, "page");
        return errf(c, p, "%s pages do not exist in %s paging (%s)", page_names[page], gf->name,
                    s->paging == PAGING_32BIT ? "use 4K or 4M" : s->paging == PAGING_PAE ? "use 4K or 2M"
                    : s->paging == PAGING_SUNWAY ? "use 8K" : "use 4K, 2M or 1G");
    }
    if (g->page == PAGE_4M && !s->cr4_pse) {
        subpath(p, sizeof p, path, "page");
        return errf(c, p, "4M pages need guest.cr4_pse");
    }
    uint64_t size = page_bytes(g->page);
    uint64_t span = size * g->pages;
    if (g->gva & (size - 1)) {
        subpath(p, sizeof p, path, "gva");
        return errf(c, p, "0x%llx is not aligned to the %s page size", (unsigned long long)g->gva, page_names[page]);
    }
    if (!gva_ok(s, g->gva) || !gva_ok(s, g->gva + span - 1) || g->gva + span - 1 < g->gva ||
        ((g->gva ^ (g->gva + span - 1)) >> 63)) {
        subpath(p, sizeof p, path, "gva");
        return errf(c, p, "range 0x%llx + %u x %s is %s", (unsigned long long)g->gva, g->pages, page_names[page], gva_rule(s));
    }
    if (g->gpa & (size - 1)) {
        subpath(p, sizeof p, path, "gpa");
        return errf(c, p, "0x%llx is not aligned to the %s page size", (unsigned long long)g->gpa, page_names[page]);
    }
    int pa_bits = s->maxphyaddr;
    if (s->paging == PAGING_32BIT)
        pa_bits = g->page == PAGE_4M ? (s->maxphyaddr < 40 ? s->maxphyaddr : 40) : 32;
    if (g->gpa + span - 1 < g->gpa || ((g->gpa + span - 1) >> pa_bits)) {
        subpath(p, sizeof p, path, "gpa");
        return errf(c, p, "range 0x%llx + %u x %s does not fit in %d physical address bits", (unsigned long long)g->gpa,
                    g->pages, page_names[page], pa_bits);
    }
    if (g->nx && !gf->has_xd && s->paging != PAGING_SUNWAY) {
        subpath(p, sizeof p, path, "nx");
        return errf(c, p, "32-bit paging has no execute-disable bit (use pae, 4level or 5level)");
    }
    if (g->nx && !s->efer_nxe && s->paging != PAGING_SUNWAY) {
        subpath(p, sizeof p, path, "nx");
        return errf(c, p, "needs guest.efer_nxe (without it bit 63 is reserved)");
    }
    return true;
}

static bool check_set_clear(pctx *c, const char *path, uint64_t set, uint64_t clear, bool bits32)
{
    if (set & clear)
        return errf(c, path, "set and clear share bits 0x%llx", (unsigned long long)(set & clear));
    if (bits32 && ((set | clear) >> 32))
        return errf(c, path, "32-bit paging entries have 32 bits; set/clear 0x%llx/0x%llx go beyond",
                    (unsigned long long)set, (unsigned long long)clear);
    return true;
}

static int guest_top_level(const scenario *s)
{
    return guest_format_for(s->paging)->build_levels;
}

static bool parse_guest_override(pctx *c, const json_value *o, const char *path, guest_override *g)
{
    static const char *const keys[] = {"gva", "level", "set", "clear", NULL};
    if (o->type != JSON_OBJECT)
        return errf(c, path, "is %s, expected an object", json_type_name(o->type));
    if (!check_keys(c, o, path, keys))
        return false;
    int64_t level;
    get_hex(c, o, "gva", path, true, 0, &g->gva);
    get_int(c, o, "level", path, true, 1, guest_top_level(c->s), 1, &level);
    get_hex(c, o, "set", path, false, 0, &g->set);
    get_hex(c, o, "clear", path, false, 0, &g->clear);
    if (c->failed)
        return false;
    g->level = (int)level;
    if (!gva_ok(c->s, g->gva)) {
        char p[160];
        subpath(p, sizeof p, path, "gva");
        return errf(c, p, "0x%llx is %s", (unsigned long long)g->gva, gva_rule(c->s));
    }
    return check_set_clear(c, path, g->set, g->clear, c->s->paging == PAGING_32BIT);
}

static bool parse_perm(pctx *c, const json_value *o, const char *path, unsigned *perm)
{
    *perm = PERM_R | PERM_W | PERM_X;
    const json_value *v = want(c, o, "perm", path, JSON_STRING, false);
    if (!v)
        return !c->failed;
    char p[160];
    subpath(p, sizeof p, path, "perm");
    *perm = 0;
    for (const char *q = v->str; *q; q++) {
        unsigned b = *q == 'r' ? PERM_R : *q == 'w' ? PERM_W : *q == 'x' ? PERM_X : 0;
        if (!b || (*perm & b))
            return errf(c, p, "\"%.20s\" must be letters from r, w, x, each at most once", v->str);
        *perm |= b;
    }
    return true;
}

/* Guest-physical addresses a nested table can map: maxphyaddr bits, and no more than
 * its levels index (48 bits for 4 levels). */
static int gpa_width(const scenario *s)
{
    int levels_bits = 12 + 9 * s->nested_levels;
    return s->maxphyaddr < levels_bits ? s->maxphyaddr : levels_bits;
}

static bool parse_nested_map(pctx *c, const json_value *o, const char *path, nested_map *n)
{
    static const char *const ept_keys[] = {"gpa", "hpa", "page", "pages", "perm", "memtype", "ipat", NULL};
    static const char *const npt_keys[] = {"gpa", "hpa", "page", "pages", "perm", "user", NULL};
    const scenario *s = c->s;
    bool ept = s->mode == MODE_EPT || s->mode == MODE_AGILE;
    if (o->type != JSON_OBJECT)
        return errf(c, path, "is %s, expected an object", json_type_name(o->type));
    if (!check_keys(c, o, path, ept ? ept_keys : npt_keys))
        return false;
    int page;
    int64_t pages, memtype;
    get_hex(c, o, "gpa", path, true, 0, &n->gpa);
    get_hex(c, o, "hpa", path, true, 0, &n->hpa);
    get_enum(c, o, "page", path, false, page_names, PAGE_4K, &page);
    get_int(c, o, "pages", path, false, 1, MAX_PAGES, 1, &pages);
    parse_perm(c, o, path, &n->perm);
    get_int(c, o, "memtype", path, false, 0, 7, 6, &memtype);
    get_bool(c, o, "ipat", path, false, &n->ipat);
    get_bool(c, o, "user", path, true, &n->user);
    if (c->failed)
        return false;
    n->page = (enum vm_page)page;
    n->pages = (uint32_t)pages;
    n->memtype = (int)memtype;
    char p[160];
    if (n->page == PAGE_4M) {
        subpath(p, sizeof p, path, "page");
        return errf(c, p, "nested tables map 4K, 2M or 1G pages");
    }
    uint64_t size = page_bytes(n->page), span = size * n->pages;
    if ((n->gpa | n->hpa) & (size - 1)) {
        subpath(p, sizeof p, path, (n->gpa & (size - 1)) ? "gpa" : "hpa");
        return errf(c, p, "0x%llx is not aligned to the %s page size",
                    (unsigned long long)((n->gpa & (size - 1)) ? n->gpa : n->hpa), page_names[page]);
    }
    int gpa_bits = gpa_width(s);
    if (((n->gpa + span - 1) >> gpa_bits) || n->gpa + span - 1 < n->gpa) {
        subpath(p, sizeof p, path, "gpa");
        return errf(c, p, "range 0x%llx + %u x %s does not fit in %d guest-physical address bits%s", (unsigned long long)n->gpa,
                    n->pages, page_names[page], gpa_bits, gpa_bits < s->maxphyaddr ? " (a 4-level nested table maps 48)" : "");
    }
    if (((n->hpa + span - 1) >> s->maxphyaddr) || n->hpa + span - 1 < n->hpa) {
        subpath(p, sizeof p, path, "hpa");
        return errf(c, p, "range 0x%llx + %u x %s does not fit in maxphyaddr = %d bits", (unsigned long long)n->hpa,
                    n->pages, page_names[page], s->maxphyaddr);
    }
    if (!ept) {
        subpath(p, sizeof p, path, "perm");
        if (!(n->perm & PERM_R))
            return errf(c, p, "an NPT entry that is present is readable: perm must contain r");
        if (!(n->perm & PERM_X) && !s->host_nxe)
            return errf(c, p, "without nested.host_nxe an NPT entry cannot forbid execution: perm must contain x");
    }
    return true;
}

static bool parse_nested_override(pctx *c, const json_value *o, const char *path, nested_override *n)
{
    static const char *const keys[] = {"gpa", "guest_table", "level", "set", "clear", NULL};
    static const char *const gt_keys[] = {"gva", "level", NULL};
    if (o->type != JSON_OBJECT)
        return errf(c, path, "is %s, expected an object", json_type_name(o->type));
    if (!check_keys(c, o, path, keys))
        return false;
    const json_value *gt = want(c, o, "guest_table", path, JSON_OBJECT, false);
    bool has_gpa = json_get(o, "gpa") != NULL;
    if (c->failed)
        return false;
    if (!!gt == has_gpa)
        return errf(c, path, "give exactly one of gpa or guest_table as the target");
    int64_t level;
    if (gt) {
        char p[160];
        subpath(p, sizeof p, path, "guest_table");
        if (!check_keys(c, gt, p, gt_keys))
            return false;
        int64_t gl;
        n->by_guest_table = true;
        get_hex(c, gt, "gva", p, true, 0, &n->gt_gva);
        get_int(c, gt, "level", p, true, 1, guest_top_level(c->s), 1, &gl);
        n->gt_level = (int)gl;
        if (!c->failed && !gva_ok(c->s, n->gt_gva)) {
            char q[180];
            subpath(q, sizeof q, p, "gva");
            return errf(c, q, "0x%llx is %s", (unsigned long long)n->gt_gva, gva_rule(c->s));
        }
    } else {
        get_hex(c, o, "gpa", path, true, 0, &n->gpa);
        if (!c->failed && (n->gpa >> gpa_width(c->s))) {
            char p[160];
            subpath(p, sizeof p, path, "gpa");
            return errf(c, p, "0x%llx does not fit in %d guest-physical address bits", (unsigned long long)n->gpa,
                        gpa_width(c->s));
        }
    }
    get_int(c, o, "level", path, true, 1, c->s->nested_levels, 1, &level);
    get_hex(c, o, "set", path, false, 0, &n->set);
    get_hex(c, o, "clear", path, false, 0, &n->clear);
    if (c->failed)
        return false;
    n->level = (int)level;
    return check_set_clear(c, path, n->set, n->clear, false);
}

/* {"vmfunc": ECX, "function": EAX} or {"vmcall": true}: guest instructions that switch
 * EPTs or call the hypervisor, between the accesses. */
static bool parse_instruction(pctx *c, const json_value *o, const char *path, vm_access *a)
{
    static const char *const vmfunc_keys[] = {"vmfunc", "function", NULL};
    static const char *const vmcall_keys[] = {"vmcall", NULL};
    if (json_get(o, "vmcall")) {
        bool yes;
        if (!check_keys(c, o, path, vmcall_keys) || !get_bool(c, o, "vmcall", path, false, &yes))
            return false;
        if (!yes) {
            char p[160];
            subpath(p, sizeof p, path, "vmcall");
            return errf(c, p, "must be true (leave the entry out otherwise)");
        }
        a->op = OP_VMCALL;
        return true;
    }
    int64_t idx, fn;
    if (!check_keys(c, o, path, vmfunc_keys))
        return false;
    get_int(c, o, "vmfunc", path, true, 0, 0xFFFFFFFFll, 0, &idx);
    get_int(c, o, "function", path, false, 0, 63, 0, &fn);
    a->op = OP_VMFUNC;
    a->eptp_index = (uint32_t)idx;
    a->function = (uint32_t)fn;
    return !c->failed;
}

/* {"mov_cr3": N} switches to address space N; {"invlpg": gva} invalidates a page. */
static bool parse_event(pctx *c, const json_value *o, const char *path, vm_access *a)
{
    static const char *const cr3_keys[] = {"mov_cr3", NULL};
    static const char *const inv_keys[] = {"invlpg", NULL};
    char p[160];
    if (json_get(o, "mov_cr3")) {
        int64_t n;
        if (!check_keys(c, o, path, cr3_keys) ||
            !get_int(c, o, "mov_cr3", path, true, 0, (int64_t)c->s->address_spaces - 1, 0, &n))
            return false;
        a->op = OP_MOV_CR3;
        a->eptp_index = (uint32_t)n;
        return true;
    }
    if (!check_keys(c, o, path, inv_keys) || !get_hex(c, o, "invlpg", path, true, 0, &a->gva))
        return false;
    a->op = OP_INVLPG;
    if (!gva_ok(c->s, a->gva)) {
        subpath(p, sizeof p, path, "invlpg");
        return errf(c, p, "0x%llx is %s", (unsigned long long)a->gva, gva_rule(c->s));
    }
    return true;
}

/* {"pte_write": {"gva", "level", "set", "clear"}}: the guest kernel changes one of its
 * page-table entries (map, unmap, protect). */
static bool parse_pte_write(pctx *c, const json_value *o, const char *path, vm_access *a)
{
    static const char *const keys[] = {"pte_write", NULL};
    static const char *const inner[] = {"gva", "level", "set", "clear", NULL};
    char p[160];
    subpath(p, sizeof p, path, "pte_write");
    const json_value *w = want(c, o, "pte_write", path, JSON_OBJECT, true);
    if (!w || !check_keys(c, o, path, keys) || !check_keys(c, w, p, inner))
        return false;
    int64_t level;
    get_hex(c, w, "gva", p, true, 0, &a->gva);
    get_int(c, w, "level", p, true, 1, guest_top_level(c->s), 1, &level);
    get_hex(c, w, "set", p, false, 0, &a->set);
    get_hex(c, w, "clear", p, false, 0, &a->clear);
    if (c->failed)
        return false;
    a->op = OP_PTE_WRITE;
    a->eptp_index = (uint32_t)level;
    if (!gva_ok(c->s, a->gva)) {
        char q[180];
        subpath(q, sizeof q, p, "gva");
        return errf(c, q, "0x%llx is %s", (unsigned long long)a->gva, gva_rule(c->s));
    }
    return check_set_clear(c, p, a->set, a->clear, c->s->paging == PAGING_32BIT);
}

static bool parse_access(pctx *c, const json_value *o, const char *path, vm_access *a)
{
    static const char *const keys[] = {"gva", "op", "user", NULL};
    if (o->type != JSON_OBJECT)
        return errf(c, path, "is %s, expected an object", json_type_name(o->type));
    if (json_get(o, "vmfunc") || json_get(o, "vmcall"))
        return parse_instruction(c, o, path, a);
    if (json_get(o, "mov_cr3") || json_get(o, "invlpg"))
        return parse_event(c, o, path, a);
    if (json_get(o, "pte_write"))
        return parse_pte_write(c, o, path, a);
    if (!check_keys(c, o, path, keys))
        return false;
    int op;
    get_hex(c, o, "gva", path, true, 0, &a->gva);
    get_enum(c, o, "op", path, true, access_ops, OP_READ, &op);
    get_bool(c, o, "user", path, false, &a->user);
    if (c->failed)
        return false;
    a->op = (enum vm_op)op;
    if (!gva_ok(c->s, a->gva)) {
        char p[160];
        subpath(p, sizeof p, path, "gva");
        return errf(c, p, "0x%llx is %s", (unsigned long long)a->gva, gva_rule(c->s));
    }
    return true;
}

/* Parses each element of an array member into a freshly allocated array. */
typedef bool (*elem_fn)(pctx *, const json_value *, const char *, void *);

static bool parse_array(pctx *c, const json_value *obj, const char *key, const char *path, bool required,
                        size_t elem_size, uint32_t max, elem_fn fn, void **out, uint32_t *count)
{
    *out = NULL;
    *count = 0;
    const json_value *arr = want(c, obj, key, path, JSON_ARRAY, required);
    if (!arr)
        return !c->failed;
    char p[160];
    subpath(p, sizeof p, path, key);
    if (arr->count > max)
        return errf(c, p, "has %zu entries; at most %u are allowed", arr->count, max);
    if (arr->count == 0)
        return true;
    char *items = calloc(arr->count, elem_size);
    if (!items)
        return errf(c, p, "out of memory");
    *out = items;
    uint32_t i = 0;
    for (const json_value *e = arr->first_child; e; e = e->next, i++) {
        char ep[180];
        snprintf(ep, sizeof ep, "%s[%u]", p, i);
        *count = i + 1;     /* counted before parsing: a half-parsed element is freed too */
        if (!fn(c, e, ep, items + (size_t)i * elem_size))
            return false;
    }
    return true;
}

static bool parse_machine(pctx *c, const json_value *root, scenario *s)
{
    static const char *const keys[] = {"maxphyaddr", NULL};
    int64_t m;
    s->maxphyaddr = 46;
    s->above_maxphyaddr = bits_range(51, 46);
    const json_value *mach = want(c, root, "machine", "", JSON_OBJECT, false);
    if (!mach)
        return !c->failed;
    if (!check_keys(c, mach, "machine", keys))
        return false;
    get_int(c, mach, "maxphyaddr", "machine", false, 36, 52, 46, &m);
    s->maxphyaddr = (int)m;
    s->above_maxphyaddr = bits_range(51, s->maxphyaddr);
    return !c->failed;
}

#define MAX_TABLE_ENTRIES (1u << 20)

/* guest.tables[i]: {"gpa": "0x...", "entries": {"768": "0x...", ...}}; indices in decimal. */
static bool parse_guest_table(pctx *c, const json_value *o, const char *path, guest_table *t)
{
    static const char *const keys[] = {"gpa", "entries", NULL};
    const scenario *s = c->s;
    const guest_format *gf = guest_format_for(s->paging);
    if (o->type != JSON_OBJECT)
        return errf(c, path, "is %s, expected an object", json_type_name(o->type));
    if (!check_keys(c, o, path, keys))
        return false;
    get_hex(c, o, "gpa", path, true, 0, &t->gpa);
    const json_value *ents = want(c, o, "entries", path, JSON_OBJECT, true);
    if (c->failed)
        return false;
    char p[200];
    subpath(p, sizeof p, path, "gpa");
    if (t->gpa & (gf->table_bytes - 1))
        return errf(c, p, "0x%llx is not aligned to the %u KiB tables of %s paging", (unsigned long long)t->gpa,
                    gf->table_bytes / 1024, gf->name);
    if ((t->gpa + gf->table_bytes - 1) >> s->maxphyaddr)
        return errf(c, p, "0x%llx does not fit in maxphyaddr = %d bits", (unsigned long long)t->gpa, s->maxphyaddr);
    uint32_t per_table = gf->table_bytes / (uint32_t)gf->entry_size;
    if (ents->count > per_table)
        return errf(c, path, "has %zu entries; a %s table has %u", ents->count, gf->name, per_table);
    t->entries = calloc(ents->count ? ents->count : 1, sizeof(guest_entry));
    if (!t->entries)
        return errf(c, path, "out of memory");
    uint64_t width_mask = gf->entry_size == 4 ? 0xFFFFFFFFull : ~0ull;
    for (const json_value *e = ents->first_child; e; e = e->next) {
        subpath(p, sizeof p, path, "entries");
        char ep[260];
        snprintf(ep, sizeof ep, "%s.%.20s", p, e->key);
        /* Plain decimal, as the schema says: digits only, no sign, space or leading zero. */
        size_t klen = strlen(e->key);
        bool digits = klen > 0 && klen <= 4 && strspn(e->key, "0123456789") == klen && !(klen > 1 && e->key[0] == '0');
        unsigned long idx = digits ? strtoul(e->key, NULL, 10) : ~0ul;
        if (!digits || idx >= per_table)
            return errf(c, ep, "\"%.20s\" is not an entry index: a decimal number from 0 to %u", e->key, per_table - 1);
        if (e->type != JSON_STRING)
            return errf(c, ep, "is %s, expected a hex string such as \"0x1007\"", json_type_name(e->type));
        uint64_t v;
        if (!parse_hex_text(e->str, &v))
            return errf(c, ep, "\"%.40s\" is not a hex string such as \"0x1007\" (0x and 1 to 16 hex digits)", e->str);
        if (v & ~width_mask)
            return errf(c, ep, "0x%llx does not fit in a %d-bit %s entry", (unsigned long long)v, gf->entry_size * 8, gf->name);
        for (uint32_t k = 0; k < t->n_entries; k++)
            if (t->entries[k].index == idx)
                return errf(c, ep, "entry %lu is given twice", idx);
        t->entries[t->n_entries++] = (guest_entry){(uint32_t)idx, v};
    }
    return true;
}

/* guest.tables with guest.cr3: the guest's tables as they are in its memory. They replace
 * mappings, overrides and the table allocator, so they stand alone. */
static bool check_given_tables(pctx *c, const json_value *g, scenario *s)
{
    static const char *const exclusive[] = {"mappings", "overrides", "table_base", "address_spaces", NULL};
    for (const char *const *k = exclusive; *k; k++)
        if (json_get(g, *k)) {
            char p[160];
            subpath(p, sizeof p, "guest", *k);
            return errf(c, p, "cannot be combined with guest.tables (the tables are given as they are)");
        }
    const guest_format *gf = guest_format_for(s->paging);
    get_hex(c, g, "cr3", "guest", true, 0, &s->given_cr3);
    if (c->failed)
        return false;
    uint64_t align = s->paging == PAGING_PAE ? 32 : gf->table_bytes;
    if (s->given_cr3 & (align - 1))
        return errf(c, "guest.cr3", "0x%llx is not aligned to %llu bytes as %s paging needs", (unsigned long long)s->given_cr3,
                    (unsigned long long)align, gf->name);
    if ((s->paging == PAGING_32BIT || s->paging == PAGING_PAE) && (s->given_cr3 >> 32))
        return errf(c, "guest.cr3", "0x%llx is above 4 GiB: CR3 has 32 bits in %s paging", (unsigned long long)s->given_cr3, gf->name);
    uint64_t total = 0;
    bool root = false;
    for (uint32_t i = 0; i < s->n_gtables; i++) {
        total += s->gtables[i].n_entries;
        if (s->gtables[i].gpa == (s->given_cr3 & ~(uint64_t)(gf->table_bytes - 1)))
            root = true;
        for (uint32_t j = 0; j < i; j++)
            if (s->gtables[j].gpa == s->gtables[i].gpa) {
                char p[64];
                snprintf(p, sizeof p, "guest.tables[%u].gpa", i);
                return errf(c, p, "0x%llx is also guest.tables[%u]: one frame, one table", (unsigned long long)s->gtables[i].gpa, j);
            }
    }
    if (total > MAX_TABLE_ENTRIES)
        return errf(c, "guest.tables", "hold %llu entries; at most %u are allowed", (unsigned long long)total, MAX_TABLE_ENTRIES);
    if (!root)
        return errf(c, "guest.cr3", "0x%llx points at no table in guest.tables", (unsigned long long)s->given_cr3);
    return true;
}

static bool parse_guest(pctx *c, const json_value *root, scenario *s)
{
    static const char *const keys[] = {"paging", "table_base", "cr0_wp", "efer_nxe", "cr4_pse", "cr4_smep",
                                       "cr4_smap", "mappings", "overrides", "address_spaces", "pcid",
                                       "tables", "cr3", NULL};
    const json_value *g = want(c, root, "guest", "", JSON_OBJECT, true);
    if (!g || !check_keys(c, g, "guest", keys))
        return false;
    int paging;
    get_enum(c, g, "paging", "guest", true, paging_names, 0, &paging);
    s->paging = (enum vm_paging)paging;
    get_hex(c, g, "table_base", "guest", false, 0x100000, &s->guest_table_base);
    get_bool(c, g, "cr0_wp", "guest", true, &s->cr0_wp);
    get_bool(c, g, "efer_nxe", "guest", true, &s->efer_nxe);
    get_bool(c, g, "cr4_pse", "guest", true, &s->cr4_pse);
    get_bool(c, g, "cr4_smep", "guest", false, &s->cr4_smep);
    get_bool(c, g, "cr4_smap", "guest", false, &s->cr4_smap);
    int64_t spaces;
    get_int(c, g, "address_spaces", "guest", false, 1, 64, 1, &spaces);
    s->address_spaces = (uint32_t)spaces;
    get_bool(c, g, "pcid", "guest", false, &s->pcid);
    if (c->failed)
        return false;
    uint64_t talign = guest_format_for(s->paging)->table_bytes;
    if (s->guest_table_base & (talign - 1))
        return errf(c, "guest.table_base", "0x%llx is not aligned to the %llu KiB tables of %s paging",
                    (unsigned long long)s->guest_table_base, (unsigned long long)talign / 1024,
                    guest_format_for(s->paging)->name);
    uint64_t limit = (s->paging == PAGING_32BIT || s->paging == PAGING_PAE) ? (1ull << 32) - (1ull << 24)
                                                                            : (1ull << s->maxphyaddr) - (1ull << 24);
    if (s->guest_table_base > limit)
        return errf(c, "guest.table_base", "0x%llx leaves no room for tables below %s", (unsigned long long)s->guest_table_base,
                    limit < (1ull << 32) ? "4 GiB (CR3 is 32 bits in 32-bit and PAE paging)" : "2^maxphyaddr");
    void *arr;
    if (json_get(g, "tables")) {
        bool ok = parse_array(c, g, "tables", "guest", true, sizeof(guest_table), MAX_MAPPINGS,
                              (elem_fn)parse_guest_table, &arr, &s->n_gtables);
        s->gtables = arr;
        return ok && check_given_tables(c, g, s);
    }
    if (json_get(g, "cr3"))
        return errf(c, "guest.cr3", "is given only with guest.tables (otherwise the engine places the tables)");
    if (!parse_array(c, g, "mappings", "guest", true, sizeof(guest_map), MAX_MAPPINGS,
                     (elem_fn)parse_guest_map, &arr, &s->n_gmaps))
        return (s->gmaps = arr), false;
    s->gmaps = arr;
    bool ok = parse_array(c, g, "overrides", "guest", false, sizeof(guest_override), MAX_MAPPINGS,
                          (elem_fn)parse_guest_override, &arr, &s->n_govr);
    s->govr = arr;
    return ok;
}

static bool parse_flat_map(pctx *c, const json_value *o, const char *path, nested_map *n)
{
    static const char *const keys[] = {"gpa", "hpa", "pages", NULL};
    const scenario *s = c->s;
    if (o->type != JSON_OBJECT)
        return errf(c, path, "is %s, expected an object", json_type_name(o->type));
    if (!check_keys(c, o, path, keys))
        return false;
    int64_t pages;
    get_hex(c, o, "gpa", path, true, 0, &n->gpa);
    get_hex(c, o, "hpa", path, true, 0, &n->hpa);
    get_int(c, o, "pages", path, false, 1, MAX_PAGES, 1, &pages);
    if (c->failed)
        return false;
    n->page = s->paging == PAGING_SUNWAY ? PAGE_8K : PAGE_4K;
    n->pages = (uint32_t)pages;
    n->perm = PERM_R | PERM_W | PERM_X;
    uint64_t size = page_bytes(n->page), span = size * n->pages;
    char p[160];
    if ((n->gpa | n->hpa) & (size - 1)) {
        subpath(p, sizeof p, path, (n->gpa & (size - 1)) ? "gpa" : "hpa");
        return errf(c, p, "is not aligned to the %s guest frames of the flat table", page_names[n->page]);
    }
    /* Flat memory slots cover the guest RAM the flat table indexes; shadow memory slots may
     * lie anywhere below maxphyaddr. */
    bool shadow = s->mode == MODE_SHADOW;
    uint64_t limit = shadow ? 1ull << s->maxphyaddr : s->flat_guest_ram;
    if (n->gpa + span > limit || n->gpa + span < n->gpa) {
        subpath(p, sizeof p, path, "gpa");
        return errf(c, p, "range 0x%llx + %u x %s runs past %s (0x%llx)", (unsigned long long)n->gpa, n->pages,
                    page_names[n->page], shadow ? "2^maxphyaddr" : "flat.guest_ram", (unsigned long long)limit);
    }
    if (((n->hpa + span - 1) >> s->maxphyaddr) || n->hpa + span - 1 < n->hpa) {
        subpath(p, sizeof p, path, "hpa");
        return errf(c, p, "range does not fit in maxphyaddr = %d bits", s->maxphyaddr);
    }
    return true;
}

/* mode flat: the flat nested table and the VMM's memory slots it is filled from. The
 * flavour follows the guest: Sunway (8 KiB frames) or x86 (4 KiB). */
static bool parse_flat(pctx *c, const json_value *root, scenario *s)
{
    static const char *const keys[] = {"table_base", "guest_ram", "prefill", "mappings", NULL};
    const json_value *f = want(c, root, "flat", "", JSON_OBJECT, true);
    if (!f || !check_keys(c, f, "flat", keys))
        return false;
    uint64_t page = s->paging == PAGING_SUNWAY ? 8192 : 4096;
    get_hex(c, f, "table_base", "flat", false, 0x10000000, &s->flat_table_base);
    get_hex(c, f, "guest_ram", "flat", true, 0, &s->flat_guest_ram);
    get_bool(c, f, "prefill", "flat", false, &s->flat_prefill);
    if (c->failed)
        return false;
    if (s->flat_table_base & 0xFFF)
        return errf(c, "flat.table_base", "0x%llx is not 4 KiB aligned", (unsigned long long)s->flat_table_base);
    if (!s->flat_guest_ram || (s->flat_guest_ram & (page - 1)) || s->flat_guest_ram / page * 8 > (64ull << 20))
        return errf(c, "flat.guest_ram", "0x%llx must be a non-zero multiple of %llu KiB, at most %llu GiB (a 64 MiB table)",
                    (unsigned long long)s->flat_guest_ram, (unsigned long long)page / 1024,
                    (unsigned long long)((64ull << 20) / 8 * page >> 30));
    if ((s->flat_table_base + s->flat_guest_ram / page * 8) >> s->maxphyaddr)
        return errf(c, "flat.table_base", "the table runs past 2^maxphyaddr");
    void *arr;
    bool ok = parse_array(c, f, "mappings", "flat", true, sizeof(nested_map), MAX_MAPPINGS, (elem_fn)parse_flat_map,
                          &arr, &s->n_fmaps);
    s->fmaps = arr;
    return ok;
}

/* One EPT of the EPTP list: its own mappings and overrides, in the main table's format. */
static bool parse_ept_def(pctx *c, const json_value *o, const char *path, ept_def *d)
{
    static const char *const keys[] = {"mappings", "overrides", NULL};
    if (o->type != JSON_OBJECT)
        return errf(c, path, "is %s, expected an object", json_type_name(o->type));
    if (!check_keys(c, o, path, keys))
        return false;
    void *arr;
    bool ok = parse_array(c, o, "mappings", path, true, sizeof(nested_map), MAX_MAPPINGS, (elem_fn)parse_nested_map,
                          &arr, &d->n_maps);
    d->maps = arr;
    if (!ok)
        return false;
    ok = parse_array(c, o, "overrides", path, false, sizeof(nested_override), MAX_MAPPINGS,
                     (elem_fn)parse_nested_override, &arr, &d->n_ovr);
    d->ovr = arr;
    return ok;
}

/* mode shadow: the VMM's memory slots (gpa -> hpa, 4 KiB frames), where it keeps its
 * shadow tables, and the two ways to spare mov cr3 its exit. */
static bool parse_shadow(pctx *c, const json_value *root, scenario *s)
{
    static const char *const keys[] = {"table_base", "mappings", "cr3_targets", "paravirt_cr3_cache", "prefill", NULL};
    if (s->paging == PAGING_SUNWAY)
        return errf(c, "guest.paging", "shadow mode models x86 guests (4level, 5level, pae, 32bit): Sunway refills its TLB in HMcode");
    const json_value *o = want(c, root, "shadow", "", JSON_OBJECT, true);
    if (!o || !check_keys(c, o, "shadow", keys))
        return false;
    int64_t targets;
    get_hex(c, o, "table_base", "shadow", false, 0x20000000, &s->shadow_table_base);
    get_int(c, o, "cr3_targets", "shadow", false, 0, 4, 0, &targets);
    get_bool(c, o, "paravirt_cr3_cache", "shadow", false, &s->pv_cr3_cache);
    get_bool(c, o, "prefill", "shadow", false, &s->shadow_prefill);
    if (c->failed)
        return false;
    if (s->shadow_prefill && json_get(json_get(root, "guest"), "tables"))
        return errf(c, "shadow.prefill", "needs guest.mappings (the VMM prefills what the mappings map), not guest.tables");
    s->cr3_targets = (uint32_t)targets;
    if (s->shadow_table_base & 0xFFF)
        return errf(c, "shadow.table_base", "0x%llx is not 4 KiB aligned", (unsigned long long)s->shadow_table_base);
    void *arr;
    bool ok = parse_array(c, o, "mappings", "shadow", true, sizeof(nested_map), MAX_MAPPINGS, (elem_fn)parse_flat_map,
                          &arr, &s->n_fmaps);
    s->fmaps = arr;
    return ok;
}

/* mode agile: where the VMM keeps its shadow tables, the switching level for every gva,
 * subtrees nested from the start, and the policy that moves subtrees (model.md 1). */
static bool parse_agile(pctx *c, const json_value *root, scenario *s)
{
    static const char *const keys[] = {"table_base", "switch_level", "subtrees", "nested_after_writes",
                                       "shadow_after_quiet", "prefill", NULL};
    static const char *const sub_keys[] = {"gva", "level", NULL};
    if (s->paging != PAGING_4LEVEL && s->paging != PAGING_5LEVEL)
        return errf(c, "guest.paging", "agile paging models x86-64 guests (4level, 5level): its switch bit lives in 64-bit shadow entries");
    const json_value *o = want(c, root, "agile", "", JSON_OBJECT, false);
    if (c->failed || (o && !check_keys(c, o, "agile", keys)))
        return false;
    int levels = guest_format_for(s->paging)->levels;
    int64_t sw = 0, writes = 0, quiet = 0;
    s->shadow_table_base = 0x20000000;
    if (o) {
        get_hex(c, o, "table_base", "agile", false, 0x20000000, &s->shadow_table_base);
        get_int(c, o, "switch_level", "agile", false, 0, levels, 0, &sw);
        get_int(c, o, "nested_after_writes", "agile", false, 0, 1000000, 0, &writes);
        get_int(c, o, "shadow_after_quiet", "agile", false, 0, 100000000, 0, &quiet);
        get_bool(c, o, "prefill", "agile", false, &s->agile_prefill);
    }
    if (!c->failed && s->agile_prefill && json_get(json_get(root, "guest"), "tables"))
        return errf(c, "agile.prefill", "needs guest.mappings (the VMM prefills what the mappings map), not guest.tables");
    if (c->failed)
        return false;
    if (s->shadow_table_base & 0xFFF)
        return errf(c, "agile.table_base", "0x%llx is not 4 KiB aligned", (unsigned long long)s->shadow_table_base);
    if (s->shadow_table_base > (1ull << s->maxphyaddr) - (1ull << 24))
        return errf(c, "agile.table_base", "0x%llx leaves no room for shadow tables below 2^maxphyaddr",
                    (unsigned long long)s->shadow_table_base);
    s->agile_switch_level = (int)sw;
    s->agile_write_threshold = (uint32_t)writes;
    s->agile_quiet = (uint32_t)quiet;
    const json_value *arr = o ? want(c, o, "subtrees", "agile", JSON_ARRAY, false) : NULL;
    if (c->failed)
        return false;
    if (arr && arr->count > AGILE_MAX_SUBTREES)
        return errf(c, "agile.subtrees", "has %zu entries; at most %d are allowed", arr->count, AGILE_MAX_SUBTREES);
    uint32_t i = 0;
    for (const json_value *e = arr ? arr->first_child : NULL; e; e = e->next, i++) {
        char ep[64];
        snprintf(ep, sizeof ep, "agile.subtrees[%u]", i);
        if (e->type != JSON_OBJECT)
            return errf(c, ep, "is %s, expected an object", json_type_name(e->type));
        if (!check_keys(c, e, ep, sub_keys))
            return false;
        int64_t level;
        get_hex(c, e, "gva", ep, true, 0, &s->agile_sub_gva[i]);
        get_int(c, e, "level", ep, true, 1, levels, 1, &level);
        if (c->failed)
            return false;
        s->agile_sub_level[i] = (int)level;
    }
    s->n_agile_subs = i;
    return true;
}

static bool parse_nested(pctx *c, const json_value *root, scenario *s)
{
    static const char *const ept_keys[] = {"levels", "table_base", "ad", "memory_type", "execute_only",
                                           "mappings", "overrides", "vmfunc", "eptp_list", "on_demand", NULL};
    static const char *const npt_keys[] = {"levels", "table_base", "host_nxe", "host_smep", "mappings", "overrides",
                                           "on_demand", NULL};
    const json_value *n = json_get(root, "nested");
    s->host_nxe = true;
    s->execute_only = true;
    s->eptp_memtype = 6;
    if (s->mode == MODE_NATIVE || s->mode == MODE_FLAT || s->mode == MODE_SHADOW) {
        if (n)
            return errf(c, "nested", "%s", s->mode == MODE_NATIVE
                        ? "native mode has no nested tables; remove it or use mode ept or npt"
                        : s->mode == MODE_FLAT ? "flat mode uses the \"flat\" table, not \"nested\""
                        : "shadow mode has no nested tables: give the VMM's memory slots in \"shadow\"");
        return s->mode == MODE_NATIVE || (s->mode == MODE_FLAT ? parse_flat(c, root, s) : parse_shadow(c, root, s));
    }
    if (s->paging == PAGING_SUNWAY)
        return errf(c, "guest.paging", "sunway guests run natively or on a flat nested table (mode native or flat)");
    n = want(c, root, "nested", "", JSON_OBJECT, true);
    if (!n || !check_keys(c, n, "nested", s->mode == MODE_NPT ? npt_keys : ept_keys))
        return false;
    if (s->mode == MODE_AGILE && (json_get(n, "vmfunc") || json_get(n, "eptp_list")))
        return errf(c, "nested.vmfunc", "agile mode models one EPT: VM functions are not part of it");
    if (s->mode == MODE_AGILE && !parse_agile(c, root, s))
        return false;
    int64_t levels, mt;
    get_int(c, n, "levels", "nested", false, 0, 64, 4, &levels);
    if (!c->failed && levels != 4 && levels != 5)
        return errf(c, "nested.levels", "%lld: %s walks are 4 or 5 levels%s", (long long)levels,
                    s->mode == MODE_NPT ? "NPT" : "EPT", s->mode == MODE_NPT ? "" : " (EPTP bits 5:3 = levels - 1)");
    s->nested_levels = (int)levels;
    get_hex(c, n, "table_base", "nested", false, 0x10000000, &s->nested_table_base);
    get_bool(c, n, "ad", "nested", false, &s->ept_ad);
    get_int(c, n, "memory_type", "nested", false, 0, 7, 6, &mt);
    if (!c->failed && mt != 0 && mt != 6)
        return errf(c, "nested.memory_type", "%lld: the EPTP memory type must be 0 (UC) or 6 (WB)", (long long)mt);
    s->eptp_memtype = (int)mt;
    get_bool(c, n, "execute_only", "nested", true, &s->execute_only);
    get_bool(c, n, "host_nxe", "nested", true, &s->host_nxe);
    get_bool(c, n, "host_smep", "nested", false, &s->host_smep);
    if (c->failed)
        return false;
    if (s->nested_table_base & 0xFFF)
        return errf(c, "nested.table_base", "0x%llx is not 4 KiB aligned", (unsigned long long)s->nested_table_base);
    if (s->nested_table_base > (1ull << s->maxphyaddr) - (1ull << 24))
        return errf(c, "nested.table_base", "0x%llx leaves no room for tables below 2^maxphyaddr",
                    (unsigned long long)s->nested_table_base);
    void *arr;
    bool ok = parse_array(c, n, "mappings", "nested", true, sizeof(nested_map), MAX_MAPPINGS,
                          (elem_fn)parse_nested_map, &arr, &s->n_nmaps);
    s->nmaps = arr;
    if (!ok)
        return false;
    ok = parse_array(c, n, "overrides", "nested", false, sizeof(nested_override), MAX_MAPPINGS,
                     (elem_fn)parse_nested_override, &arr, &s->n_novr);
    s->novr = arr;
    if (!ok)
        return false;
    get_bool(c, n, "vmfunc", "nested", false, &s->vmfunc);
    get_bool(c, n, "on_demand", "nested", false, &s->nested_on_demand);
    if (c->failed)
        return false;
    if (s->nested_on_demand && (s->n_novr || s->vmfunc))
        return errf(c, "nested.on_demand", "the nested table is filled on first touch: it cannot take %s",
                    s->n_novr ? "nested.overrides (there is no entry to change yet)" : "nested.vmfunc (EPTP switching)");
    if (json_get(n, "eptp_list") && !s->vmfunc)
        return errf(c, "nested.eptp_list", "needs nested.vmfunc: true (VM functions with EPTP switching enabled)");
    ok = parse_array(c, n, "eptp_list", "nested", false, sizeof(ept_def), EPTP_LIST_ENTRIES - 1,
                     (elem_fn)parse_ept_def, &arr, &s->n_eptp_list);
    s->eptp_list = arr;
    return ok;
}

/* Machine presets from the published tables (wasm-core/data/published-figures.json,
 * flat_nested.machines): the x86 server's 1536-entry second-level data TLB with
 * page-walk caches and a nested TLB, and the Sunway 1621's 512 entries with neither. */
typedef struct cache_preset {
    const char *name;
    uint32_t tlb, tlb_ways, pwc, ntlb, ntlb_ways;
} cache_preset;

static const cache_preset presets[] = {
    {"none", 0, 0, 0, 0, 0},
    {"x86-server", 1536, 12, 32, 64, 4},
    {"sunway-1621", 512, 8, 0, 0, 0},
};

static bool parse_cache_size(pctx *c, const json_value *o, const char *key, uint32_t *entries, uint32_t *ways,
                             bool has_ways)
{
    static const char *const keys_w[] = {"entries", "ways", NULL};
    static const char *const keys_n[] = {"entries", NULL};
    char p[160];
    subpath(p, sizeof p, "caches", key);
    const json_value *v = want(c, o, key, "caches", JSON_OBJECT, false);
    if (!v)
        return !c->failed;
    if (!check_keys(c, v, p, has_ways ? keys_w : keys_n))
        return false;
    int64_t e, w;
    get_int(c, v, "entries", p, true, 0, 65536, 0, &e);
    get_int(c, v, "ways", p, false, 0, 64, has_ways ? (int64_t)*ways : 0, &w);
    if (c->failed)
        return false;
    if (w && e % w) {
        char q[180];
        subpath(q, sizeof q, p, "entries");
        return errf(c, q, "%lld is not a multiple of ways (%lld)", (long long)e, (long long)w);
    }
    *entries = (uint32_t)e;
    *ways = (uint32_t)w;
    return true;
}

static bool parse_caches(pctx *c, const json_value *root, scenario *s)
{
    static const char *const keys[] = {"preset", "tlb", "pwc", "ntlb", "flush_on_eptp_switch", "contents", NULL};
    static const char *const preset_names[] = {"none", "x86-server", "sunway-1621", NULL};
    const json_value *o = want(c, root, "caches", "", JSON_OBJECT, false);
    if (!o)
        return !c->failed;
    if (!check_keys(c, o, "caches", keys))
        return false;
    int pi;
    if (!get_enum(c, o, "preset", "caches", false, preset_names, 0, &pi))
        return false;
    const cache_preset *p = &presets[pi];
    s->tlb_entries = p->tlb;
    s->tlb_ways = p->tlb_ways;
    s->pwc_entries = p->pwc;
    s->ntlb_entries = p->ntlb;
    s->ntlb_ways = p->ntlb_ways;
    uint32_t pwc_ways = 0;
    return parse_cache_size(c, o, "tlb", &s->tlb_entries, &s->tlb_ways, true) &&
           parse_cache_size(c, o, "pwc", &s->pwc_entries, &pwc_ways, false) &&
           parse_cache_size(c, o, "ntlb", &s->ntlb_entries, &s->ntlb_ways, true) &&
           get_bool(c, o, "flush_on_eptp_switch", "caches", false, &s->flush_on_eptp_switch) &&
           get_bool(c, o, "contents", "caches", false, &s->cache_contents);
}

bool scenario_parse(const char *text, size_t len, scenario *s, char *err, size_t errlen)
{
    static const char *const keys[] = {"$schema", "name", "description", "mode", "machine", "guest", "nested", "flat", "shadow", "agile",
                                       "caches", "accesses", NULL};
    memset(s, 0, sizeof *s);
    json_doc doc;
    if (!json_parse(text, len, &doc)) {
        snprintf(err, errlen, "%s", doc.error);
        return false;
    }
    pctx c = {.err = err, .errlen = errlen, .s = s};
    const json_value *root = doc.root;
    bool ok = false;
    if (root->type != JSON_OBJECT) {
        errf(&c, "(document)", "is %s, expected a scenario object", json_type_name(root->type));
        goto out;
    }
    if (!check_keys(&c, root, "", keys))
        goto out;
    const json_value *name = want(&c, root, "name", "", JSON_STRING, true);
    want(&c, root, "description", "", JSON_STRING, false);
    want(&c, root, "$schema", "", JSON_STRING, false);
    if (c.failed)
        goto out;
    if (name->str_len == 0 || name->str_len > 200) {
        errf(&c, "name", "must be 1 to 200 characters");
        goto out;
    }
    s->name = malloc(name->str_len + 1);
    if (!s->name) {
        errf(&c, "name", "out of memory");
        goto out;
    }
    memcpy(s->name, name->str, name->str_len + 1);
    int mode;
    get_enum(&c, root, "mode", "", true, mode_names, 0, &mode);
    s->mode = (enum vm_mode)mode;
    if (!c.failed && s->mode != MODE_FLAT && json_get(root, "flat")) {
        errf(&c, "flat", "only mode flat uses a flat nested table");
        goto out;
    }
    if (!c.failed && s->mode != MODE_SHADOW && json_get(root, "shadow")) {
        errf(&c, "shadow", "only mode shadow uses shadow tables");
        goto out;
    }
    if (!c.failed && s->mode != MODE_AGILE && json_get(root, "agile")) {
        errf(&c, "agile", "only mode agile uses agile paging");
        goto out;
    }
    if (c.failed || !parse_machine(&c, root, s) || !parse_guest(&c, root, s) || !parse_nested(&c, root, s) ||
        !parse_caches(&c, root, s))
        goto out;
    void *arr;
    ok = parse_array(&c, root, "accesses", "", true, sizeof(vm_access), MAX_ACCESSES, (elem_fn)parse_access, &arr,
                     &s->n_accesses);
    s->accesses = arr;
out:
    json_free(&doc);
    if (!ok)
        scenario_free(s);
    return ok;
}

void scenario_free(scenario *s)
{
    free(s->name);
    free(s->gmaps);
    free(s->govr);
    for (uint32_t i = 0; i < s->n_gtables; i++)
        free(s->gtables[i].entries);
    free(s->gtables);
    free(s->nmaps);
    free(s->novr);
    free(s->fmaps);
    for (uint32_t i = 0; i < s->n_eptp_list; i++) {
        free(s->eptp_list[i].maps);
        free(s->eptp_list[i].ovr);
    }
    free(s->eptp_list);
    free(s->accesses);
    memset(s, 0, sizeof *s);
}

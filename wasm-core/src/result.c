/* The result format (docs/model.md section 5) and the readable `explain` table. */
#include "model.h"
#include "json.h"
#include "cache.h"
#include "vmm.h"
#include "walk.h"

#include <stdio.h>
#include <string.h>

const char *const outcome_names[] = {"ok",         "guest_page_fault", "ept_violation",  "ept_misconfig",
                                     "npt_fault",  "flat_fault",       "vmfunc_exit",    "invalid_opcode",
                                     "vmcall_exit", "shadow_unmapped"};
static const char *const mode_names[] = {"native", "ept", "npt", "flat", "shadow", "agile"};
static const char *const kind_names[] = {"read",     "ad_write", "pdpte",   "vmm_fill",
                                         "eptp_list", "tlb_hit", "pwc_hit", "ntlb_hit", "vmexit", "vmm_read"};
static const char *const dim_names[] = {"guest", "nested"};
static const char *const result_names[] = {"table",  "page",    "not_present",       "reserved", "misconfig",
                                           "written", "blocked", "hidden_page_fault", "pt_write", "cr3_write",
                                           "reflected_page_fault"};
static const char *const reason_names[] = {"not_present",   "reserved",    "permission",         "misconfig",
                                           "fault_on",      "unmapped",    "invalid_eptp",       "index_out_of_range",
                                           "function_disabled", "hypercall", "vmfunc_disabled"};
static const char *const detail_names[] = {"", "write_without_read", "execute_only_unsupported", "reserved_bits",
                                           "memory_type"};
static const char *const ad_names[] = {"", "A", "D", "AD"};

typedef struct flag_list {
    const char *names[16];
    char mt[8];
    int n;
} flag_list;

static void collect_flags(const machine *m, const vm_step *st, flag_list *fl)
{
    uint64_t e = st->entry;
    fl->n = 0;
#define ADD(cond, name) do { if (cond) fl->names[fl->n++] = (name); } while (0)
    if (st->kind == STEP_PDPTE) {
        ADD(e & BIT(0), "P");
        ADD(e & BIT(3), "PWT");
        ADD(e & BIT(4), "PCD");
        return;
    }
    if (st->kind == STEP_EPTP_LIST) {
        snprintf(fl->mt, sizeof fl->mt, "MT=%u", (unsigned)(e & 7));
        fl->names[fl->n++] = fl->mt;
        ADD(e & BIT(6), "AD");
        return;
    }
    if (st->dim == DIM_NESTED && m->ops->flat_table) {
        ADD(e & BIT(0), "V");
        return;
    }
    if (st->dim == DIM_GUEST && m->gf == &guest_sunway) {
        ADD(e & BIT(0), "V");
        ADD(e & BIT(1), "FOR");
        ADD(e & BIT(2), "FOW");
        ADD(e & BIT(3), "FOE");
        ADD(e & BIT(4), "ASM");
        ADD(e & BIT(8), "KRE");
        ADD(e & BIT(9), "URE");
        ADD(e & BIT(12), "KWE");
        ADD(e & BIT(13), "UWE");
        return;
    }
    if (st->dim == DIM_NESTED && m->nf == &nested_ept && !(m->ops->shadow && !st->gpa_valid)) {
        bool leaf = st->level == 1 || (e & BIT(7));
        ADD(e & BIT(0), "R");
        ADD(e & BIT(1), "W");
        ADD(e & BIT(2), "X");
        if (leaf) {
            snprintf(fl->mt, sizeof fl->mt, "MT=%u", (unsigned)(e >> 3) & 7u);
            fl->names[fl->n++] = fl->mt;
            ADD(e & BIT(6), "IPAT");
        }
        ADD(st->level >= 2 && (e & BIT(7)), "PS");
        ADD(e & BIT(8), "A");
        ADD(e & BIT(9), "D");
        ADD(e & BIT(10), "UX");
        ADD(e & BIT(63), "SVE");
        return;
    }
    bool has_xd = st->dim == DIM_NESTED || m->gf->has_xd;
    ADD(e & BIT(0), "P");
    ADD(e & BIT(1), "RW");
    ADD(e & BIT(2), "US");
    ADD(e & BIT(3), "PWT");
    ADD(e & BIT(4), "PCD");
    ADD(e & BIT(5), "A");
    ADD(e & BIT(6), "D");
    ADD(e & BIT(7), st->level == 1 ? "PAT" : "PS");
    ADD(e & BIT(8), "G");
    ADD(m->ops->shadow && m->nf && st->dim == DIM_NESTED && (e & AGILE_SWITCH_BIT), "SW");   /* a shadow entry that switches */
    ADD(has_xd && (e & BIT(63)), "XD");
#undef ADD
}

void step_flags(const machine *m, const vm_step *st, char *out, size_t outlen, bool json)
{
    flag_list fl;
    collect_flags(m, st, &fl);
    size_t used = 0;
    out[0] = 0;
    if (json)
        used += (size_t)snprintf(out + used, outlen - used, "[");
    for (int i = 0; i < fl.n && used < outlen; i++) {
        if (json)
            used += (size_t)snprintf(out + used, outlen - used, "%s\"%s\"", i ? "," : "", fl.names[i]);
        else
            used += (size_t)snprintf(out + used, outlen - used, "%s%s", i ? " " : "", fl.names[i]);
    }
    if (json && used < outlen)
        snprintf(out + used, outlen - used, "]");
}

static void hex_or_null(strbuf *sb, bool valid, uint64_t v)
{
    if (valid)
        sb_hex(sb, v);
    else
        sb_puts(sb, "null");
}

static void size_or_null(strbuf *sb, uint64_t v)
{
    if (v)
        sb_printf(sb, "%llu", (unsigned long long)v);
    else
        sb_puts(sb, "null");
}

void result_json_begin(strbuf *sb, const machine *m)
{
    const scenario *s = m->s;
    sb_puts(sb, "{\"format\":\"vmsim-result/1\",\"name\":");
    sb_json_string(sb, s->name);
    sb_printf(sb, ",\"mode\":\"%s\",\"guest_paging\":\"%s\",\"nested_levels\":%d,\"cr3\":", mode_names[s->mode],
              m->gf->name, m->nf ? s->nested_levels : 0);
    sb_hex(sb, m->cr3);
    sb_puts(sb, ",\"eptp\":");
    hex_or_null(sb, m->nf == &nested_ept, m->eptp);
    sb_puts(sb, ",\"ncr3\":");
    hex_or_null(sb, m->nf == &nested_npt, m->nested_root);
    sb_puts(sb, ",\"flat_table_bytes\":");
    size_or_null(sb, m->ops->flat_table ? flat_table_bytes(s) : 0);
    sb_puts(sb, ",\"accesses\":[");
}

static void fault_json(strbuf *sb, const vm_access *a, const vm_result *r)
{
    const vm_fault *f = &r->fault;
    if (r->outcome == OUT_OK) {
        sb_puts(sb, "null");
        return;
    }
    sb_printf(sb, "{\"dim\":\"%s\",\"level\":%u,\"stage\":%u,\"reason\":\"%s\"", dim_names[f->dim], f->level, f->stage,
              reason_names[f->reason]);
    switch (r->outcome) {
    case OUT_GUEST_PF:
        sb_puts(sb, ",\"vector\":14,\"error_code\":");
        sb_hex(sb, f->error_code);
        sb_puts(sb, ",\"cr2\":");
        sb_hex(sb, a->gva);
        break;
    case OUT_EPT_VIOLATION:
        sb_puts(sb, ",\"exit_reason\":48,\"qualification\":");
        sb_hex(sb, f->qualification);
        sb_puts(sb, ",\"guest_physical_address\":");
        sb_hex(sb, f->fault_gpa);
        sb_puts(sb, ",\"guest_linear_address\":");
        sb_hex(sb, a->gva);
        break;
    case OUT_EPT_MISCONFIG:
        sb_printf(sb, ",\"detail\":\"%s\",\"exit_reason\":49,\"guest_physical_address\":", detail_names[f->detail]);
        sb_hex(sb, f->fault_gpa);
        break;
    case OUT_VMFUNC_EXIT:
        sb_puts(sb, ",\"exit_reason\":59");
        break;
    case OUT_VMCALL_EXIT:
        sb_puts(sb, ",\"exit_reason\":18");
        break;
    case OUT_INVALID_OPCODE:
        sb_puts(sb, ",\"vector\":6");
        break;
    case OUT_SHADOW_UNMAPPED:
    case OUT_FLAT_FAULT:
        sb_puts(sb, ",\"guest_physical_address\":");
        sb_hex(sb, f->fault_gpa);
        break;
    case OUT_NPT_FAULT:
        sb_puts(sb, ",\"exit_code\":\"0x400\",\"exitinfo1\":");
        sb_hex(sb, f->exitinfo1);
        sb_puts(sb, ",\"exitinfo2\":");
        sb_hex(sb, f->fault_gpa);
        break;
    default:
        break;
    }
    sb_putc(sb, '}');
}

/* With caches on, every step says whether a cache answered it ("hit") or memory did
 * because the caches missed ("miss"); steps that are neither say null. */
static const char *step_cache(const machine *m, const vm_step *st)
{
    if (!m->tlb && !m->gpwc && !m->ntlb)
        return "null";
    if (st->kind == STEP_TLB_HIT || st->kind == STEP_PWC_HIT || st->kind == STEP_NTLB_HIT)
        return "\"hit\"";
    return st->kind == STEP_READ ? "\"miss\"" : "null";
}

static void step_json(strbuf *sb, const machine *m, const vm_step *st, uint32_t n)
{
    char flags[192];
    step_flags(m, st, flags, sizeof flags, true);
    sb_printf(sb, "{\"n\":%u,\"ref\":", n);
    if (st->ref)
        sb_printf(sb, "%u", st->ref);
    else
        sb_puts(sb, "null");
    sb_printf(sb, ",\"kind\":\"%s\",\"dim\":\"%s\",\"level\":%u,\"stage\":%u,\"gpa\":", kind_names[st->kind],
              dim_names[st->dim], st->level, st->stage);
    hex_or_null(sb, st->gpa_valid, st->gpa);
    sb_puts(sb, ",\"table\":");
    sb_hex(sb, st->table);
    sb_printf(sb, ",\"index\":%u,\"entry_hpa\":", st->index);
    sb_hex(sb, st->entry_hpa);
    sb_puts(sb, ",\"entry\":");
    sb_hex(sb, st->entry);
    sb_printf(sb, ",\"flags\":%s,\"ad_set\":\"%s\",\"result\":\"%s\",\"cache\":%s}", flags, ad_names[st->ad_set],
              result_names[st->result], step_cache(m, st));
}

/* ---- what the caches hold (caches.contents) ---- */

void machine_mark_caches(machine *m)
{
    struct cache *c[] = {m->tlb, m->gpwc, m->npwc, m->ntlb};
    for (int i = 0; i < 4; i++)
        if (c[i])
            cache_mark(c[i]);
}

/* The gva bits above a guest walk-cache line of this level (the key's shift, as each
 * mode's walk forms it: agile's shadow part and shadow's PAE-format table are 9-bit). */
static int gpwc_shift(const machine *m, int level)
{
    if (m->ops->gpwc_shift)
        return m->ops->gpwc_shift(m, level);
    return m->gf->page_shift + m->gf->index_bits * (level - 1);
}

enum { C_TLB, C_GPWC, C_NPWC, C_NTLB };

/* Keys are (level or page shift) << 58 | address >> shift, in every cache. */
static void cache_line_json(strbuf *sb, const machine *m, int which, const cache_entry *e)
{
    uint32_t top = (uint32_t)(e->key >> 58);
    uint64_t low = e->key & (BIT(58) - 1);
    int shift = which == C_GPWC ? gpwc_shift(m, (int)top) : which == C_NPWC ? 12 + 9 * ((int)top - 1) : (int)top;
    bool ept = m->nf == &nested_ept;
    sb_printf(sb, "{\"set\":%u,\"rank\":%u,\"level\":", e->set, e->rank);
    if (which == C_GPWC || which == C_NPWC)
        sb_printf(sb, "%u", top);
    else
        sb_puts(sb, "null");
    sb_puts(sb, ",\"from\":");
    sb_hex(sb, low << shift);
    sb_printf(sb, ",\"size\":%llu,\"to\":", (unsigned long long)(1ull << shift));
    sb_hex(sb, e->line.value);
    sb_puts(sb, ",\"gpa\":");
    hex_or_null(sb, which == C_TLB && m->s->mode != MODE_NATIVE, e->line.value2);
    /* the TLB's tag: address space (with PCIDs) | EPTP index << 16; the walk caches' their own */
    uint32_t space = which == C_TLB ? (e->tag & 0xFFFF) : which == C_GPWC ? e->tag : 0;
    sb_printf(sb, ",\"space\":%u,\"eptp_index\":", space);
    if (ept && which != C_GPWC)
        sb_printf(sb, "%u", which == C_TLB ? e->tag >> 16 : e->tag);
    else
        sb_puts(sb, "null");
    sb_puts(sb, ",\"dirty\":");
    sb_puts(sb, which == C_TLB ? (e->line.aux & TLB_DIRTY ? "true" : "false")
                : which == C_NTLB ? (e->line.aux & NTLB_DIRTY ? "true" : "false") : "null");
    sb_printf(sb, ",\"served\":%s,\"filled\":%s}", e->served ? "true" : "false", e->filled ? "true" : "false");
}

static void cache_contents_json(strbuf *sb, const machine *m)
{
    static const char *const names[] = {"tlb", "guest_pwc", "nested_pwc", "ntlb"};
    const struct cache *c[] = {m->tlb, m->gpwc, m->npwc, m->ntlb};
    cache_entry lines[CONTENTS_MAX_LINES];
    sb_putc(sb, '{');
    for (int k = 0; k < 4; k++) {
        sb_printf(sb, "%s\"%s\":", k ? "," : "", names[k]);
        if (!c[k]) {
            sb_puts(sb, "null");
            continue;
        }
        uint32_t valid = cache_contents(c[k], lines, CONTENTS_MAX_LINES);
        uint32_t n = valid < CONTENTS_MAX_LINES ? valid : CONTENTS_MAX_LINES;
        sb_printf(sb, "{\"entries\":%u,\"ways\":%u,\"valid\":%u,\"lines\":[", c[k]->sets * c[k]->ways, c[k]->ways,
                  valid);
        for (uint32_t i = 0; i < n; i++) {
            if (i)
                sb_putc(sb, ',');
            cache_line_json(sb, m, k, &lines[i]);
        }
        sb_puts(sb, "]}");
    }
    sb_putc(sb, '}');
}

void result_json_access(strbuf *sb, const machine *m, const vm_access *a, const vm_result *r, bool contents)
{
    sb_puts(sb, "\n{\"gva\":");
    hex_or_null(sb, a->op <= OP_FETCH || a->op == OP_INVLPG || a->op == OP_PTE_WRITE, a->gva);
    sb_printf(sb, ",\"op\":\"%s\",\"user\":%s,\"eptp_index\":", op_names[a->op], a->user ? "true" : "false");
    if (m->nf == &nested_ept)
        sb_printf(sb, "%u", m->eptp_index);
    else
        sb_puts(sb, "null");
    sb_printf(sb, ",\"outcome\":\"%s\",\"exit\":%s,\"gpa\":", outcome_names[r->outcome], r->exits ? "true" : "false");
    hex_or_null(sb, r->gpa_valid, r->gpa);
    sb_puts(sb, ",\"hpa\":");
    hex_or_null(sb, r->hpa_valid, r->hpa);
    sb_puts(sb, ",\"guest_page_size\":");
    size_or_null(sb, r->guest_page_size);
    sb_puts(sb, ",\"nested_page_size\":");
    size_or_null(sb, r->nested_page_size);
    sb_printf(sb, ",\"memory_refs\":%u,\"guest_refs\":%u,\"nested_refs\":%u,\"ad_writes\":%u,\"exits\":%u,\"cache\":",
              r->memory_refs, r->guest_refs, r->nested_refs, r->ad_writes, r->exits);
    if (r->tlb_hit < 0 && !m->gpwc && !m->ntlb)
        sb_puts(sb, "null");
    else
        sb_printf(sb, "{\"tlb\":%s,\"pwc_hits\":%u,\"ntlb_hits\":%u}",
                  r->tlb_hit < 0 ? "null" : r->tlb_hit ? "\"hit\"" : "\"miss\"", r->pwc_hits, r->ntlb_hits);
    sb_puts(sb, ",\"fault\":");
    fault_json(sb, a, r);
    sb_puts(sb, ",\"steps\":[");
    for (uint32_t i = 0; i < r->nsteps; i++) {
        if (i)
            sb_putc(sb, ',');
        sb_puts(sb, "\n ");
        step_json(sb, m, &r->steps[i], i + 1);
    }
    sb_putc(sb, ']');
    if (contents) {
        sb_puts(sb, ",\n \"cache_contents\":");
        cache_contents_json(sb, m);
    }
    sb_putc(sb, '}');
}

void result_json_end(strbuf *sb, const machine *m, const vm_result *t, const uint32_t counts[OUT_COUNT], uint32_t n)
{
    sb_printf(sb,
              "],\n\"totals\":{\"accesses\":%u,\"memory_refs\":%u,\"guest_refs\":%u,\"nested_refs\":%u,\"ad_writes\":%u,"
              "\"exits\":%u",
              n, t->memory_refs, t->guest_refs, t->nested_refs, t->ad_writes, t->exits);
    for (int i = 0; i < OUT_COUNT; i++)
        sb_printf(sb, ",\"%s\":%u", outcome_names[i], counts[i]);
    sb_puts(sb, "}");
    if (m->ops->summary)
        m->ops->summary(sb, m);
    else
        sb_puts(sb, ",\"shadow\":null}\n");
}

/* ---- explain ---- */

static void explain_fault(strbuf *sb, const machine *m, const vm_access *a, const vm_result *r)
{
    const vm_fault *f = &r->fault;
    switch (r->outcome) {
    case OUT_OK:
        break;
    case OUT_GUEST_PF: {
        uint64_t ec = f->error_code;
        sb_printf(sb, "  guest #PF (vector 14, no exit) at guest level %u: %s; error code 0x%llx =%s%s%s%s%s; CR2 = 0x%llx\n",
                  f->level, reason_names[f->reason], (unsigned long long)ec, (ec & 1) ? " P" : " not-present",
                  (ec & 2) ? " write" : " read", (ec & 4) ? " user" : " supervisor", (ec & 8) ? " RSVD" : "",
                  (ec & 16) ? " instruction-fetch" : "", (unsigned long long)a->gva);
        break;
    }
    case OUT_EPT_VIOLATION: {
        uint64_t q = f->qualification;
        sb_printf(sb,
                  "  EPT violation (exit reason 48) at EPT level %u while %s: qualification 0x%llx = access%s%s%s, "
                  "allowed%s%s%s%s, linear address valid, %s; guest-physical address 0x%llx\n",
                  f->level, f->stage ? "reading a guest paging structure" : "accessing the final gpa",
                  (unsigned long long)q, (q & 1) ? " read" : "", (q & 2) ? " write" : "", (q & 4) ? " fetch" : "",
                  (q & 8) ? " R" : "", (q & 16) ? " W" : "", (q & 32) ? " X" : "", (q & 56) ? "" : " nothing",
                  (q & BIT(8)) ? "final translation (bit 8 set)" : "guest paging-structure access (bit 8 clear)",
                  (unsigned long long)f->fault_gpa);
        break;
    }
    case OUT_EPT_MISCONFIG:
        sb_printf(sb, "  EPT misconfiguration (exit reason 49) at EPT level %u: %s; guest-physical address 0x%llx\n",
                  f->level, detail_names[f->detail], (unsigned long long)f->fault_gpa);
        break;
    case OUT_NPT_FAULT: {
        uint64_t e1 = f->exitinfo1;
        sb_printf(sb,
                  "  #NPF (exit code 0x400) at nested level %u: EXITINFO1 0x%llx =%s%s user%s%s, %s; EXITINFO2 (gpa) "
                  "0x%llx\n",
                  f->level, (unsigned long long)e1, (e1 & 1) ? " P" : " not-present", (e1 & 2) ? " write" : " read",
                  (e1 & 8) ? " RSVD" : "", (e1 & 16) ? " instruction-fetch" : "",
                  (e1 & BIT(32)) ? "final gpa (bit 32)" : "guest table walk (bit 33)", (unsigned long long)f->fault_gpa);
        break;
    }
    default:
        break;
    }
    (void)m;
}

void explain_access(strbuf *sb, const machine *m, const vm_access *a, const vm_result *r, uint32_t i)
{
    sb_printf(sb, "access %u: %s %s gva 0x%llx -> %s", i, a->user ? "user" : "supervisor", op_names[a->op],
              (unsigned long long)a->gva, outcome_names[r->outcome]);
    if (r->gpa_valid)
        sb_printf(sb, ", gpa 0x%llx", (unsigned long long)r->gpa);
    if (r->hpa_valid && m->nf)
        sb_printf(sb, ", hpa 0x%llx", (unsigned long long)r->hpa);
    sb_printf(sb, "\n  %u memory references (%u guest + %u %s), %u A/D writes\n", r->memory_refs, r->guest_refs,
              r->nested_refs, m->ops->shadow && m->nf ? "shadow and nested" : "nested", r->ad_writes);
    sb_printf(sb, "  %-3s %-3s %-8s %-6s %-2s %-5s %-18s %-18s %-4s %-18s %-18s %-3s %s\n", "#", "ref", "kind", "dim",
              "L", "stage", "gpa", "table", "idx", "entry_hpa", "entry", "set", "result  flags");
    for (uint32_t k = 0; k < r->nsteps; k++) {
        const vm_step *st = &r->steps[k];
        char ref[8] = "", gpa[24] = "-", stage[8], flags[192];
        if (st->ref)
            snprintf(ref, sizeof ref, "%u", st->ref);
        if (st->gpa_valid)
            snprintf(gpa, sizeof gpa, "0x%llx", (unsigned long long)st->gpa);
        /* nested steps say which guest level's entry they locate, or the final gpa */
        if (st->dim != DIM_NESTED)
            stage[0] = 0;
        else if (st->stage)
            snprintf(stage, sizeof stage, "G%u", st->stage);
        else
            snprintf(stage, sizeof stage, "final");
        step_flags(m, st, flags, sizeof flags, false);
        sb_printf(sb, "  %-3u %-3s %-8s %-6s %-2u %-5s %-18s 0x%-16llx %-4u 0x%-16llx 0x%-16llx %-3s %-11s %s\n", k + 1,
                  ref, kind_names[st->kind], dim_names[st->dim], st->level, stage, gpa, (unsigned long long)st->table,
                  st->index, (unsigned long long)st->entry_hpa, (unsigned long long)st->entry, ad_names[st->ad_set],
                  result_names[st->result], flags);
    }
    explain_fault(sb, m, a, r);
}

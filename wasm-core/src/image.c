/* The built machine as data: every non-zero 8-byte word of simulated memory, the CR3 of
 * each address space, the EPTP and EPTP list, the PAE PDPTE registers. Nothing is
 * translated. tests/bochs loads this image into an executing CPU (Bochs) and compares
 * its walks with the engine's (`vmsim image FILE`). */
#include "model.h"
#include "json.h"

#include <stdlib.h>

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

void image_json(strbuf *sb, const machine *m)
{
    const scenario *s = m->s;
    sb_printf(sb, "{\"format\":\"vmsim-image/1\",\"cr3s\":[");
    uint32_t spaces = s->address_spaces ? s->address_spaces : 1;
    for (uint32_t i = 0; i < spaces; i++)
        sb_printf(sb, "%s\"0x%llx\"", i ? "," : "", (unsigned long long)m->cr3s[i]);
    sb_printf(sb, "],\"nested_root\":\"0x%llx\",\"eptp\":", (unsigned long long)m->nested_root);
    if (m->nf == &nested_ept)
        sb_printf(sb, "\"0x%llx\"", (unsigned long long)m->eptp);
    else
        sb_puts(sb, "null");
    sb_puts(sb, ",\"eptp_list_hpa\":");
    if (m->eptp_list_hpa)
        sb_printf(sb, "\"0x%llx\"", (unsigned long long)m->eptp_list_hpa);
    else
        sb_puts(sb, "null");
    sb_puts(sb, ",\"pdptes\":");
    if (s->paging == PAGING_PAE) {
        sb_putc(sb, '[');
        for (int i = 0; i < 4; i++)
            sb_printf(sb, "%s\"0x%llx\"", i ? "," : "", (unsigned long long)m->pdpte[i]);
        sb_putc(sb, ']');
    } else {
        sb_puts(sb, "null");
    }
    /* frames in address order, so that the same machine prints the same bytes */
    uint64_t *pfns = malloc((m->mem.used + 1) * sizeof *pfns);
    uint32_t n = 0;
    for (uint32_t i = 0; pfns && i < m->mem.cap; i++)
        if (m->mem.slots[i].pfn_plus1)
            pfns[n++] = m->mem.slots[i].pfn_plus1 - 1;
    if (pfns)
        qsort(pfns, n, sizeof *pfns, cmp_u64);
    sb_puts(sb, ",\"words\":{");
    bool first = true;
    for (uint32_t k = 0; k < n; k++) {
        uint64_t base = pfns[k] << FRAME_SHIFT;
        for (uint32_t off = 0; off < FRAME_SIZE; off += 8) {
            uint64_t v = mem_read((mem *)&m->mem, base + off, 8);
            if (!v)
                continue;
            sb_printf(sb, "%s\"0x%llx\":\"0x%llx\"", first ? "" : ",", (unsigned long long)(base + off),
                      (unsigned long long)v);
            first = false;
        }
    }
    free(pfns);
    sb_puts(sb, "}}\n");
}

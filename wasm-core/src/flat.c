/* Flat nested page tables (swFNPT, after Ahn, Jin and Huh, ISCA 2012): one contiguous
 * array indexed by guest frame number, each 8-byte entry the host frame | valid bit.
 * One reference replaces a whole nested walk. An invalid entry exits to the VMM, which
 * finds the gpa in its memory slots, fills the entry and re-enters. */
#include "model.h"

bool flat_memslot(const scenario *s, uint64_t gpa, uint64_t *hpa)
{
    for (uint32_t i = 0; i < s->n_fmaps; i++) {
        const nested_map *f = &s->fmaps[i];
        uint64_t size = page_bytes(f->page);
        if (gpa >= f->gpa && gpa - f->gpa < size * f->pages) {
            *hpa = f->hpa + (gpa - f->gpa);
            return true;
        }
    }
    return false;
}

/* x GiB of guest RAM in 8 KiB frames needs x MiB of 8-byte entries (1/1024). */
uint64_t flat_table_bytes(const scenario *s)
{
    uint64_t page = s->paging == PAGING_SUNWAY ? 8192 : 4096;
    return s->flat_guest_ram / page * 8;
}

/* libFuzzer target: any byte string as a trace file (prefix, header, then the body as it
 * would come out of gzip) must be replayed or refused with a one-line error through both
 * passes, never a crash, leak or UB. The body is fed in pieces whose size the input picks.
 * Pass 1 with its pieces scanned ahead and joined (the CLI's threads) must give the same
 * report, or refuse it too, and so must pass 2 in chunks; a trace replayed, its pass 1
 * findings saved and taken by another replay in place of pass 1 (the page's "again"), the
 * same report again, one handle and in chunks. */
#include "vmsim_replay.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Pass 2 in chunks, as the CLI's threads: each chunk decoded with its own cursor, the last
 * first, then taken in order. */
static void chunked_pass2(vmsim_replay *r, const uint8_t *body)
{
    size_t n = vmsim_replay_chunks(r), at = 0;
    vmsim_replay_cursor **c = calloc(n + 1, sizeof *c);
    vmsim_replay_batch **b = calloc(n + 1, sizeof *b);
    size_t *start = calloc(n + 1, sizeof *start);
    for (size_t k = 0; k < n; k++) {
        start[k] = at;
        at += (size_t)vmsim_replay_chunk_bytes(r, k);
    }
    for (size_t i = 0; i < n; i++) {
        size_t k = i ? i - 1 : n - 1;
        const uint8_t *p = body + start[k], *end = p + (size_t)vmsim_replay_chunk_bytes(r, k);
        c[k] = vmsim_replay_cursor_new();
        b[k] = vmsim_replay_batch_new();
        vmsim_replay_cursor_at(r, c[k], k);
        vmsim_replay_decode_chunk(r, c[k], &p, end, b[k]);     /* a fuzzer's body: one batch at most */
        vmsim_replay_batch_runs(b[k]);
    }
    unsigned modes = vmsim_replay_modes_here(r);
    for (size_t k = 0; k < n && !vmsim_replay_cursor_end(r, c[k]); k++) {
        vmsim_replay_batch_sl1(r, b[k]);
        vmsim_replay_batch_group(b[k]);
        for (int m = 0; m < 6; m++)
            if (modes >> m & 1)
                vmsim_replay_run(r, m, b[k]);
    }
    for (size_t k = 0; k < n; k++) {
        vmsim_replay_cursor_free(c[k]);
        vmsim_replay_batch_free(b[k]);
    }
    free(c);
    free(b);
    free(start);
}

static vmsim_replay *replay(const uint8_t *data, size_t size, size_t piece, bool ahead, bool chunked, char **out,
                            const uint8_t *scan, size_t scan_n)
{
    static const char opts[] = "{\"modes\":[\"native\",\"ept\",\"shadow\",\"flat\"],\"start\":\"warm\"}";
    vmsim_replay *r = vmsim_replay_open(data, size, 0, opts, sizeof opts - 1);
    if (!r)
        return NULL;
    size_t off = (size_t)vmsim_replay_body_offset(r);
    vmsim_replay_ahead *a = ahead ? vmsim_replay_ahead_new() : NULL;
    if (chunked)
        vmsim_replay_chunked(r);
    if (scan && vmsim_replay_scan_load(r, scan, scan_n))
        __builtin_trap();   /* a replay's own findings, of this trace: taken */
    for (int pass = scan ? 2 : 1; pass <= 2 && !vmsim_replay_status(r); pass++) {
        if (pass == 2 && scan && !vmsim_replay_status(r) && vmsim_replay_scan_end(r))
            break;
        if (pass == 2 && chunked && vmsim_replay_chunks(r)) {
            chunked_pass2(r, data + off);
            break;
        }
        for (size_t at = off; at < size; at += piece) {
            size_t k = size - at < piece ? size - at : piece;
            int st;
            if (pass == 1 && a) {
                vmsim_replay_scan_ahead(a, data + at, k);
                st = vmsim_replay_scan_joined(r, data + at, k, a);
            } else {
                st = (pass == 1 ? vmsim_replay_scan : vmsim_replay_feed)(r, data + at, k);
            }
            if (st)
                break;
        }
        if (pass == 1 && !vmsim_replay_status(r))
            vmsim_replay_scan_end(r);
    }
    vmsim_replay_ahead_free(a);
    if (!vmsim_replay_status(r))
        vmsim_replay_finish(r, out);
    if (vmsim_replay_status(r) && strchr(vmsim_replay_error(r), '\n'))
        __builtin_trap();   /* errors are one line */
    return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t piece = size ? 1 + data[size - 1] % 64 : 1, big = size > 1 ? 64 + data[size - 2] * 4u : 64;
    char *out = NULL, *out2 = NULL, *out3 = NULL;
    vmsim_replay *r = replay(data, size, piece, false, false, &out, NULL, 0);
    if (!r)
        return 0;
    /* pieces long enough to be scanned ahead, and the same pieces scanned in order */
    vmsim_replay *r2 = replay(data, size, big, true, false, &out2, NULL, 0), *r3 = replay(data, size, big, false, false, &out3, NULL, 0);
    /* (which of two faults in one body is named may differ, as with pieces of other sizes) */
    if (!r2 || !r3 || vmsim_replay_status(r2) != vmsim_replay_status(r3) || !out2 != !out3 || (out2 && strcmp(out2, out3)))
        __builtin_trap();
    /* and pass 2 in chunks (the CLI's threads) */
    char *out4 = NULL;
    vmsim_replay *r4 = replay(data, size, big, true, true, &out4, NULL, 0);
    if (!r4 || vmsim_replay_status(r4) != vmsim_replay_status(r3) || !out4 != !out3 || (out4 && strcmp(out4, out3)))
        __builtin_trap();
    /* pass 1's findings of a whole replay, one handle's and (with their marks) in chunks,
     * taken by another replay: the same report */
    for (int chunked = 0; out3 && chunked < 2; chunked++) {
        vmsim_replay *from = chunked ? r4 : r3;
        size_t n = vmsim_replay_scan_save(from, NULL, 0);
        uint8_t *scan = n ? malloc(n) : NULL;
        if (!n || !scan || vmsim_replay_scan_save(from, scan, n) != n)
            __builtin_trap();
        char *again = NULL;
        vmsim_replay *r5 = replay(data, size, piece, false, chunked, &again, scan, n);
        if (!r5 || vmsim_replay_status(r5) || !again || strcmp(again, out3))
            __builtin_trap();
        vmsim_replay_free_text(again);
        vmsim_replay_close(r5);
        free(scan);
    }
    vmsim_replay_free_text(out4);
    vmsim_replay_close(r4);
    vmsim_replay_free_text(out);
    vmsim_replay_free_text(out2);
    vmsim_replay_free_text(out3);
    vmsim_replay_close(r);
    vmsim_replay_close(r2);
    vmsim_replay_close(r3);
    return 0;
}

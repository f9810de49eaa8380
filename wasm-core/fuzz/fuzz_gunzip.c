/* libFuzzer target: the page's gzip reader (src/gunzip.c) against zlib on any byte string,
 * fed in pieces whose size the input picks: never a crash, leak or UB; what zlib inflates
 * whole (one member, nothing after it) the reader inflates too, to the same bytes (its own
 * CRC-32 and length checks passed), handed out (vmsim_gunzip_out_to, as the page's lead
 * worker has them) in pieces of at most 256 KiB, the ring's slot. The reader may take a stream zlib refuses (an incomplete
 * Huffman code whose missing codes never come, a header CRC it does not check), never the
 * other way round. */
#include "vmsim_replay.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <zlib.h>

/* The output as the sink saw it: its CRC-32 (zlib's), its length, the largest piece. */
typedef struct seen {
    uLong crc;
    uint64_t total;
    size_t largest;
} seen;

static int sink(void *ctx, const uint8_t *p, size_t n)
{
    seen *s = ctx;
    s->crc = crc32(s->crc, p, (uInt)n);
    s->total += n;
    if (n > s->largest)
        s->largest = n;
    return 0;
}

static int zlib_total(const uint8_t *data, size_t size, uint64_t *total, uLong *crc)
{
    z_stream zs = {0};
    if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
        return 0;
    static uint8_t out[1 << 16];
    zs.next_in = (uint8_t *)data;
    zs.avail_in = (uInt)size;
    int rc;
    *total = 0;
    *crc = crc32(0, NULL, 0);
    do {
        zs.next_out = out;
        zs.avail_out = sizeof out;
        rc = inflate(&zs, Z_NO_FLUSH);
        *total += sizeof out - zs.avail_out;
        *crc = crc32(*crc, out, (uInt)(sizeof out - zs.avail_out));
        if (*total > (64u << 20))
            rc = Z_DATA_ERROR;          /* the reader has no such limit: not compared */
    } while (rc == Z_OK);
    int ok = rc == Z_STREAM_END && zs.avail_in == 0;
    inflateEnd(&zs);
    return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t piece = 1 + data[0] % 97;
    data++;
    size--;
    vmsim_gunzip *g = vmsim_gunzip_new(NULL, 1);
    if (!g)
        return 0;
    seen out = {.crc = crc32(0, NULL, 0)};
    if (vmsim_gunzip_out_to(g, sink, &out))
        __builtin_trap();
    int rc = 0;
    for (size_t at = 0; at < size && !rc; at += piece) {
        size_t k = size - at < piece ? size - at : piece;
        rc = vmsim_gunzip_push(g, data + at, k, at + k == size);
        if (vmsim_gunzip_total(g) > (64u << 20))
            break;
    }
    if (!size)
        rc = vmsim_gunzip_push(g, data, 0, 1);
    uint64_t zt;
    uLong zcrc;
    /* all of it handed out once the stream is done (before, some may still be held) */
    if (out.largest > (256u << 10) || out.total > (uint64_t)vmsim_gunzip_total(g) ||
        (vmsim_gunzip_done(g) && out.total != (uint64_t)vmsim_gunzip_total(g)))
        __builtin_trap();
    if (zlib_total(data, size, &zt, &zcrc) && (rc || !vmsim_gunzip_done(g) || out.total != zt || out.crc != zcrc))
        __builtin_trap();
    /* a sink is set before the first piece only */
    if (!vmsim_gunzip_out_to(g, sink, &out))
        __builtin_trap();
    vmsim_gunzip_free(g);
    return 0;
}

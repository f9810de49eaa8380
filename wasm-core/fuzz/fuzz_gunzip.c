/* libFuzzer target: the page's gzip reader (src/gunzip.c) against zlib on any byte string,
 * fed in pieces whose size the input picks: never a crash, leak or UB; what zlib inflates
 * whole (one member, nothing after it) the reader inflates too, to the same length (its own
 * CRC-32 and length checks passed). The reader may take a stream zlib refuses (an incomplete
 * Huffman code whose missing codes never come, a header CRC it does not check), never the
 * other way round. */
#include "vmsim_replay.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <zlib.h>

static int zlib_total(const uint8_t *data, size_t size, uint64_t *total)
{
    z_stream zs = {0};
    if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
        return 0;
    static uint8_t out[1 << 16];
    zs.next_in = (uint8_t *)data;
    zs.avail_in = (uInt)size;
    int rc;
    *total = 0;
    do {
        zs.next_out = out;
        zs.avail_out = sizeof out;
        rc = inflate(&zs, Z_NO_FLUSH);
        *total += sizeof out - zs.avail_out;
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
    if (zlib_total(data, size, &zt) && (rc || !vmsim_gunzip_done(g) || (uint64_t)vmsim_gunzip_total(g) != zt))
        __builtin_trap();
    vmsim_gunzip_free(g);
    return 0;
}

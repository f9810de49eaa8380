/* libFuzzer target: any byte string as a trace file (prefix, header, then the body as it
 * would come out of gzip) must be replayed or refused with a one-line error through both
 * passes, never a crash, leak or UB. The body is fed in pieces whose size the input picks. */
#include "vmsim_replay.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char opts[] = "{\"modes\":[\"native\",\"ept\",\"shadow\",\"flat\"],\"start\":\"warm\"}";
    vmsim_replay *r = vmsim_replay_open(data, size, 0, opts, sizeof opts - 1);
    if (!r)
        return 0;
    size_t off = (size_t)vmsim_replay_body_offset(r), piece = size ? 1 + data[size - 1] % 64 : 1;
    for (int pass = 1; pass <= 2 && !vmsim_replay_status(r); pass++) {
        for (size_t at = off; at < size; at += piece) {
            size_t k = size - at < piece ? size - at : piece;
            if ((pass == 1 ? vmsim_replay_scan : vmsim_replay_feed)(r, data + at, k))
                break;
        }
        if (pass == 1 && !vmsim_replay_status(r))
            vmsim_replay_scan_end(r);
    }
    char *out = NULL;
    if (!vmsim_replay_status(r))
        vmsim_replay_finish(r, &out);
    if (vmsim_replay_status(r) && strchr(vmsim_replay_error(r), '\n'))
        __builtin_trap();   /* errors are one line */
    vmsim_replay_free_text(out);
    vmsim_replay_close(r);
    return 0;
}

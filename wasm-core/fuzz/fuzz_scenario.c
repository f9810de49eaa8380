/* libFuzzer target: any byte string given to the scenario parser, the builder and the
 * walker must give a result or a one-line error, never a crash, leak or UB. */
#include "vmsim.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *out = NULL;
    int rc = vmsim_run((const char *)data, size, &out);
    if (rc != 0 && out && strchr(out, '\n'))
        __builtin_trap();   /* errors are one line */
    vmsim_free(out);
    return 0;
}

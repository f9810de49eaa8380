/* vmsim calibrate: each seed's experiment rerun in the model, against its published
 * figure (see calibrate.c and model.md 5c). */
#ifndef VMSIM_CALIBRATE_H
#define VMSIM_CALIBRATE_H

#include <stdbool.h>
#include <stddef.h>

struct strbuf;

/* json: the vmsim-calibrate/1 document; otherwise a table. Returns 0, or 1 with err set. */
int calibrate_run(bool json, struct strbuf *out, char *err, size_t errlen);

#endif

/* The memory-trace format that hw-lab/run trace writes and `vmsim replay` reads
 * (docs/replay.md, "The trace format"): a fixed 16-byte prefix, a JSON header, and a
 * gzip-compressed body of varint records. This is the decoder of the prefix, the header
 * and the (already decompressed) body; it is streaming: the body may arrive in pieces of
 * any size, and it keeps no more than one partial record between them. */
#ifndef VMSIM_TRACE_H
#define VMSIM_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TRACE_MAGIC "\x89VMTRC\r\n"    /* 8 bytes; \r\n catches a text-mode transfer */
#define TRACE_PREFIX_BYTES 16u
#define TRACE_VERSION 1u
#define TRACE_HEADER_MAX 65536u
#define TRACE_PAGE_SHIFT 12u
#define TRACE_MAX_ACCESSES 4000000000ull     /* what a header may announce */
#define TRACE_USER_PAGES (1ull << 35)         /* 47-bit user half of x86-64 4-level paging */

enum trace_kind { TRACE_LOAD, TRACE_STORE, TRACE_FETCH, TRACE_MODIFY };

typedef struct trace_access {
    uint64_t addr;
    uint8_t kind;           /* enum trace_kind */
} trace_access;

/* What the header says (the fields the replay uses; the rest is echoed by the page). */
typedef struct trace_header {
    char *program;          /* as recorded */
    char *command;          /* program and arguments, one line, for tables */
    char *args_json;        /* the args array as JSON text */
    uint64_t accesses;      /* announced */
    uint64_t pages;         /* distinct 4 KiB pages, announced */
    uint64_t counts[4];     /* per kind, announced */
    bool partial;
    char *partial_reason;   /* NULL unless partial */
    uint64_t body_bytes;    /* compressed body length, announced */
} trace_header;

/* Parses the prefix and the header from the first n bytes of a trace file (n may be more
 * than the prefix and header need; file_size is the whole file's length, or 0 when it is
 * not known). On success *body_offset is where the compressed body starts. Returns false
 * with err set (one line saying what is wrong and what to do). */
bool trace_open(const uint8_t *bytes, size_t n, uint64_t file_size, trace_header *h, uint64_t *body_offset,
                char *err, size_t errlen);
void trace_header_free(trace_header *h);

#define TRACE_CARRY 32u     /* longer than the longest record (21 bytes) */

typedef struct trace_decoder {
    uint64_t page[2];       /* last page of each stream: 0 data, 1 instruction fetches */
    uint32_t off[2];        /* last offset in that page */
    uint64_t count;         /* accesses decoded */
    uint64_t kinds[4];      /* trace_scan: accesses per kind */
    uint8_t seen[2];        /* trace_scan: kinds seen on each stream's current page */
    uint64_t consumed;      /* body bytes consumed (for error messages) */
    bool ended;             /* the end record was read */
    bool failed;
    uint8_t carry[TRACE_CARRY];
    uint32_t ncarry;
    char err[200];
} trace_decoder;

void trace_decoder_init(trace_decoder *d);
/* Decodes records from the next piece of the body into out (at most max accesses),
 * advancing *p; returns the number of accesses written. Stops early when out is full
 * (call again with the same *p) or the piece is used up. On corrupt data it returns what
 * it has decoded so far and sets d->failed and d->err. */
size_t trace_decode(trace_decoder *d, const uint8_t **p, const uint8_t *end, trace_access *out, size_t max);
/* A page touched, with the kinds of access it saw (bit 1 << trace_kind) since it was
 * last reported. */
typedef struct trace_page {
    uint64_t page;
    uint8_t kinds;
} trace_page;

/* The first pass's view of the same records: the pages each stream moves through, and
 * the accesses of each kind counted in kinds[] (trace_decode would write every access).
 * A page is reported when its stream leaves it, and the pages still current when the
 * end record is read; a page may be reported more than once. Same returns and errors as
 * trace_decode. */
size_t trace_scan(trace_decoder *d, const uint8_t **p, const uint8_t *end, trace_page *out, size_t max);
/* After the last piece: false with d->err when the body stopped before its end record. */
bool trace_decoder_finish(trace_decoder *d);

#endif

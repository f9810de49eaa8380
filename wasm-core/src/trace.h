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
/* Pass 1 on several threads: a piece of the body scanned before the pieces before it
 * were (trace_scan_ahead, on any thread: it reads the piece only), then joined to the scan
 * in order (trace_ahead_join). Without the state before it, it scans from the first record
 * boundary it can trust: a record may run in from the piece before, so it skips records
 * from the piece's first byte until TRACE_AHEAD_SYNC bytes in (the lengths of real records
 * soon line up with them: most are one byte). From there, `start`, each stream's page and
 * offset are counted from what they were at start. It stops before anything the scan must
 * see with its state (the end record, a damaged record, the last MAX_RECORD bytes) or when
 * the pages are full. The caller scans the bytes before start and after stop itself; the
 * join is good when the scan of the bytes before start ended on a record boundary. */
#define TRACE_AHEAD_SYNC 64u
#define TRACE_AHEAD_PAGES 2048u
#define TRACE_AHEAD_RECENT 4096u
#define TRACE_AHEAD_MARKS 64u
#define TRACE_AHEAD_HEAD 0x80u      /* a page entry: the stream's page at start (entry.page: the stream) */
#define TRACE_AHEAD_FETCH 0x40u     /* a page entry of the fetch stream */
typedef struct trace_ahead {
    size_t start, stop;             /* bytes of the piece; stop == start: nothing scanned ahead */
    uint64_t count, kinds[4];
    uint64_t page[2];               /* each stream's page at stop less its page at start (mod 2^64) */
    int32_t off[2], off_min[2], off_max[2]; /* its offset at stop less at start; the least and most in between */
    uint8_t head[2];                /* kinds seen on its page at start, until it left it */
    uint8_t seen[2];                /* once it left it: kinds seen on its page at stop */
    bool moved[2];
    size_t npages;                  /* pages left, in order (a page left twice with nothing new: once) */
    trace_page pages[TRACE_AHEAD_PAGES];
    /* the scan's: the pages left so far, by page and stream mod TRACE_AHEAD_RECENT (a
     * program goes back to the same few hundred pages all the time) */
    uint64_t recent[TRACE_AHEAD_RECENT];
    uint8_t recent_kinds[TRACE_AHEAD_RECENT];
    /* where the scan stood at record boundaries on its way, every 65,534 bytes or so (the
     * points where it adds up its counts), counted from start as at stop: where pass 2 may
     * start decoding (replay.md, "Pass 2 in chunks"). Not among the bytes another module
     * copies (vmsim_replay_ahead_bytes). */
    size_t nmarks;
    struct trace_ahead_mark {
        size_t at;
        uint64_t count, page[2];
        int32_t off[2];
    } marks[TRACE_AHEAD_MARKS];
} trace_ahead;

void trace_scan_ahead(trace_ahead *a, const uint8_t *piece, size_t n);
/* d: the scan at the piece's byte a->start, with no partial record carried. The state after
 * a->stop into *next and the pages left, in order, into out (room for TRACE_AHEAD_PAGES);
 * false when an offset in between leaves its page (the caller scans instead, for the error). */
bool trace_ahead_join(const trace_decoder *d, const trace_ahead *a, trace_decoder *next, trace_page *out, size_t *nout);

/* After the last piece: false with d->err when the body stopped before its end record. */
bool trace_decoder_finish(trace_decoder *d);

#endif

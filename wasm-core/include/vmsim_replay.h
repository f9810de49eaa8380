/* Replaying a recorded memory trace (hw-lab/run trace) through every mode of the engine:
 * a trace in, per-mode counters out (docs/replay.md). Streaming: the body is fed in pieces
 * of any size, twice (a first pass finds the pages the program touched, to build the
 * guest's tables; the second replays), and memory does not grow with the trace's length.
 * The caller decompresses the body (zlib in the CLI; in the page the engine's own reader).
 * The same entry points serve the native CLI and the WebAssembly module. */
#ifndef VMSIM_REPLAY_H
#define VMSIM_REPLAY_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#define VMSIM_REPLAY_OK 0
#define VMSIM_REPLAY_BAD_TRACE 2        /* the trace (or an option) is refused: see vmsim_replay_error */
#define VMSIM_REPLAY_NO_MEMORY 3

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vmsim_replay vmsim_replay;

/* Opens a replay. bytes: the first n bytes of the trace file (at least its 16-byte prefix
 * and header; 65,552 bytes or the whole file always suffice); file_size: the whole file's
 * length (0 = unknown); options: JSON text, {} for the defaults:
 *   {"modes": ["native","ept","npt","shadow","flat"], "preset": "x86-server"|"sunway-1621",
 *    "guest_pages": "4k"|"2m", "huge_min": 1..512, "host_pages": "2m"|"4k",
 *    "start": "cold"|"warm", "format": "json"|"table"|"csv",
 *    "cycles_per_access": 10, "cycles_per_ref": 40, "cycles_per_exit": 1700, "refill_trap": 20,
 *    "part": [modes]}
 * part: the modes this handle replays itself (default: all of modes; [] for a shared decoder
 * that replays none, vmsim_replay_share); the others' figures
 * come from other handles replaying the same trace with the same options (each with its
 * own part), through vmsim_replay_counts and vmsim_replay_merge, before finish.
 * Always returns a handle (NULL only when out of memory); check vmsim_replay_status. */
vmsim_replay *vmsim_replay_open(const uint8_t *bytes, size_t n, double file_size, const char *options, size_t options_len);
/* VMSIM_REPLAY_OK, or the first error; vmsim_replay_error says what was wrong. */
int vmsim_replay_status(const vmsim_replay *r);
const char *vmsim_replay_error(const vmsim_replay *r);
/* Where the compressed body starts in the file. */
double vmsim_replay_body_offset(const vmsim_replay *r);
/* Accesses the header announces, and accesses done in the current pass. */
double vmsim_replay_accesses(const vmsim_replay *r);
double vmsim_replay_done(const vmsim_replay *r);
/* Pass 1: feed the decompressed body, then end it (this checks the body and builds the
 * machines). Pass 2: feed the same body again, then finish: *out is the report in the
 * chosen format (free it with vmsim_replay_free_text). Each returns a status. */
int vmsim_replay_scan(vmsim_replay *r, const uint8_t *body, size_t n);
int vmsim_replay_scan_end(vmsim_replay *r);
int vmsim_replay_feed(vmsim_replay *r, const uint8_t *body, size_t n);
int vmsim_replay_finish(vmsim_replay *r, char **out);
void vmsim_replay_free_text(char *text);
void vmsim_replay_close(vmsim_replay *r);

/* A replay in parts (the page's workers): after pass 2, *out is the figures of this
 * handle's part as text (free it with vmsim_replay_free_text); merge takes another
 * handle's text into the one that writes the report. Each returns a status; merge
 * refuses counts of another trace or other options, and a mode twice. */
int vmsim_replay_counts(vmsim_replay *r, char **out);
int vmsim_replay_merge(vmsim_replay *r, const char *text, size_t len);

/* Pass 2 on threads (the CLI's --jobs; not in the WebAssembly module): the caller decodes
 * the inflated body into batches (vmsim_replay_decode appends up to the batch's room and
 * advances *p; a record split between pieces is carried over), seals each full or last
 * batch with the handle, in order (its runs found and the shared L1s run through it:
 * docs/replay.md, "One L1 for the modes"), and runs every mode of vmsim_replay_modes_here
 * over every batch in order.
 * Different modes may run at the same time on different threads; one mode's batches run
 * one after another. Then vmsim_replay_finish as usual. */
#define VMSIM_REPLAY_BATCH 32768u
typedef struct vmsim_replay_batch vmsim_replay_batch;
vmsim_replay_batch *vmsim_replay_batch_new(void);
void vmsim_replay_batch_free(void *b);
size_t vmsim_replay_batch_size(const vmsim_replay_batch *b);
void vmsim_replay_batch_clear(vmsim_replay_batch *b);
size_t vmsim_replay_decode(vmsim_replay *r, const uint8_t **p, const uint8_t *end, vmsim_replay_batch *b);
void vmsim_replay_batch_seal(vmsim_replay *r, vmsim_replay_batch *b);
unsigned vmsim_replay_modes_here(const vmsim_replay *r);
void vmsim_replay_run(vmsim_replay *r, int mode, const vmsim_replay_batch *b);
/* After the seal, before any mode runs the batch: its runs grouped by page once for every
 * mode (docs/replay.md, "Runs by page"), which the modes then take a group at a time.
 * The figures are the same bytes with or without. */
void vmsim_replay_batch_group(vmsim_replay_batch *b);
/* The seal in two: the runs (any thread), then the shared L1s (the batches in order). */
void vmsim_replay_batch_runs(vmsim_replay_batch *b);
void vmsim_replay_batch_sl1(vmsim_replay *r, vmsim_replay_batch *b);

/* Pass 2 in chunks (the CLI's --jobs: docs/replay.md, "Pass 2 in chunks"): chunked, asked
 * before pass 1's first piece, makes vmsim_replay_scan_joined note where its decoder stands
 * at a record boundary near each piece's start. After scan_end the body is that many
 * chunks, each of chunk_bytes inflated bytes holding chunk_accesses accesses, in order; any
 * thread may decode one (a cursor at its start, decode_chunk as vmsim_replay_decode, the
 * handle only read), and cursor_end, called for the chunks in order, refuses what decoding
 * it found wrong, or a chunk that did not end where the next one starts (the file changed
 * between the passes). chunks: 0 when not noted (then vmsim_replay_decode as before). */
int vmsim_replay_chunked(vmsim_replay *r);
size_t vmsim_replay_chunks(const vmsim_replay *r);
double vmsim_replay_chunk_bytes(const vmsim_replay *r, size_t k);
double vmsim_replay_chunk_accesses(const vmsim_replay *r, size_t k);
/* Pass 1's findings (the body's length and end, the pages and their kinds, the marks),
 * kept for another replay of the same file with any options: scan_save, once scan_end is
 * done, writes them to out (when cap is enough) and returns their bytes (0: none yet);
 * scan_load, on a handle opened on the same file before pass 1's first piece (and after
 * chunked, where asked), takes them in place of pass 1, and scan_end follows at once.
 * scan_load: 0 taken; -1 not (not this trace's, not whole, or no marks where chunked was
 * asked): the handle is as it was, and pass 1 runs as ever. Pass 2 finds a file changed
 * since as it does between the two passes. */
size_t vmsim_replay_scan_save(const vmsim_replay *r, uint8_t *out, size_t cap);
int vmsim_replay_scan_load(vmsim_replay *r, const uint8_t *in, size_t n);
typedef struct vmsim_replay_cursor vmsim_replay_cursor;
vmsim_replay_cursor *vmsim_replay_cursor_new(void);
void vmsim_replay_cursor_free(vmsim_replay_cursor *c);
void vmsim_replay_cursor_at(const vmsim_replay *r, vmsim_replay_cursor *c, size_t k);
size_t vmsim_replay_decode_chunk(const vmsim_replay *r, vmsim_replay_cursor *c, const uint8_t **p, const uint8_t *end,
                                 vmsim_replay_batch *b);
int vmsim_replay_cursor_end(vmsim_replay *r, const vmsim_replay_cursor *c);
/* Whether the cursor holds part of a record that the bytes after it complete. */
bool vmsim_replay_cursor_carry(const vmsim_replay_cursor *c);

/* Pass 1 on threads (the CLI's --jobs; the page's lead worker, for the worker that scans): a piece of the
 * inflated body may be scanned ahead on any thread, before the pieces before it are scanned
 * (scan_ahead reads the piece only, into `a`), then joined to the scan in order:
 * scan_joined(r, piece, n, a) in place of scan(r, piece, n): the same pages and counts,
 * and a refusal where the scan refuses (where the piece holds anything the join cannot
 * vouch for, it scans it; of two faults in a body, which is named may differ, as between
 * pieces of other sizes). */
typedef struct vmsim_replay_ahead vmsim_replay_ahead;
vmsim_replay_ahead *vmsim_replay_ahead_new(void);
void vmsim_replay_ahead_free(vmsim_replay_ahead *a);
void vmsim_replay_scan_ahead(vmsim_replay_ahead *a, const uint8_t *piece, size_t n);
int vmsim_replay_scan_joined(vmsim_replay *r, const uint8_t *piece, size_t n, const vmsim_replay_ahead *a);
/* The first bytes of *a that scan_joined reads, to copy into another module's ahead
 * (the same build's). */
size_t vmsim_replay_ahead_bytes(const vmsim_replay_ahead *a);

/* The page's shared decoder: one handle (the lead worker's) inflates and decodes each
 * pass once and hands it out in batches; the other workers' handles, opened on the same
 * trace with the same options and their own part, take every batch in order instead of
 * a body. share (before the first scan): from now on what scan and feed decode is also
 * handed to the sink, batch by batch (pass 1: the pages; pass 2: the accesses, and this
 * handle's own modes run on each after the sink returns); share_end after each pass's
 * last piece hands out the rest, marked last. take: the next batch into a handle that is
 * fed by batches; after a pass's last batch, scan_end (pass 1) or counts (pass 2) as
 * usual. What the sink gets and take reads is a span of bytes to copy whole from one
 * module's memory into another's: a head, then the pages (pass 1), or the runs, the shared
 * L1s and each access's offset in its page (pass 2), not the decoded accesses.
 * batch_bytes: the most one takes; batch_alloc: room for one, aligned, to copy into (freed
 * with batch_free); batch_info: pass << 1 | last, and 8 where it carries its segments. In the WebAssembly module
 * vmsim_replay_share hands each batch to Module.onReplayBatch(pointer, bytes), which
 * returns 0 once it has taken it. */
typedef int (*vmsim_replay_sink)(void *ctx, const void *batch, size_t bytes);
int vmsim_replay_share_to(vmsim_replay *r, vmsim_replay_sink sink, void *ctx);
/* Pass 2 on the shared decoder: asked before each batch goes out, whether the batch carries
 * its runs grouped by page (the segments vmsim_replay_batch_group builds), which the handles
 * that take it use instead of building them (where the batch has room for them). Natively
 * `ask` (NULL: never); in the WebAssembly module vmsim_replay_share asks
 * Module.onReplayGroup(), when there is one. */
typedef int (*vmsim_replay_ask)(void *ctx);
void vmsim_replay_share_group(vmsim_replay *r, vmsim_replay_ask ask, void *ctx);
int vmsim_replay_share(vmsim_replay *r);
int vmsim_replay_share_end(vmsim_replay *r);
int vmsim_replay_take(vmsim_replay *r, const void *batch, size_t bytes);
size_t vmsim_replay_batch_bytes(void);
void *vmsim_replay_batch_alloc(void);
int vmsim_replay_batch_info(const void *batch);

/* The page's way in: the gzip body inflated by the engine itself (src/gunzip.c), piece by
 * compressed piece, into vmsim_replay_scan (pass 1) or vmsim_replay_feed (pass 2). */
typedef struct vmsim_gunzip vmsim_gunzip;
vmsim_gunzip *vmsim_gunzip_new(vmsim_replay *r, int pass);
int vmsim_gunzip_push(vmsim_gunzip *g, const uint8_t *bytes, size_t n, int final);
int vmsim_gunzip_status(const vmsim_gunzip *g);
const char *vmsim_gunzip_error(const vmsim_gunzip *g);
int vmsim_gunzip_done(const vmsim_gunzip *g);
double vmsim_gunzip_total(const vmsim_gunzip *g);
void vmsim_gunzip_free(vmsim_gunzip *g);
/* The page's shared pass 1: out_to (before the first push) hands each inflated piece (at
 * most 256 KiB, valid during the call) to sink, which returns 0 once it has taken it,
 * instead of the replay; the stream is still checked (CRC-32 and length, pass 1). In the
 * WebAssembly module vmsim_gunzip_out hands them to Module.onInflated(pointer, bytes). */
typedef int (*vmsim_gunzip_sink)(void *ctx, const uint8_t *p, size_t n);
int vmsim_gunzip_out_to(vmsim_gunzip *g, vmsim_gunzip_sink sink, void *ctx);
int vmsim_gunzip_out(vmsim_gunzip *g);

#ifdef __cplusplus
}
#endif

#endif

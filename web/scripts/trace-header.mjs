// A trace's header for the benchmark scripts, read and checked by the page's own reader
// (web/src/trace/format.mjs): a file that is not a whole vmemlab trace stops the script at
// once with the reader's words, before any minute of benchmarking.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { HEADER_MAX, PREFIX_BYTES, TraceFormatError, readHeader } from '../src/trace/format.mjs';

/** The header of the trace at `path` (exits with status 2 and a message if it is not a trace). */
export function traceHeader(path) {
  const fd = openSync(path, 'r');
  try {
    const bytes = Buffer.alloc(PREFIX_BYTES + HEADER_MAX);
    const n = readSync(fd, bytes, 0, bytes.length, 0);
    return readHeader(bytes.subarray(0, n), fstatSync(fd).size).header;
  } catch (e) {
    if (!(e instanceof TraceFormatError)) throw e;
    console.error(`${path}: ${e.message}`);
    process.exit(2);
  } finally {
    closeSync(fd);
  }
}

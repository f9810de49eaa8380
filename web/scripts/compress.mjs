// Writes brotli (.br, quality 11) and gzip (.gz, level 9) copies next to every text and
// wasm file under the given folders, for the class server to send as they are
// (@fastify/static preCompressed): the bytes a learner downloads are compressed once at
// build time, at the best level, instead of on every request.
//   node web/scripts/compress.mjs web/dist public/guest
// Files that are already compressed (zstd, gzip, woff/woff2, images, a bzImage kernel) are
// left alone, and so
// is any file whose compressed copy would save less than 10 %. Copies newer than their file
// are kept, so a second run does nothing. Prints one line per folder.
import { readdirSync, readFileSync, statSync, writeFileSync, unlinkSync, existsSync } from 'node:fs';
import { join, extname } from 'node:path';
import { brotliCompressSync, gzipSync, constants } from 'node:zlib';

const TEXT = new Set(['.html', '.js', '.mjs', '.css', '.json', '.wasm', '.svg', '.ttf', '.otf', '.txt', '.md', '.map', '.xml', '.bin', '.csv']);
const MIN_BYTES = 512;     // below this a compressed copy is not worth a second file
const MIN_SAVING = 0.10;

function* files(dir) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* files(p);
    else if (e.isFile()) yield p;
  }
}

export function compressTree(dir) {
  let n = 0, raw = 0, br = 0;
  for (const f of files(dir)) {
    if (!TEXT.has(extname(f))) continue;
    const st = statSync(f);
    if (st.size < MIN_BYTES) continue;
    const fresh = (c) => existsSync(c) && statSync(c).mtimeMs >= st.mtimeMs;
    if (fresh(f + '.br') && fresh(f + '.gz')) { n++; raw += st.size; br += statSync(f + '.br').size; continue; }
    const data = readFileSync(f);
    const b = brotliCompressSync(data, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: data.length } });
    if (b.length > data.length * (1 - MIN_SAVING)) {
      for (const c of [f + '.br', f + '.gz']) if (existsSync(c)) unlinkSync(c);
      continue;
    }
    writeFileSync(f + '.br', b);
    writeFileSync(f + '.gz', gzipSync(data, { level: 9 }));
    n++; raw += data.length; br += b.length;
  }
  return { files: n, raw, br };
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop())) {
  const dirs = process.argv.slice(2);
  if (!dirs.length) { console.error('usage: node web/scripts/compress.mjs DIR...'); process.exit(2); }
  for (const d of dirs) {
    if (!existsSync(d)) { console.error(`compress: ${d} does not exist (build it first)`); process.exit(2); }
    const r = compressTree(d);
    console.log(`compress: ${d}: ${r.files} files, ${(r.raw / 1024).toFixed(0)} KiB -> ${(r.br / 1024).toFixed(0)} KiB brotli`);
  }
}

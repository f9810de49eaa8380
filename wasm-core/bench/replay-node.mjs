// The WebAssembly engine's trace replay under Node, for `make bench` (scripts/replay_bench.py):
//   [REPEAT=n] node bench/replay-node.mjs TRACE [table|json|csv] [MODES]
// prints the same report as `vmsim replay TRACE --format F`, then on stderr one JSON line:
// the replay's seconds (both passes, gunzip included), each run's with REPEAT (the first
// includes compiling the module's code: V8 compiles WebAssembly lazily), and the
// WebAssembly memory's size. The same module the page runs (build/wasm/vmsim.mjs).
import { readFileSync, openSync, readSync, closeSync, fstatSync, createReadStream } from 'node:fs';
import { createGunzip } from 'node:zlib';

const { default: createVmsimModule } = await import(new URL('../build/wasm/vmsim.mjs', import.meta.url));
const mod = await createVmsimModule({ wasmBinary: readFileSync(new URL('../build/wasm/vmsim.wasm', import.meta.url)) });
const [file, format = 'table', modes] = process.argv.slice(2);

function copyIn(bytes) {
  const p = mod._malloc(bytes.length);
  mod.HEAPU8.set(bytes, p);
  return p;
}

async function replayOnce() {
  const t0 = performance.now();
  const fd = openSync(file, 'r');
  const size = fstatSync(fd).size;
  const head = Buffer.alloc(Math.min(size, 16 + 65536));
  readSync(fd, head, 0, head.length, 0);
  closeSync(fd);
  const opts = Buffer.from(JSON.stringify(modes ? { format, modes: modes.split(',') } : { format }));
  const hp = copyIn(head), op = copyIn(opts);
  const r = mod._vmsim_replay_open(hp, head.length, size, op, opts.length);
  mod._free(hp);
  mod._free(op);
  const fail = () => {
    process.stderr.write(`vmsim replay: ${file}: ${mod.UTF8ToString(mod._vmsim_replay_error(r))}\n`);
    process.exit(2);
  };
  if (mod._vmsim_replay_status(r)) fail();
  const offset = mod._vmsim_replay_body_offset(r);
  let buf = 0, cap = 0;
  const pass = async (fn) => {
    const z = createReadStream(file, { start: offset, highWaterMark: 256 << 10 }).pipe(createGunzip({ chunkSize: 1 << 20 }));
    for await (const chunk of z) {
      if (chunk.length > cap) { if (buf) mod._free(buf); cap = chunk.length; buf = mod._malloc(cap); }
      mod.HEAPU8.set(chunk, buf);
      if (fn(r, buf, chunk.length)) fail();
    }
  };
  await pass(mod._vmsim_replay_scan);
  if (mod._vmsim_replay_scan_end(r)) fail();
  await pass(mod._vmsim_replay_feed);
  const out = mod._malloc(4);
  if (mod._vmsim_replay_finish(r, out)) fail();
  const tp = mod.getValue(out, 'i32');
  const text = mod.UTF8ToString(tp);
  mod._vmsim_replay_free_text(tp);
  mod._free(out);
  if (buf) mod._free(buf);
  mod._vmsim_replay_close(r);
  return { text, seconds: (performance.now() - t0) / 1000 };
}

const runs = [];
let text = '';
for (let i = 0; i < Math.max(1, Number(process.env.REPEAT ?? 1)); i++) {
  const one = await replayOnce();
  text = one.text;
  runs.push(one.seconds);
}
process.stdout.write(text);
process.stderr.write(JSON.stringify({ seconds: runs.at(-1), runs, wasm_memory_bytes: mod.HEAPU8.length }) + '\n');

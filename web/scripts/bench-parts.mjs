// The replay engine's parts in Chromium's own WebAssembly engine, one thread: what a change
// to wasm-core does to the code the page runs, measured closer than the page can (the
// page's two workers and this machine's speed move a billion-access replay by a third from
// one minute to the next; the minimum of a few runs of each part moves much less). Node's
// V8 is older than Chromium's and compiles the module differently, so Node is not used.
//
// The module (wasm-core/build/wasm/vmsim.mjs, the one the page bundles) is loaded into a
// blank page served from loopback with the trace; the body is streamed through the
// browser's DecompressionStream and only the time inside the module's calls is counted.
// Parts, each the minimum over the rounds:
//   scan     pass 1 (the page's scanning worker does this)
//   decode   pass 2 with no mode and each mode's L1 its own: decoding and finding the runs
//   lead     pass 2 with no mode: decoding, the runs and the shared L1s (the page's lead)
//   all      pass 2 with the five modes, one after another (the page's one-worker replay)
// and from them the modes (all - lead) and the shared L1s (lead - decode); then the same
// trace through `vmsim replay --jobs 1` for the ratio of the module's one thread to native.
// Prints figures; speed is never asserted.
//   [PARTS_ROUNDS=3] node web/scripts/bench-parts.mjs [TRACE]
import http from 'node:http';
import { createReadStream, existsSync, statSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { join, resolve } from 'node:path';
import { launchChromium } from './chromium.mjs';
import { traceHeader } from './trace-header.mjs';

const root = fileURLToPath(new URL('../..', import.meta.url));
const trace = resolve(process.argv[2] ?? join(root, 'hw-lab', 'build', 'traces', 'bench-python-10m.vmtrace'));
const wasmDir = join(root, 'wasm-core', 'build', 'wasm');
const vmsim = join(root, 'wasm-core', 'build', 'vmsim');
for (const [f, how] of [[trace, 'record it with make -C hw-lab bench-traces'], [join(wasmDir, 'vmsim.wasm'), 'build it with make -C wasm-core wasm'], [vmsim, 'build it with make -C wasm-core native']]) {
  if (!existsSync(f)) {
    console.error(`${f} is missing: ${how}`);
    process.exit(2);
  }
}
const rounds = Math.max(1, Number(process.env.PARTS_ROUNDS ?? 3));
const { accesses } = traceHeader(trace);

// only these three files, from loopback
const files = { '/vmsim.mjs': join(wasmDir, 'vmsim.mjs'), '/vmsim.wasm': join(wasmDir, 'vmsim.wasm'), '/trace': trace };
const types = { '/vmsim.mjs': 'text/javascript', '/vmsim.wasm': 'application/wasm', '/trace': 'application/octet-stream' };
const server = http.createServer((req, res) => {
  const path = new URL(req.url, 'http://127.0.0.1').pathname;
  if (path === '/') {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><title>vmemlab: the engine\'s parts</title>');
  } else if (files[path]) {
    res.writeHead(200, { 'content-type': types[path], 'content-length': statSync(files[path]).size });
    createReadStream(files[path]).pipe(res);
  } else {
    res.writeHead(404);
    res.end();
  }
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${server.address().port}`;

const browser = await launchChromium();
const parts = ['scan', 'decode', 'lead', 'all'];
const best = {};
try {
  const page = await browser.newPage();
  await page.goto(base + '/');
  for (let round = 0; round < rounds; round++) {
    for (const part of parts.slice(1)) {
      const got = await page.evaluate(async ({ part, size }) => {
        const { default: create } = await import('/vmsim.mjs');
        const mod = await create({ wasmBinary: await (await fetch('/vmsim.wasm')).arrayBuffer() });
        const file = await (await fetch('/trace')).blob();
        const copyIn = (b) => { const p = mod._malloc(b.length); mod.HEAPU8.set(b, p); return p; };
        const head = new Uint8Array(await file.slice(0, 16 + 65536).arrayBuffer());
        const options = { format: 'json', ...(part === 'all' ? {} : { part: [] }), ...(part === 'decode' ? { l1: 'per-mode' } : {}) };
        const opts = new TextEncoder().encode(JSON.stringify(options));
        const hp = copyIn(head), op = copyIn(opts);
        const r = mod._vmsim_replay_open(hp, head.length, size, op, opts.length);
        const fail = () => { throw new Error(mod.UTF8ToString(mod._vmsim_replay_error(r))); };
        if (mod._vmsim_replay_status(r)) fail();
        const offset = mod._vmsim_replay_body_offset(r);
        const piece = 1 << 20, buf = mod._malloc(piece);
        const pass = async (fn) => {
          let ms = 0;
          const reader = file.slice(offset).stream().pipeThrough(new DecompressionStream('gzip')).getReader();
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            for (let at = 0; at < value.length; at += piece) {
              const bytes = value.subarray(at, Math.min(value.length, at + piece));
              mod.HEAPU8.set(bytes, buf);
              const t0 = performance.now();
              if (fn(r, buf, bytes.length)) fail();
              ms += performance.now() - t0;
            }
          }
          return ms / 1000;
        };
        const scan = await pass(mod._vmsim_replay_scan);
        if (mod._vmsim_replay_scan_end(r)) fail();
        const feed = await pass(mod._vmsim_replay_feed);
        mod._vmsim_replay_close(r);
        return { scan, feed };
      }, { part, size: statSync(trace).size });
      best.scan = Math.min(best.scan ?? Infinity, got.scan);
      best[part] = Math.min(best[part] ?? Infinity, got.feed);
    }
  }
} finally {
  await browser.close();
  server.close();
}

let native = Infinity;
for (let round = 0; round < rounds; round++) {
  const t0 = performance.now();
  const n = spawnSync(vmsim, ['replay', trace, '--quiet', '--format', 'json', '--jobs', '1'], { encoding: 'utf8', maxBuffer: 1 << 24 });
  if (n.status !== 0) { console.error(n.stderr); process.exit(1); }
  native = Math.min(native, (performance.now() - t0) / 1000);
}

const ns = (s) => `${((s * 1e9) / accesses).toFixed(2)} ns an access`;
console.log(`trace: ${trace}: ${accesses.toLocaleString('en')} accesses; the module in Chromium, one thread, the minimum of ${rounds} rounds (seconds inside the module's calls)`);
console.log(`pass 1, the scan: ${best.scan.toFixed(3)} s (${ns(best.scan)})`);
console.log(`pass 2, decoding and the runs: ${best.decode.toFixed(3)} s (${ns(best.decode)})`);
console.log(`pass 2, the shared L1s: ${(best.lead - best.decode).toFixed(3)} s (lead - decoding)`);
console.log(`pass 2, the lead's part (decoding, runs, shared L1s): ${best.lead.toFixed(3)} s (${ns(best.lead)})`);
console.log(`pass 2, the five modes: ${(best.all - best.lead).toFixed(3)} s (${ns(best.all - best.lead)}; all - lead)`);
console.log(`both passes, five modes: ${(best.scan + best.all).toFixed(3)} s; native vmsim replay --jobs 1 (whole process, inflating included): ${native.toFixed(3)} s; module / native ${((best.scan + best.all) / native).toFixed(2)}x (the module's figure leaves out inflating, which the browser does)`);

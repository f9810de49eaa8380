// Boots the guest once under Node (v86, headless) and saves the machine state at the
// shell prompt: public/guest/state.bin.zst. Restoring it starts the guest in well under a
// second. Rebuilt only when its inputs change (see public/Makefile). The machine
// (cmdline, memory) is public/guest.json, shared with the page.
import { readFileSync, writeFileSync, renameSync, mkdirSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { V86 } from 'v86';

const here = path.dirname(fileURLToPath(import.meta.url));
const g = path.join(here, process.argv[2] ?? 'guest'); // guest or guest/pae
const root = path.dirname(here);
const guest = JSON.parse(readFileSync(path.join(here, 'guest.json'), 'utf8'));
const buf = (f) => { const b = readFileSync(f); return b.buffer.slice(b.byteOffset, b.byteOffset + b.length); };

const t0 = Date.now();
const emu = new V86({
  wasm_path: path.join(root, 'node_modules/v86/build/v86.wasm'),
  bios: { buffer: buf(path.join(g, 'bios.bin')) },
  bzimage: { buffer: buf(path.join(g, 'vmlinuz')) },
  initrd: { buffer: buf(path.join(g, 'initramfs.cpio.gz')) },
  cmdline: guest.cmdline,
  memory_size: guest.memory_size,
  vga_memory_size: guest.vga_memory_size,
  autostart: true,
  disable_keyboard: true, disable_mouse: true, disable_speaker: true,
});
let out = '';
const done = new Promise((resolve, reject) => {
  const t = setTimeout(() => reject(new Error('boot timed out; output:\n' + out.slice(-2000))), 120_000);
  emu.add_listener('serial0-output-byte', (b) => {
    out += String.fromCharCode(b);
    if (out.includes(guest.prompt)) { clearTimeout(t); resolve(); }
  });
});
await done;
// let the shell settle (it answers ESC[6n) then stop between slices
await new Promise((r) => setTimeout(r, 500));
await emu.stop();
const state = new Uint8Array(await emu.save_state());
// the raw state goes to the build cache (never served), the compressed one replaces the old atomically
const tmpDir = path.join(root, '.cache', 'guest-build');
mkdirSync(tmpDir, { recursive: true });
const raw = path.join(tmpDir, path.basename(g) + '-state.bin');
writeFileSync(raw, state);
const dest = path.join(g, 'state.bin.zst');
execFileSync('zstd', ['-q', '-f', '-19', '--rm', raw, '-o', dest + '.tmp']);
renameSync(dest + '.tmp', dest);
console.log(`state.bin.zst: booted to the prompt in ${((Date.now() - t0) / 1000).toFixed(1)} s, state ${(state.length / 1048576).toFixed(1)} MiB raw`);
await emu.destroy();
process.exit(0);

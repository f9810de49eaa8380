// make bench: the live guest, headless under Node. Restore-from-state to a prompt, cold boot
// to a prompt, and the assets' transfer size.
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { V86 } from 'v86';

const here = path.dirname(fileURLToPath(import.meta.url));
const g = path.join(here, 'guest');
const ab = (f) => { const b = readFileSync(path.join(g, f)); return b.buffer.slice(b.byteOffset, b.byteOffset + b.length); };
const CMDLINE = 'console=ttyS0 nokaslr tsc=reliable mitigations=off random.trust_cpu=on cryptomgr.notests noisapnp quiet rdinit=/init';

async function toPrompt(cold) {
  const t0 = performance.now();
  const emu = new V86({
    wasm_path: path.join(here, '..', 'node_modules/v86/build/v86.wasm'),
    bios: { buffer: ab('bios.bin') }, bzimage: { buffer: ab('vmlinuz') }, initrd: { buffer: ab('initramfs.cpio.gz') },
    ...(cold ? {} : { initial_state: { buffer: ab('state.bin.zst') } }),
    cmdline: CMDLINE, memory_size: 96 << 20, vga_memory_size: 2 << 20, autostart: true,
    disable_keyboard: true, disable_mouse: true, disable_speaker: true,
  });
  let out = '';
  await new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('no prompt')), 120_000);
    emu.add_listener('serial0-output-byte', (b) => { out += String.fromCharCode(b); if (out.includes('vmemlab# ')) { clearTimeout(t); resolve(); } });
    if (!cold) emu.add_listener('emulator-ready', () => setTimeout(() => emu.serial0_send('\n'), 0));
  });
  const ms = performance.now() - t0;
  await emu.destroy();
  return ms;
}
const size = (f) => statSync(path.join(g, f)).size;
const restore = await toPrompt(false);
const cold = await toPrompt(true);
const restoreAssets = size('state.bin.zst') + size('bios.bin') + statSync(path.join(here, '..', 'node_modules/v86/build/v86.wasm')).size;
console.log(`live guest: restore to prompt ${(restore / 1000).toFixed(2)} s (aim < 1 s), cold boot to prompt ${(cold / 1000).toFixed(1)} s (aim < 15 s)`);
console.log(`live guest assets: state ${(size('state.bin.zst') / 1e6).toFixed(1)} MB, kernel ${(size('vmlinuz') / 1e6).toFixed(1)} MB, initramfs ${(size('initramfs.cpio.gz') / 1e6).toFixed(1)} MB, bios ${(size('bios.bin') / 1e3).toFixed(0)} kB; restore path transfers ${(restoreAssets / 1e6).toFixed(1)} MB`);
process.exit(0);

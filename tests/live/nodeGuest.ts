/* Starts the built guest under Node, headless: restored from public/guest/state.bin.zst, or
 * cold-booted from the kernel and initramfs. Used by the live tests and `make bench`. */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { V86 } from 'v86';
import { CMDLINE, MEMORY_SIZE, SerialConsole, type V86Emulator } from '../../web/src/live/guestDriver';

export const root = join(__dirname, '..', '..');
export const guestDir = join(root, 'public', 'guest');
const FILES = ['bios.bin', 'vmlinuz', 'initramfs.cpio.gz', 'state.bin.zst'];
export const haveGuest = FILES.every((f) => existsSync(join(guestDir, f)));
export const haveGuestPae = FILES.every((f) => existsSync(join(root, 'public', 'guest/pae', f)));

let dir = guestDir;
const ab = (f: string) => { const b = readFileSync(join(dir, f)); return b.buffer.slice(b.byteOffset, b.byteOffset + b.length); };

export async function startGuest(opts: { cold?: boolean; pae?: boolean } = {}): Promise<{ emu: V86Emulator; serial: SerialConsole; ms: number }> {
  const t0 = performance.now();
  dir = opts.pae ? join(root, 'public', 'guest/pae') : guestDir;
  const emu = new (V86 as any)({
    wasm_path: join(root, 'node_modules/v86/build/v86.wasm'),
    bios: { buffer: ab('bios.bin') },
    bzimage: { buffer: ab('vmlinuz') },
    initrd: { buffer: ab('initramfs.cpio.gz') },
    ...(opts.cold ? {} : { initial_state: { buffer: ab('state.bin.zst') } }),
    cmdline: CMDLINE,
    memory_size: MEMORY_SIZE,
    vga_memory_size: 2 * 1024 * 1024,
    autostart: true,
    disable_keyboard: true, disable_mouse: true, disable_speaker: true,
  }) as V86Emulator;
  const serial = new SerialConsole(emu);
  await new Promise<void>((r) => emu.add_listener('emulator-ready', () => r()));
  if (opts.cold) await serial.waitFor((s) => s.includes('vmemlab# '), 120_000);
  else await serial.prompt(10_000);
  return { emu, serial, ms: performance.now() - t0 };
}

/* Drives the v86 guest over its serial console: boot or restore, wait for the shell
 * prompt, run a command and read its output. Shared by the page, the Node tests and the
 * build's state maker: the machine (cmdline, memory) is public/guest.json for all of them.
 * v86 is pinned to an exact version because the lab reads its internal fields:
 * emulator.v86.cpu.cr (Int32Array: CR0..CR4), cpu.mem8, cpu.translate_address_system_read. */

import guest from '../../../public/guest.json';

export const CMDLINE = guest.cmdline;
export const MEMORY_SIZE = guest.memory_size;
export const VGA_MEMORY_SIZE = guest.vga_memory_size;
export const PROMPT = guest.prompt;
export const END_MARK = '__END__';

// The emulator's own object: only the fields the lab uses, typed loosely on purpose.
export interface V86Cpu {
  cr: Int32Array;
  mem8: Uint8Array;
  translate_address_system_read(va: number): number;
}
export interface V86Emulator {
  v86: { cpu: V86Cpu };
  add_listener(ev: string, f: (x: any) => void): void;
  remove_listener(ev: string, f: (x: any) => void): void;
  serial0_send(s: string): void;
  save_state(): Promise<ArrayBuffer>;
  restore_state(s: ArrayBuffer): Promise<void>;
  run(): Promise<void> | void;
  stop(): Promise<void> | void;
  destroy(): Promise<void>;
  is_running(): boolean;
}

/** Strips terminal control sequences (busybox ash asks ESC[6n after each prompt). */
export function stripAnsi(s: string): string {
  // eslint-disable-next-line no-control-regex
  return s.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').replace(/\r/g, '');
}

/** The console did not say what was awaited in time; `last` is its last output (the page
 * shows the message translated, from these fields). */
export class SerialTimeout extends Error {
  constructor(readonly ms: number, readonly last: string) {
    super(`serial: timed out after ${ms} ms; last output: ${JSON.stringify(last)}`);
    this.name = 'SerialTimeout';
  }
}

export class SerialConsole {
  private buf = '';
  private waiters: { test: (b: string) => boolean; resolve: () => void }[] = [];
  readonly listeners = new Set<(chunk: string) => void>();
  constructor(private emu: V86Emulator) {
    emu.add_listener('serial0-output-byte', (byte: number) => {
      const ch = String.fromCharCode(byte);
      this.buf += ch;
      if (this.buf.length > 1 << 20) this.buf = this.buf.slice(-(1 << 19));
      for (const l of this.listeners) l(ch);
      this.waiters = this.waiters.filter((w) => (w.test(this.buf) ? (w.resolve(), false) : true));
    });
  }
  get text(): string { return this.buf; }
  send(s: string): void { this.emu.serial0_send(s); }
  /** Resolves when `pred(output since `from`)` holds, rejects after `ms`. */
  waitFor(pred: (s: string) => boolean, ms: number, from = 0): Promise<string> {
    return new Promise((resolve, reject) => {
      const test = (b: string) => pred(stripAnsi(b.slice(from)));
      if (test(this.buf)) return resolve(stripAnsi(this.buf.slice(from)));
      const t = setTimeout(() => { this.waiters = this.waiters.filter((w) => w.test !== test); reject(new SerialTimeout(ms, stripAnsi(this.buf.slice(-300)))); }, ms);
      this.waiters.push({ test, resolve: () => { clearTimeout(t); resolve(stripAnsi(this.buf.slice(from))); } });
    });
  }
  /** Sends a newline and waits for a fresh prompt. */
  async prompt(ms = 20_000): Promise<void> {
    const from = this.buf.length;
    this.send('\n');
    await this.waitFor((s) => s.includes(PROMPT), ms, from);
  }
  /** Runs a shell command and returns its output (the echo of the command line removed). */
  async run(cmd: string, ms = 20_000): Promise<string> {
    const from = this.buf.length;
    this.send(`${cmd}; echo __E''ND__\n`);
    const out = await this.waitFor((s) => s.includes(`\n${END_MARK}`), ms, from);
    const body = out.slice(0, out.indexOf(`\n${END_MARK}`));
    const nl = body.indexOf('\n');
    return nl < 0 ? '' : body.slice(nl + 1);
  }
  /** Output from `from` on, after a line matching `re` shows up. */
  async waitLine(re: RegExp, ms: number, from = 0): Promise<RegExpMatchArray> {
    const s = await this.waitFor((t) => re.test(t), ms, from);
    return s.match(re)!;
  }
}

/** Control registers and the paging mode, read between execution slices. */
export interface CpuRegs { cr0: number; cr3: number; cr4: number; paging: 'off' | '32bit' | 'pae' }
export function readRegs(cpu: V86Cpu): CpuRegs {
  const cr0 = cpu.cr[0] >>> 0, cr3 = cpu.cr[3] >>> 0, cr4 = cpu.cr[4] >>> 0;
  const paging = !(cr0 & 0x80000000) ? 'off' : cr4 & 0x20 ? 'pae' : '32bit';
  return { cr0, cr3, cr4, paging };
}

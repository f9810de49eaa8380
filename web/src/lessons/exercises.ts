/* Exercises in the OSTEP style: generated from a seed (the seed goes in the URL, so a
 * link reproduces the exercise) and checked by running the engine on the generated
 * scenario. No answer is stored anywhere: the engine computes it when checking. */
import type { Scenario, Result, Vmsim } from '../../../wasm-core/js/vmsim';
import { englishFor, type T } from '../i18n';

/** A sentence to say, as an i18next key (namespace `exercises`) with its values; a value
 * may itself be a Msg (a phrase said in the same language) or a list of them (said one
 * after the other, numbered, with the language's separator). */
export interface Msg { key: string; values?: Record<string, string | number | Msg | Msg[]> }
const msg = (key: string, values?: Msg['values']): Msg => ({ key, values });

/** The sentence in the language of `t` (a `t` for the exercises namespace; English by default). */
export function say(m: Msg, t: T = englishFor('exercises')): string {
  const values: Record<string, string | number> = {};
  for (const [k, v] of Object.entries(m.values ?? {})) {
    values[k] = Array.isArray(v) ? v.map((x, i) => t('item', { n: i + 1, what: say(x, t) })).join(t('sep'))
      : typeof v === 'object' ? say(v, t) : v;
  }
  return t(m.key, values);
}

export type ExerciseKind = 'compute-hpa' | 'count-refs' | 'predict-exit' | 'predict-bits' | 'flat-table-size' | 'which-wins'
  | 'shadow-exits' | 'flat-walk' | 'vmfunc-switch' | 'cache-hits' | 'agile-walk';
export const EXERCISE_KINDS: ExerciseKind[] = ['compute-hpa', 'count-refs', 'predict-exit', 'predict-bits', 'flat-table-size', 'which-wins',
  'shadow-exits', 'flat-walk', 'vmfunc-switch', 'cache-hits', 'agile-walk'];

export interface ExerciseSpec {
  kind: ExerciseKind;
  mode?: string;
  workloads?: string[];
}

export interface Exercise {
  spec: ExerciseSpec;
  seed: number;
  prompt: Msg;
  /** What the learner types or picks. */
  input: { type: 'hex' } | { type: 'number'; unit?: Unit } | { type: 'choice'; choices: string[] };
  /** Help in two steps: a nudge first, then the method (`hint`); neither says the answer. */
  nudge: Msg;
  hint: Msg;
  /** The scenarios the engine runs to find the answer (one, or one per mode to compare). */
  scenarios: Scenario[];
  /** Turns the engine's results into the expected answer, as the learner would write it. */
  expected: (results: Result[]) => string;
  /** Which access of the first scenario the walk shown after checking is (default 0). */
  walkAccess?: number;
  /** The variant of a kind that asks several questions (for tests and the page's data-variant). */
  variant?: string;
}

export interface Verdict {
  correct: boolean;
  expected: string;
  results: Result[];
  /** Said when the answer's unit is not the one asked for ("8 KiB" where MiB is asked). */
  unitNote?: Msg;
}

/** What a number answer counts: memory references, VM exits, cache hits, or a size in MiB. */
export type Unit = 'refs' | 'exits' | 'hits' | 'MiB';

function rng(seed: number) {
  let s = seed >>> 0 || 1;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const hex = (n: bigint | number) => '0x' + BigInt(n).toString(16);
const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
const page4k = (r: () => number, lo: number, hi: number) => BigInt(lo + Math.floor(r() * ((hi - lo) / 4096)) * 4096);
const gcd = (a: number, b: number): number => (b ? gcd(b, a % b) : a);

/** One of `n` combinations of an exercise's parameters for a seed. Seeds in a row step
 * through all n combinations before any comes again (a stride coprime with n), so "Another
 * one" does not ask the same question twice within n tries. */
function comboOf(seed: number, n: number): number {
  let stride = Math.max(1, Math.round(n * 0.618));
  while (gcd(stride, n) !== 1) stride++;
  const i = (((seed - 1) % n) + n) % n;
  return (i * stride + Math.floor(n / 3)) % n;
}
/** The combination's digits, one per parameter with that many values. */
function digits(seed: number, sizes: number[]): number[] {
  let i = comboOf(seed, sizes.reduce((a, b) => a * b, 1));
  return sizes.map((d) => { const k = i % d; i = Math.floor(i / d); return k; });
}

/** Guest tables live at gpa 0x100000 and are backed with the first 2 MiB of guest RAM. */
function nestedFor(mode: string, extra: { gpa: string; hpa: string; page?: '4K' | '2M' | '1G'; pages?: number }[]) {
  const maps = [{ gpa: '0x0', hpa: '0x40000000', pages: 512 }, ...extra];
  if (mode === 'ept' || mode === 'npt') return { nested: { mappings: maps } };
  if (mode === 'flat') return { flat: { guest_ram: '0x40000000', prefill: true, mappings: maps.map(({ gpa, hpa, pages }) => ({ gpa, hpa, pages: pages ?? 1 })) } };
  if (mode === 'shadow') return { shadow: { mappings: maps.map(({ gpa, hpa, pages }) => ({ gpa, hpa, pages: pages ?? 1 })) } };
  return {};
}

function computeHpa(spec: ExerciseSpec, seed: number): Exercise {
  const r = rng(seed);
  const mode = spec.mode ?? 'ept';
  const gva = page4k(r, 0x400000, 0x40000000);
  const gpa = page4k(r, 0x200000, 0x3000000);
  const hpa = page4k(r, 0x80000000, 0xf0000000);
  const off = BigInt(Math.floor(r() * 4096));
  const s: Scenario = {
    name: `exercise-compute-hpa-${seed}`,
    mode: mode as Scenario['mode'],
    guest: { paging: '4level', mappings: [{ gva: hex(gva), gpa: hex(gpa) }] },
    ...(nestedFor(mode, [{ gpa: hex(gpa), hpa: mode === 'native' ? hex(gpa) : hex(hpa) }]) as object),
    accesses: [{ gva: hex(gva + off), op: 'read' }],
  } as Scenario;
  return {
    spec, seed, scenarios: [s], input: { type: 'hex' },
    prompt: mode === 'native'
      ? msg('computeHpa.native', { gva: hex(gva), gpa: hex(gpa), addr: hex(gva + off) })
      : msg('computeHpa.nested', { gva: hex(gva), gpa: hex(gpa), hpa: hex(hpa), addr: hex(gva + off) }),
    nudge: msg('computeHpa.nudge'), hint: msg('computeHpa.hint'),
    expected: ([res]) => res.accesses[0].hpa ?? res.accesses[0].outcome,
  };
}

function countRefs(spec: ExerciseSpec, seed: number): Exercise {
  const mode = spec.mode ?? 'ept';
  const nested = mode === 'ept' || mode === 'npt';
  // guest levels, guest page, reads, and under EPT/NPT the nested levels and page
  const [gl, gp, k, nl, np] = digits(seed, [2, 3, 4, nested ? 2 : 1, nested ? 2 : 1]);
  const glevels = [4, 5][gl];
  const guestPage = (['4K', '2M', '1G'] as const)[gp];
  const reads = k + 1;
  const nestedPage = nested ? (['4K', '2M'] as const)[np] : '4K';
  const levels = (nested ? [4, 5][nl] : 4) as 4 | 5;
  const gpa = guestPage === '1G' ? 0x40000000n : 0x200000n;
  const s: Scenario = {
    name: `exercise-count-refs-${seed}`,
    mode: mode as Scenario['mode'],
    guest: { paging: glevels === 5 ? '5level' : '4level', mappings: [{ gva: '0x40000000', gpa: hex(gpa), page: guestPage }] },
    accesses: Array.from({ length: reads }, () => ({ gva: '0x40000123', op: 'read' as const })),
  } as Scenario;
  if (nested) {
    s.nested = {
      levels,
      mappings: nestedPage === '2M'
        ? [{ gpa: '0x0', hpa: '0x80000000', page: '2M', pages: 1024 }]
        : [{ gpa: '0x0', hpa: '0x80000000', pages: 512 }, { gpa: hex(gpa), hpa: '0x100000000', pages: 1 }],
    };
  } else if (mode === 'flat') {
    // guest RAM up to 2 GiB, so that a 1 GiB page at gpa 1 GiB is inside it
    (s as unknown as { flat: object }).flat = { guest_ram: '0x80000000', prefill: true,
      mappings: [{ gpa: '0x0', hpa: '0x40000000', pages: 512 }, { gpa: hex(gpa), hpa: '0x100000000', pages: guestPage === '4K' ? 1 : 512 }] };
  }
  const desc = mode === 'native' ? msg('countRefs.native', { page: guestPage, glevels })
    : mode === 'flat' ? msg('countRefs.flat', { page: guestPage, glevels })
    : msg('countRefs.nested', { page: guestPage, glevels, levels, mode: mode.toUpperCase(), nestedPage });
  return {
    spec, seed, scenarios: [s], input: { type: 'number', unit: 'refs' },
    prompt: msg('countRefs.prompt', { desc, reads: msg('countRefs.reads', { count: reads }) }),
    nudge: msg('countRefs.nudge'),
    hint: msg(mode === 'native' ? 'countRefs.hintNative' : mode === 'flat' ? 'countRefs.hintFlat' : 'countRefs.hint'),
    expected: ([res]) => String(res.accesses.reduce((c, a) => c + a.memory_refs, 0)),
  };
}

const OUTCOMES = ['ok', 'guest_page_fault', 'ept_violation', 'ept_misconfig', 'npt_fault'];

function predictExit(spec: ExerciseSpec, seed: number): Exercise {
  const r = rng(seed);
  const mode = spec.mode === 'npt' ? 'npt' : 'ept';
  const [variant, o] = digits(seed, [4, 3]);
  const op = (['read', 'write', 'fetch'] as const)[o];
  // the data page: a gva page above 4 MiB, a gpa page in 2-4 MiB (the guest's tables sit below)
  const page = page4k(r, 0x400000, 0x800000);
  const gpa = page4k(r, 0x200000, 0x400000);
  const gva = hex((variant === 0 ? page + 0x1000n : page) + BigInt(Math.floor(r() * 256)) * 16n);
  const s: Scenario = {
    name: `exercise-predict-${seed}`, mode,
    guest: { paging: '4level', mappings: [{ gva: hex(page), gpa: hex(gpa) }] },
    nested: { mappings: [{ gpa: '0x0', hpa: '0x80000000', pages: 1024 }], overrides: [] },
    accesses: [{ gva, op }],
  };
  const what = msg(['predictExit.unmapped', 'predictExit.notPresent', 'predictExit.readOnly',
    mode === 'ept' ? 'predictExit.writeNoRead' : 'predictExit.unchanged'][variant], { mode: mode.toUpperCase(), gpa: hex(gpa) });
  const ovr = s.nested!.overrides!;
  if (variant === 1) ovr.push({ gpa: hex(gpa), level: 1, clear: mode === 'ept' ? '0x7' : '0x1' });
  if (variant === 2) ovr.push({ gpa: hex(gpa), level: 1, clear: '0x2' });
  if (variant === 3 && mode === 'ept') ovr.push({ gpa: hex(gpa), level: 1, clear: '0x1' });
  return {
    spec, seed, scenarios: [s],
    input: { type: 'choice', choices: mode === 'ept' ? OUTCOMES.slice(0, 4) : ['ok', 'guest_page_fault', 'npt_fault'] },
    prompt: msg('predictExit.prompt', { page: hex(page), gpa: hex(gpa), what, op: msg(`op.${op}`), gva }),
    nudge: msg('predictExit.nudge'), hint: msg('predictExit.hint'),
    expected: ([res]) => res.accesses[0].outcome,
  };
}

/* The exit information itself: an EPT violation's qualification or an #NPF's EXITINFO1,
 * for a read or write that the nested table refuses, at the data page or at one of the
 * guest's page-table pages. */
function predictBits(spec: ExerciseSpec, seed: number): Exercise {
  const r = rng(seed);
  const mode = spec.mode === 'npt' ? 'npt' : 'ept';
  const perms = mode === 'ept' ? ['0x7', '0x2', '0x6', '0x4'] as const : ['0x1', '0x2', '0x4'] as const;
  const [o, t, p] = digits(seed, [3, 2, perms.length]);
  const op = (['read', 'write', 'fetch'] as const)[o];
  const onTable = t === 1;
  const perm = perms[p];
  const gva = hex(0x400000n + BigInt(1 + Math.floor(r() * 255)) * 16n);
  const s: Scenario = {
    name: `exercise-bits-${seed}`, mode,
    guest: { paging: '4level', mappings: [{ gva: '0x400000', gpa: '0x200000' }] },
    nested: {
      mappings: [{ gpa: '0x0', hpa: '0x80000000', pages: 1024 }],
      overrides: [onTable
        ? { guest_table: { gva: '0x400000', level: 1 }, level: 1, clear: perm }
        : { gpa: '0x200000', level: 1, clear: perm }],
    },
    accesses: [{ gva, op }],
  };

  return {
    spec, seed, scenarios: [s], input: { type: 'hex' },
    prompt: msg(`predictBits.${mode}`, {
      target: msg(onTable ? 'predictBits.onTable' : 'predictBits.onData'),
      cleared: msg(`predictBits.cleared.${mode}.${perm}`),
      op: msg(`op.${op}`), gva,
    }),
    nudge: msg('predictBits.nudge'), hint: msg(`predictBits.hint.${mode}`),
    expected: ([res]) => {
      const f = res.accesses[0].fault as Record<string, string> | null;
      return f?.qualification ?? f?.exitinfo1 ?? '0x0';
    },
  };
}

function flatTableSize(spec: ExerciseSpec, seed: number): Exercise {
  const [g, k] = digits(seed, [10, 2]);
  const gib = [1, 2, 3, 4, 5, 6, 8, 10, 12, 16][g];
  const sunway = k === 1;
  const s = {
    name: `exercise-flat-${seed}`, mode: 'flat',
    guest: { paging: sunway ? 'sunway' : '4level', mappings: [{ gva: '0x400000', gpa: '0x200000', page: sunway ? '8K' : '4K' }] },
    flat: { guest_ram: hex(BigInt(gib) << 30n), mappings: [{ gpa: '0x0', hpa: '0x80000000', pages: 1024 }] },
    accesses: [],
  } as unknown as Scenario;
  return {
    spec, seed, scenarios: [s], input: { type: 'number', unit: 'MiB' },
    prompt: msg('flatTableSize.prompt', { gib, guest: msg(sunway ? 'flatTableSize.sunway' : 'flatTableSize.x86') }),
    nudge: msg('flatTableSize.nudge'), hint: msg('flatTableSize.hint'),
    expected: ([res]) => String((res.flat_table_bytes ?? 0) / (1 << 20)),
  };
}

/* The programs of which-wins and what each may vary: how often gcc updates a PTE, how
 * many memcached processes switch and how often; the TLB's size for all three. */
const WORKLOAD_PARAMS: Record<string, { tlb: number; every: number; processes: number }[]> = {
  mcf: [32, 64, 128].map((tlb) => ({ tlb, every: 0, processes: 1 })),
  gcc: [32, 64].flatMap((tlb) => [5, 10, 20].map((every) => ({ tlb, every, processes: 1 }))),
  memcached: [32, 64].flatMap((tlb) => [25, 50].flatMap((every) => [4, 8].map((processes) => ({ tlb, every, processes })))),
};

/** Which mode pays least: a small stream run by the engine under each mode, scored by
 * references and exits with the cost model of `vmsim experiment` (40 per reference,
 * 1,700 per exit). EPT and NPT run on two hosts that back guest memory with different
 * nested pages (one with 2 MiB pages, one with 4 KiB) and may differ in levels, so that
 * either can win; for mcf both use 4 KiB pages, where shadow paging's short walk wins. */
function whichWins(spec: ExerciseSpec, seed: number): Exercise {
  const r = rng(seed);
  const workloads = (spec.workloads ?? ['mcf', 'gcc', 'memcached']) as string[];
  const [w, big, el, nl, p] = digits(seed, [workloads.length, 2, 2, 2, 12]);
  const workload = workloads[w];
  const params = WORKLOAD_PARAMS[workload] ?? WORKLOAD_PARAMS.mcf;
  const { tlb, every, processes } = params[p % params.length];
  const hosts = {
    ept: { levels: [4, 5][el], page: workload !== 'mcf' && big === 0 ? '2M' : '4K' },
    npt: { levels: [4, 5][nl], page: workload !== 'mcf' && big === 1 ? '2M' : '4K' },
  };
  const modes = ['shadow', 'ept', 'npt'] as const;
  const pages = 512;
  const accesses: Scenario['accesses'] = [];
  for (let i = 0; i < pages; i++) accesses.push({ gva: hex(0x40000000n + BigInt(i) * 4096n), op: 'write' }); // warm-up
  for (let i = 0; i < 1500; i++) {
    const page = BigInt(Math.floor(r() * pages));
    if (workload === 'gcc' && i % every === every - 1) {
      const set = Math.floor(i / every) % 2 === 0;
      accesses.push({ pte_write: { gva: hex(0x40000000n + page * 4096n), level: 1, set: set ? '0x200' : '0x0', clear: set ? '0x0' : '0x200' } } as never);
    } else if (workload === 'memcached' && i % every === every - 1) accesses.push({ mov_cr3: Math.floor(i / every) % processes } as never);
    else accesses.push({ gva: hex(0x40000000n + page * 4096n + 64n), op: 'read' });
  }
  const scenarios = modes.map((mode) => {
    const host = mode === 'shadow' ? null : hosts[mode];
    const tables = host?.page === '2M'
      ? { nested: { levels: host.levels, mappings: [{ gpa: '0x0', hpa: '0x80000000', page: '2M', pages: 4 }] } }
      : host ? { nested: { levels: host.levels, ...(nestedFor(mode, [{ gpa: '0x400000', hpa: '0x80400000', pages }]) as { nested: object }).nested } }
      : nestedFor(mode, [{ gpa: '0x400000', hpa: '0x80400000', pages }]);
    return {
      name: `exercise-which-${mode}-${seed}`, mode,
      guest: { paging: '4level', address_spaces: workload === 'memcached' ? processes : 1, mappings: [{ gva: '0x40000000', gpa: '0x400000', pages }] },
      ...tables,
      caches: { preset: 'x86-server', tlb: { entries: tlb, ways: 4 } },
      accesses,
    } as unknown as Scenario;
  });
  const story = ['mcf', 'gcc', 'memcached'].includes(workload) ? msg(`whichWins.story.${workload}`, { every, processes }) : workload;
  return {
    spec, seed, scenarios, input: { type: 'choice', choices: [...modes] }, walkAccess: accesses.length - 1,
    prompt: msg('whichWins.prompt', { story, tlb, eptLevels: hosts.ept.levels, eptPage: hosts.ept.page, nptLevels: hosts.npt.levels, nptPage: hosts.npt.page }),
    nudge: msg('whichWins.nudge'), hint: msg('whichWins.hint'),
    expected: (results) => {
      // steady state: the warm-up accesses (the first `pages`) are not counted
      const cost = results.map((res) =>
        res.accesses.slice(pages).reduce((c, acc) => c + acc.memory_refs * 40 + acc.exits * 1700, 0));
      const best = Math.min(...cost);
      return modes.filter((_, i) => cost[i] === best).join(' or ');   // two modes could tie
    },
  };
}


/* The events of a sequence exercise, as the engine takes them and as the prompt says them. */
const PAGE = (base: bigint, i: number) => hex(base + BigInt(i) * 4096n);
type Ev = { access: Scenario['accesses'][number]; words: Msg };
const evRead = (gva: string): Ev => ({ access: { gva, op: 'read' }, words: msg('ev.read', { gva }) });
const evWrite = (gva: string): Ev => ({ access: { gva, op: 'write' }, words: msg('ev.write', { gva }) });
const lastIsAccess = (evs: Ev[]) => { const a = evs[evs.length - 1]?.access; return !!a && 'gva' in a && 'op' in a; };

/** Shadow paging: which events exit (hidden page faults, guest page-table writes, mov cr3
 * outside the CR3-target values) and what a shadow walk costs. The guest maps three pages;
 * its page-table writes change a bit the MMU ignores (bit 9), so only the resync is taught. */
function shadowExits(spec: ExerciseSpec, seed: number): Exercise {
  const r = rng(seed);
  const variant = pick(r, ['exits', 'refs'] as const);
  const spaces = pick(r, [2, 3]);
  const targets = pick(r, [0, 1, 2]);
  const n = 5 + Math.floor(r() * 3);
  const evs: Ev[] = [];
  let cur = 0;
  for (let i = 0; i < n; i++) {
    const k = r();
    const gva = PAGE(0x400000n, Math.floor(r() * 3));
    if (k < 0.42) evs.push(evRead(gva));
    else if (k < 0.6) evs.push(evWrite(gva));
    else if (k < 0.78) {
      const set = r() < 0.5;
      evs.push({ access: { pte_write: { gva, level: 1, ...(set ? { set: '0x200' } : { clear: '0x200' }) } }, words: msg('ev.pteWrite', { gva }) });
    } else {
      const to = (cur + 1 + Math.floor(r() * (spaces - 1))) % spaces;
      cur = to;
      evs.push({ access: { mov_cr3: to }, words: msg('ev.movCr3', { n: to }) });
    }
  }
  if (variant === 'refs' && !lastIsAccess(evs)) evs.push(evRead(PAGE(0x400000n, Math.floor(r() * 3))));
  const s = {
    name: `exercise-shadow-${seed}`, mode: 'shadow',
    guest: { paging: '4level', address_spaces: spaces, mappings: [{ gva: '0x400000', gpa: '0x200000', pages: 3 }] },
    shadow: { mappings: [{ gpa: '0x0', hpa: '0x80000000', pages: 1024 }], cr3_targets: targets },
    accesses: evs.map((e) => e.access),
  } as Scenario;
  return {
    spec, seed, variant, scenarios: [s], input: { type: 'number', unit: variant }, walkAccess: evs.length - 1,
    prompt: msg(`shadowExits.${variant}`, {
      setup: msg('shadowExits.setup', { spaces, targets: targets ? msg('shadowExits.targets', { targets }) : msg('shadowExits.noTargets') }),
      events: evs.map((e) => e.words),
    }),
    nudge: msg('shadowExits.nudge'), hint: msg(variant === 'exits' ? 'shadowExits.hint' : 'shadowExits.hintRefs'),
    expected: ([res]) => String(variant === 'exits'
      ? res.accesses.reduce((c, a) => c + a.exits, 0)
      : res.accesses[res.accesses.length - 1].memory_refs),
  };
}

/** Flat nested tables: the references and exits of a walk through a lazily filled flat
 * table, and which fault a bad address gives (a guest #PF or a flat-table miss that the
 * VMM cannot fill). */
function flatWalk(spec: ExerciseSpec, seed: number): Exercise {
  const r = rng(seed);
  const [v, sw] = digits(seed, [3, 2]);
  const variant = (['refs', 'exits', 'outcome'] as const)[v];
  const sunway = sw === 1;
  const page = sunway ? 8192n : 4096n;
  const at = (base: bigint, i: number) => hex(base + BigInt(i) * page);
  const guestPage = sunway ? { page: '8K' as const } : {};
  const paging = sunway ? 'sunway' : '4level';
  if (variant === 'outcome') {
    const target = pick(r, ['inside', 'outside', 'unmapped'] as const);
    const page = target === 'inside' ? at(0x400000n, Math.floor(r() * 2)) : target === 'outside' ? at(0x600000n, Math.floor(r() * 2)) : at(0x800000n, Math.floor(r() * 4));
    const gva = hex(BigInt(page) + BigInt(Math.floor(r() * 256)) * 16n);
    const s = {
      name: `exercise-flat-outcome-${seed}`, mode: 'flat',
      guest: { paging, mappings: [{ gva: '0x400000', gpa: '0x200000', pages: 2, ...guestPage }, { gva: '0x600000', gpa: '0x3000000', pages: 2, ...guestPage }] },
      flat: { guest_ram: '0x40000000', prefill: true, mappings: [{ gpa: '0x0', hpa: '0x80000000', pages: sunway ? 512 : 1024 }] },
      accesses: [{ gva, op: 'read' }],
    } as Scenario;
    return {
      spec, seed, variant, scenarios: [s], input: { type: 'choice', choices: ['ok', 'guest_page_fault', 'flat_fault'] },
      prompt: msg('flatWalk.outcome', { guest: msg(sunway ? 'flatWalk.sunway' : 'flatWalk.x86'), gva }),
      nudge: msg('flatWalk.nudgeOutcome'), hint: msg('flatWalk.hintOutcome'),
      expected: ([res]) => res.accesses[0].outcome,
    };
  }
  const before = Math.floor(r() * 4);
  const evs: Ev[] = [];
  for (let i = 0; i < before; i++) evs.push(evRead(at(0x400000n, Math.floor(r() * 4))));
  evs.push(evRead(at(0x400000n, Math.floor(r() * 4))));
  const s = {
    name: `exercise-flat-walk-${seed}`, mode: 'flat',
    guest: { paging, mappings: [{ gva: '0x400000', gpa: '0x200000', pages: 4, ...guestPage }] },
    flat: { guest_ram: '0x40000000', mappings: [{ gpa: '0x0', hpa: '0x80000000', pages: sunway ? 512 : 1024 }] },
    accesses: evs.map((e) => e.access),
  } as Scenario;
  return {
    spec, seed, variant, scenarios: [s], input: { type: 'number', unit: variant }, walkAccess: evs.length - 1,
    prompt: msg(`flatWalk.${variant}`, { guest: msg(sunway ? 'flatWalk.sunway' : 'flatWalk.x86'), events: evs.map((e) => e.words) }),
    nudge: msg('flatWalk.nudge'), hint: msg('flatWalk.hint'),
    expected: ([res]) => {
      const last = res.accesses[res.accesses.length - 1];
      return String(variant === 'refs' ? last.memory_refs : last.exits);
    },
  };
}

/* VMFUNC answers as choices: a switch, the three reasons of exit 59, #UD. */
const VMFUNC_CHOICES = ['switched', 'exit59_range', 'exit59_invalid', 'exit59_function', 'ud'];
const VMFUNC_REASON: Record<string, string> = { index_out_of_range: 'exit59_range', invalid_eptp: 'exit59_invalid', function_disabled: 'exit59_function' };
function vmfuncChoice(a: Result['accesses'][number]): string {
  if (a.outcome === 'ok') return 'switched';
  if (a.outcome === 'invalid_opcode') return 'ud';
  return VMFUNC_REASON[(a.fault as { reason: string } | null)?.reason ?? ''] ?? a.outcome;
}

/** VMFUNC and EPTP switching: the EPTP index after a sequence of switches (failed ones
 * leave it unchanged), which accesses exit (the object is mapped only in the gate's
 * EPT), and what one VMFUNC does (switch, exit 59 for one of three reasons, #UD). */
function vmfuncSwitch(spec: ExerciseSpec, seed: number): Exercise {
  const r = rng(seed);
  const variant = (['index', 'exits', 'outcome'] as const)[digits(seed, [3])[0]];
  const base = (enabled: boolean, accesses: Scenario['accesses']): Scenario => ({
    name: `exercise-vmfunc-${seed}`, mode: 'ept',
    guest: { paging: '4level', mappings: [{ gva: '0x400000', gpa: '0x200000' }, { gva: '0x500000', gpa: '0x300000' }] },
    nested: {
      mappings: [{ gpa: '0x0', hpa: '0x80000000', pages: 768 }],
      ...(enabled ? {
        vmfunc: true,
        eptp_list: [{ mappings: [{ gpa: '0x0', hpa: '0x80000000', pages: 769 }] }, { mappings: [{ gpa: '0x0', hpa: '0x80000000', pages: 768 }] }],
      } : {}),
    },
    accesses,
  });
  const setup = msg('vmfuncSwitch.setup');
  const vmf = (n: number): Ev => ({ access: { vmfunc: n }, words: msg('ev.vmfunc', { n }) });
  const indices = [0, 1, 2, 3, 5, 7, 100, 511, 512, 600, 4095];
  if (variant === 'outcome') {
    const enabled = r() < 0.8;
    const fn = r() < 0.2 ? 1 : 0;
    const n = pick(r, indices);
    const s = base(enabled, [{ vmfunc: n, ...(fn ? { function: fn } : {}) }]);
    return {
      spec, seed, variant, scenarios: [s], input: { type: 'choice', choices: VMFUNC_CHOICES },
      prompt: msg('vmfuncSwitch.outcome', { setup, enabled: msg(enabled ? 'vmfuncSwitch.enabled' : 'vmfuncSwitch.disabled'), fn, n }),
      nudge: msg('vmfuncSwitch.nudge'), hint: msg('vmfuncSwitch.hintOutcome'),
      expected: ([res]) => vmfuncChoice(res.accesses[0]),
    };
  }
  const evs: Ev[] = [];
  const n = 4 + Math.floor(r() * 3);
  for (let i = 0; i < n; i++) {
    if (variant === 'exits' && r() < 0.5) evs.push(evRead(r() < 0.7 ? '0x500000' : '0x400000'));
    else evs.push(vmf(pick(r, indices)));
  }
  const s = base(true, evs.map((e) => e.access));
  return {
    spec, seed, variant, scenarios: [s], input: { type: 'number', ...(variant === 'exits' ? { unit: 'exits' as const } : {}) }, walkAccess: evs.length - 1,
    prompt: msg(`vmfuncSwitch.${variant}`, { setup, events: evs.map((e) => e.words) }),
    nudge: msg('vmfuncSwitch.nudge'), hint: msg(variant === 'exits' ? 'vmfuncSwitch.hintExits' : 'vmfuncSwitch.hint'),
    expected: ([res]) => String(variant === 'index'
      ? res.accesses[res.accesses.length - 1].eptp_index
      : res.accesses.reduce((c, a) => c + a.exits, 0)),
  };
}

/** Caching the walk: TLB hits over a sequence, and for the last access its references,
 * nested-TLB hits and page-walk-cache hits, under EPT with the x86 server's caches. */
function cacheHits(spec: ExerciseSpec, seed: number): Exercise {
  const r = rng(seed);
  const variant = (['tlb', 'refs', 'ntlb', 'pwc'] as const)[digits(seed, [4])[0]];
  const n = 4 + Math.floor(r() * 4);
  const evs: Ev[] = [];
  for (let i = 0; i < n; i++) {
    const gva = PAGE(0x400000n, Math.floor(r() * 4));
    const k = r();
    if (k < 0.6) evs.push(evRead(gva));
    else if (k < 0.85) evs.push(evWrite(gva));
    else evs.push({ access: { invlpg: gva }, words: msg('ev.invlpg', { gva }) });
  }
  if (!lastIsAccess(evs)) evs.push(evRead(PAGE(0x400000n, Math.floor(r() * 4))));
  const s: Scenario = {
    name: `exercise-caches-${seed}`, mode: 'ept',
    guest: { paging: '4level', mappings: [{ gva: '0x400000', gpa: '0x200000', pages: 4 }] },
    nested: { mappings: [{ gpa: '0x0', hpa: '0x80000000', pages: 1024 }] },
    caches: { preset: 'x86-server' },
    accesses: evs.map((e) => e.access),
  };
  return {
    spec, seed, variant, scenarios: [s], input: { type: 'number', unit: variant === 'refs' ? 'refs' : 'hits' }, walkAccess: evs.length - 1,
    prompt: msg(`cacheHits.${variant}`, { setup: msg('cacheHits.setup'), events: evs.map((e) => e.words) }),
    nudge: msg('cacheHits.nudge'), hint: msg('cacheHits.hint'),
    expected: ([res]) => {
      const last = res.accesses[res.accesses.length - 1];
      if (variant === 'tlb') return String(res.accesses.filter((a) => a.cache?.tlb === 'hit').length);
      if (variant === 'refs') return String(last.memory_refs);
      return String(variant === 'ntlb' ? last.cache?.ntlb_hits ?? 0 : last.cache?.pwc_hits ?? 0);
    },
  };
}

/** Agile paging (model.md 1, "Agile paging"): the references of a warm walk switched at
 * level S (a 4- or 5-level guest on a 4- or 5-level EPT), or whether a guest page-table
 * write at level L exits once the VMM has walked the page's tables. */
const AGILE_CHOICES = ['exit', 'noExit'];
function agileWalk(spec: ExerciseSpec, seed: number): Exercise {
  const variant = (['refs', 'write'] as const)[digits(seed, [2])[0]];
  const r = rng(seed);
  const guest = pick(r, [4, 5] as const);
  const nested = variant === 'refs' ? pick(r, [4, 5] as const) : 4;
  const sw = Math.floor(r() * (guest + 1));
  const level = 1 + Math.floor(r() * guest);
  const gva = hex(page4k(r, 0x400000, 0x40000000));
  const read = { gva, op: 'read' as const };
  const s: Scenario = {
    name: `exercise-agile-${seed}`, mode: 'agile',
    guest: { paging: guest === 5 ? '5level' : '4level', mappings: [{ gva, gpa: '0x200000' }] },
    nested: { levels: nested, mappings: [{ gpa: '0x0', hpa: '0x40000000', pages: 1024 }] },
    agile: { switch_level: sw },
    accesses: variant === 'refs' ? [read, read] : [read, { pte_write: { gva, level } }],
  } as Scenario;
  const setup = msg('agileWalk.setup', {
    guest, nested, gva, switch: sw === 0 ? msg('agileWalk.never') : sw === guest ? msg('agileWalk.root', { level: sw }) : msg('agileWalk.at', { level: sw }),
  });
  return {
    spec, seed, variant, scenarios: [s], walkAccess: variant === 'refs' ? 1 : 0,
    input: variant === 'refs' ? { type: 'number', unit: 'refs' } : { type: 'choice', choices: AGILE_CHOICES },
    prompt: msg(`agileWalk.${variant}`, { setup, gva, level }),
    nudge: msg(`agileWalk.nudge${variant === 'refs' ? 'Refs' : 'Write'}`),
    hint: msg(`agileWalk.hint${variant === 'refs' ? 'Refs' : 'Write'}`),
    expected: ([res]) => variant === 'refs' ? String(res.accesses[1].memory_refs) : res.accesses[1].exits > 0 ? 'exit' : 'noExit',
  };
}

const GENERATORS: Record<ExerciseKind, (spec: ExerciseSpec, seed: number) => Exercise> = {
  'compute-hpa': computeHpa,
  'count-refs': countRefs,
  'predict-exit': predictExit,
  'predict-bits': predictBits,
  'flat-table-size': flatTableSize,
  'which-wins': whichWins,
  'shadow-exits': shadowExits,
  'flat-walk': flatWalk,
  'vmfunc-switch': vmfuncSwitch,
  'cache-hits': cacheHits,
  'agile-walk': agileWalk,
};

export function generate(spec: ExerciseSpec, seed: number): Exercise {
  const gen = GENERATORS[spec.kind];
  if (!gen) throw new Error(`unknown exercise kind "${spec.kind}"`);
  return gen(spec, seed);
}

/* Words a learner may write after a number, by what they name. Counting words that name
 * nothing in particular ("times", 回, 次) go with any count. */
const UNIT_WORDS: Record<string, string[]> = {
  refs: ['ref', 'refs', 'reference', 'references', 'memory reference', 'memory references', 'memory refs', 'mem refs', 'accesses', 'reads',
    '参照', '回の参照', 'メモリ参照', '回のメモリ参照', '次访存', '次内存访问', '次引用', '次内存引用', '访存'],
  exits: ['exit', 'exits', 'vm exit', 'vm exits', 'vmexit', 'vmexits', '回の exit', '回の vm exit', '次退出', '次 vm exit', '退出'],
  hits: ['hit', 'hits', 'tlb hits', 'tlb hit', 'ヒット', '回ヒット', '次命中', '命中'],
  MiB: ['mib', 'mb', 'm', 'mbyte', 'mbytes', 'mebibyte', 'mebibytes', 'megabyte', 'megabytes'],
  KiB: ['kib', 'kb', 'k', 'kibibytes', 'kilobytes'],
  GiB: ['gib', 'gb', 'g', 'gibibytes', 'gigabytes'],
  bytes: ['b', 'byte', 'bytes', 'バイト', '字节'],
  cycles: ['cycle', 'cycles', 'サイクル', '周期', '个周期'],
  ns: ['ns', 'nanoseconds', 'ナノ秒', '纳秒'],
};
const COUNT_WORDS = ['x', 'times', '回', '次', '個', '个', 'つ'];
const COUNTS: Unit[] = ['refs', 'exits', 'hits'];

/** An answer as typed, made plain: full-width digits and letters of a Japanese or Chinese
 * input method become ASCII, case and surrounding spaces go. */
const plain = (answer: string) => answer.normalize('NFKC').trim().toLowerCase().replace(/\s+/g, ' ');

type Parsed = { value: string; unit: string | null } | null;

/** A number answer: the digits (with `_`, `,` or spaces between groups) and the word
 * after them, if any, as the unit it names ('?' for a word that names none). */
function parseNumber(a: string): Parsed {
  const m = /^(\d+(?:[ _,]\d{3})*|\d[\d_]*)\s*(.*)$/.exec(a);
  if (!m) return null;
  const value = String(Number(m[1].replace(/[ _,]/g, '')));
  const word = m[2].replace(/[.。]$/, '').trim();
  if (!word) return { value, unit: null };
  if (COUNT_WORDS.includes(word)) return { value, unit: 'count' };
  const unit = Object.keys(UNIT_WORDS).find((u) => UNIT_WORDS[u].includes(word));
  return { value, unit: unit ?? '?' };
}

/** A hex answer: with or without 0x, with `_` or spaces between digits. */
function parseHex(a: string): string | null {
  const m = /^(?:0x)?([0-9a-f][0-9a-f_ ]*)$/.exec(a);
  if (!m) return null;
  try { return '0x' + BigInt('0x' + m[1].replace(/[_ ]/g, '')).toString(16); } catch { return null; }
}

function normalise(input: Exercise['input'], answer: string): string {
  const a = plain(answer);
  if (input.type === 'hex') return parseHex(a) ?? a;
  if (input.type === 'number') return parseNumber(a)?.value ?? a;
  return a;
}

/** Whether the unit written after a number is one the question allows: none, a plain
 * counting word for a count, or the unit asked for. */
function unitFits(input: Exercise['input'], answer: string): boolean {
  if (input.type !== 'number') return true;
  const unit = parseNumber(plain(answer))?.unit ?? null;
  if (unit === null) return true;
  if (unit === 'count') return input.unit !== 'MiB';
  return unit === input.unit;
}

/** Whether `answer` is the engine's `expected` answer as the learner may write it (a hex
 * number in any case, with or without 0x, with `_` or spaces between digits; a number
 * with the unit asked for or a counting word after it; full-width digits; either of two
 * modes that tie). A unit other than the one asked for is wrong whatever the number. */
export function judge(ex: Pick<Exercise, 'input'>, expected: string, answer: string): boolean {
  if (!unitFits(ex.input, answer)) return false;
  const accepted = expected.split(' or ').map((e) => normalise(ex.input, e));
  return accepted.includes(normalise(ex.input, answer));
}

/** What to say about an answer whose unit is not the one asked for (undefined if it fits). */
export function unitNote(ex: Pick<Exercise, 'input'>, answer: string): Msg | undefined {
  if (unitFits(ex.input, answer) || ex.input.type !== 'number') return undefined;
  return msg('unit.wrong', { asked: msg(`unit.${ex.input.unit ?? 'none'}`) });
}

/** Runs the engine on the exercise's scenarios and compares with the learner's answer. */
export function check(engine: Pick<Vmsim, 'run'>, ex: Exercise, answer: string): Verdict {
  const results = ex.scenarios.map((s) => engine.run(s));
  const expected = ex.expected(results);
  const note = unitNote(ex, answer);
  return { correct: judge(ex, expected, answer), expected, results, ...(note ? { unitNote: note } : {}) };
}

/** Whether an answer is there to check at all (blank, a number field without a number, a
 * word after it that names no unit, or a hex field without a hex number). */
export function answered(ex: Pick<Exercise, 'input'>, answer: string): boolean {
  const a = plain(answer);
  if (!a) return false;
  if (ex.input.type === 'number') { const p = parseNumber(a); return !!p && p.unit !== '?'; }
  if (ex.input.type === 'hex') return parseHex(a) !== null;
  return ex.input.choices.includes(answer.trim());
}

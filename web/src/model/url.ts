/* The view state a learner would share: which view, which example (or an inline
 * scenario), which access and step. Parsing never throws: bad values fall back to defaults. */
export type View = 'walk' | 'memory' | 'compare' | 'playground' | 'results' | 'live' | 'lessons';
export const VIEWS: View[] = ['walk', 'memory', 'compare', 'playground', 'results', 'live', 'lessons'];

export interface UrlState {
  view: View;
  example: string;
  access: number;
  step: number;
  /** A scenario from the playground, as JSON, when not an example. */
  scenario: string | null;
  /** Compare view inputs. */
  gva: string | null;
  gpa: string | null;
  op: string | null;
  /** Compare: tables built in advance or filled on demand (model/compare.ts Tables). */
  tables?: string | null;
  /** Lessons: which lesson, the exercise seed, the language. */
  lesson: string | null;
  seed: number;
  /** Lessons: each exercise's own seed, by position on the page (null: seed + position). */
  seeds: (number | null)[];
  /** Lessons: the teacher's answer sheet of the lesson for this many seeds from `seed`. */
  sheet?: number | null;
  lang: 'en' | 'ja' | 'zh' | null;
}

export const DEFAULT_EXAMPLE = 'ept-4k';

function int(v: string | null, dflt: number): number {
  const n = v === null ? NaN : Number(v);
  return Number.isInteger(n) && n >= 0 ? n : dflt;
}

function b64decode(s: string): string | null {
  try {
    const bin = atob(s.replace(/-/g, '+').replace(/_/g, '/'));
    return new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
  } catch {
    return null;
  }
}
function b64encode(s: string): string {
  const bytes = new TextEncoder().encode(s);
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

export function parseUrl(search: string): UrlState {
  const p = new URLSearchParams(search);
  const view = p.get('view') as View;
  return {
    view: VIEWS.includes(view) ? view : 'walk',
    example: p.get('example') || DEFAULT_EXAMPLE,
    access: int(p.get('access'), 0),
    step: int(p.get('step'), 0),
    scenario: p.has('s') ? b64decode(p.get('s')!) : null,
    gva: p.get('gva'),
    gpa: p.get('gpa'),
    op: p.get('op'),
    tables: p.get('tables'),
    lesson: p.get('lesson'),
    seed: int(p.get('seed'), 1),
    seeds: (p.get('seeds') ?? '').split(',').slice(0, 64).map((x) => (x === '' ? null : int(x, -1))).map((n) => (n !== null && n >= 0 ? n : null)),
    sheet: p.has('sheet') ? Math.min(500, Math.max(1, int(p.get('sheet'), 30))) : null,
    lang: (['en', 'ja', 'zh'] as const).find((l) => l === p.get('lang')) ?? null,
  };
}

export function toSearch(s: UrlState): string {
  const p = new URLSearchParams();
  if (s.view !== 'walk') p.set('view', s.view);
  if (s.scenario) p.set('s', b64encode(s.scenario));
  else p.set('example', s.example);
  p.set('access', String(s.access));
  p.set('step', String(s.step));
  if (s.view === 'lessons') {
    if (s.lesson) p.set('lesson', s.lesson);
    p.set('seed', String(s.seed));
    if (s.seeds.some((x) => x !== null)) p.set('seeds', s.seeds.map((x) => (x === null ? '' : String(x))).join(','));
    if (s.sheet) p.set('sheet', String(s.sheet));
  }
  if (s.lang) p.set('lang', s.lang);
  if (s.view === 'compare') {
    if (s.gva) p.set('gva', s.gva);
    if (s.gpa) p.set('gpa', s.gpa);
    if (s.op) p.set('op', s.op);
    if (s.tables) p.set('tables', s.tables);
  }
  return '?' + p.toString();
}

/* How far down a PDF page its text reaches, read from the PDF Chromium prints: the page's
 * content stream inflated, the y of each text matrix (Tm) against the page's own box (the
 * first `0 0 w h re`, in the same CSS-pixel units Chromium draws in). Enough to tell a page
 * left mostly blank from a full one; not a general PDF reader. */
import { inflateSync } from 'node:zlib';

export function firstPageTextReach(pdf: Buffer): { bottom: number; height: number; runs: number } {
  const s = pdf.toString('latin1');
  const objects = new Map<number, number>();
  for (const m of s.matchAll(/(\d+) 0 obj/g)) objects.set(Number(m[1]), m.index! + m[0].length);
  const kids = /\/Type\s*\/Pages\b[\s\S]*?\/Kids\s*\[\s*(\d+) 0 R/.exec(s);
  if (!kids) throw new Error('no page tree in the PDF');
  const page = s.slice(objects.get(Number(kids[1]))!, s.indexOf('endobj', objects.get(Number(kids[1]))!));
  const contents = /\/Contents\s+(\d+) 0 R/.exec(page);
  if (!contents) throw new Error('page 1 has no content stream');
  const at = objects.get(Number(contents[1]))!;
  const start = s.indexOf('stream', at) + 'stream'.length;
  const begin = s[start] === '\r' ? start + 2 : start + 1;
  const body = inflateSync(pdf.subarray(begin, s.indexOf('endstream', begin))).toString('latin1');
  const box = /\b0 0 ([\d.]+) ([\d.]+) re\b/.exec(body);
  if (!box) throw new Error('page 1 has no page box');
  const ys = [...body.matchAll(/(?:[-\d.]+ ){5}([-\d.]+) Tm/g)].map((m) => Number(m[1]));
  return { bottom: Math.max(0, ...ys), height: Number(box[2]), runs: ys.length };
}

/** The text of every page of a PDF Chromium (Skia) prints, one string per page, one line per
 * text object: each font's glyph codes mapped back through its ToUnicode CMap (bfchar and
 * bfrange), the `<hex> Tj` and `[<hex> n <hex>] TJ` strings of the page's content stream.
 * Enough to tell whether some words were printed; not a general PDF reader. */
export function pdfPagesText(pdf: Buffer): string[] {
  const s = pdf.toString('latin1');
  const objects = new Map<number, number>();
  for (const m of s.matchAll(/(\d+) 0 obj/g)) objects.set(Number(m[1]), m.index! + m[0].length);
  const body = (n: number) => s.slice(objects.get(n)!, s.indexOf('endobj', objects.get(n)!));
  const stream = (n: number) => {
    const start = s.indexOf('stream', objects.get(n)!) + 'stream'.length;
    const begin = s[start] === '\r' ? start + 2 : start + 1;
    return inflateSync(pdf.subarray(begin, s.indexOf('endstream', begin))).toString('latin1');
  };
  const hex = (h: string) => String.fromCodePoint(...(h.match(/[0-9a-f]{4}/gi) ?? []).map((u) => parseInt(u, 16)));
  const cmaps = new Map<number, Map<number, string>>();
  const cmapOf = (font: number) => {
    if (cmaps.has(font)) return cmaps.get(font)!;
    const map = new Map<number, string>();
    const tu = /\/ToUnicode (\d+) 0 R/.exec(body(font));
    if (tu) {
      const cm = stream(Number(tu[1]));
      for (const block of cm.matchAll(/beginbfchar([\s\S]*?)endbfchar/g))
        for (const m of block[1].matchAll(/<([0-9a-f]+)>\s*<([0-9a-f]+)>/gi)) map.set(parseInt(m[1], 16), hex(m[2]));
      for (const block of cm.matchAll(/beginbfrange([\s\S]*?)endbfrange/g))
        for (const m of block[1].matchAll(/<([0-9a-f]+)>\s*<([0-9a-f]+)>\s*<([0-9a-f]+)>/gi))
          for (let c = parseInt(m[1], 16), u = parseInt(m[3], 16); c <= parseInt(m[2], 16); c++, u++) map.set(c, String.fromCodePoint(u));
    }
    cmaps.set(font, map);
    return map;
  };
  const pages: string[] = [];
  for (const [n] of objects) {
    const page = body(n);
    if (!/\/Type\s*\/Page\b/.test(page)) continue;
    const fonts = new Map([...page.matchAll(/\/(F\d+) (\d+) 0 R/g)].map((m) => [m[1], Number(m[2])]));
    const contents = /\/Contents\s+(\d+) 0 R/.exec(page);
    if (!contents) continue;
    const lines: string[] = [];
    for (const bt of stream(Number(contents[1])).matchAll(/\bBT\b([\s\S]*?)\bET\b/g)) {
      let map = new Map<number, string>();
      let line = '';
      for (const op of bt[1].matchAll(/\/(F\d+) [\d.]+ Tf|\[((?:<[0-9a-f]*>|[-\d.\s])*)\]\s*TJ|<([0-9a-f]*)>\s*Tj/gi)) {
        if (op[1]) { map = fonts.has(op[1]) ? cmapOf(fonts.get(op[1])!) : new Map(); continue; }
        for (const h of (op[2] ?? op[3]).match(/[0-9a-f]{4}/gi) ?? []) line += map.get(parseInt(h, 16)) ?? '';
      }
      lines.push(line);
    }
    pages.push(lines.join('\n'));
  }
  return pages;
}

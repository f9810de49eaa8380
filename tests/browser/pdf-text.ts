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

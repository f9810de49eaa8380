/* D3 charts for the Results tab. Every label is set with .text(), never as HTML, so a CPU
 * model such as `<img src=x onerror=...>` shows as the characters it is. Colour always comes
 * with a shape or a label. */
import { axisBottom, axisLeft } from 'd3-axis';
import { scaleBand, scaleLinear, scaleLog, scalePoint, type ScaleLinear, type ScaleLogarithmic } from 'd3-scale';
import { select } from 'd3-selection';
import { line } from 'd3-shape';
import type { T } from '../i18n';
import { tEn } from './labels';

export const PALETTE = ['#0072b2', '#e69f00', '#009e73', '#cc79a7', '#d55e00', '#56b4e9', '#f0e442'];
type X = ScaleLinear<number, number> | ScaleLogarithmic<number, number>;
/** What every chart takes besides its data: the words (t, English by default) and the
 * locale numbers are written in (English by default). Titles and units come translated. */
export interface Words { t?: T; locale?: string }

function svgIn(el: SVGSVGElement, width: number, height: number, title: string) {
  const svg = select(el);
  svg.selectAll('*').remove();
  svg.attr('viewBox', `0 0 ${width} ${height}`).attr('width', '100%').attr('role', 'img').attr('aria-label', title);
  svg.append('title').text(title);
  return svg;
}

const WIDE = /[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6]/;
/* About how wide a label is at the charts' 11 px: 6.5 px a Latin character, 11 px a wide one. */
const textWidth = (s: string) => [...s].reduce((n, c) => n + (WIDE.test(c) ? 11 : 6.5), 0);

/** A label in lines that fit `room` px, broken after spaces (or between any two wide
 * characters, as Japanese and Chinese break); a word wider than the room is cut into pieces. */
export function wrapLabel(label: string, room: number): string[] {
  const tokens: string[] = [];
  for (const tk of label.match(/\S+\s*|\s+/g) ?? []) {
    const parts = WIDE.test(tk) ? (tk.match(new RegExp(`${WIDE.source}\\s*|[^\\s${WIDE.source.slice(1, -1)}]+\\s*|\\s+`, 'g')) ?? [tk]) : [tk];
    for (const p of parts) {
      if (textWidth(p.trimEnd()) <= room) { tokens.push(p); continue; }
      let piece = '';
      for (const c of p) { if (textWidth(piece + c) > room) { tokens.push(piece); piece = ''; } piece += c; }
      if (piece) tokens.push(piece);
    }
  }
  const lines: string[] = [];
  let cur = '';
  for (const tk of tokens) {
    if (cur && textWidth((cur + tk).trimEnd()) > room) { lines.push(cur.trimEnd()); cur = tk.trimStart(); } else cur += tk;
  }
  if (cur.trim() || !lines.length) lines.push(cur.trimEnd());
  return lines;
}

/* The left axis's labels in lines that fit left of the axis (each tick's whole label is its title). */
function wrapTicks(axis: ReturnType<typeof select<SVGGElement, unknown>>, room: number) {
  axis.selectAll<SVGTextElement, string>('.tick text').each(function (g) {
    const ls = wrapLabel(g, room);
    const text = select(this).text(null);
    ls.forEach((l, i) => text.append('tspan').attr('x', -9).attr('dy', i === 0 ? `${0.32 - (ls.length - 1) * 0.6}em` : '1.2em').text(l));
    text.attr('dy', null);
    if (ls.length > 1) text.append('title').text(g);
  });
}

function xScale(values: number[], lo: number, hi: number, forceLinear = false): X {
  const pos = values.filter((v) => v > 0);
  const min = Math.min(...pos); const max = Math.max(...values);
  if (!forceLinear && pos.length === values.length && pos.length > 1 && max / min > 30) return scaleLog().domain([min / 1.5, max * 1.5]).range([lo, hi]).nice();
  return scaleLinear().domain([0, (max || 1) * 1.1]).range([lo, hi]).nice();
}

export interface DotRow { group: string; label: string; value: number; mine?: boolean; series?: number }

/** Horizontal dot chart: one row per group, dots for each value; "mine" dots are big diamonds. */
export function dotChart(el: SVGSVGElement, rows: DotRow[], opts: { title: string; unit: string; width?: number } & Words) {
  const groups = [...new Set(rows.map((r) => r.group))];
  const width = opts.width ?? 720; const left = 190;
  // long group names wrap left of the axis (never cut at the chart's edge); rows grow to hold them
  const room = left - 14;
  const rowH = Math.max(34, 12 + 13 * Math.max(1, ...groups.map((g) => wrapLabel(g, room).length)));
  const height = 40 + groups.length * rowH + 30;
  const svg = svgIn(el, width, height, opts.title);
  const x = xScale(rows.map((r) => r.value), left, width - 20);
  const y = scaleBand<string>().domain(groups).range([20, 20 + groups.length * rowH]).padding(0.2);
  svg.append('g').attr('class', 'axis').attr('transform', `translate(0,${20 + groups.length * rowH})`).call(axisBottom(x as ScaleLinear<number, number>).ticks(6, '~s'));
  wrapTicks(svg.append('g').attr('class', 'axis').attr('transform', `translate(${left},0)`).call(axisLeft(y)), room);
  svg.append('text').attr('class', 'unit').attr('x', width - 20).attr('y', height - 4).attr('text-anchor', 'end').text(opts.unit);
  const g = svg.append('g');
  for (const r of rows) {
    const cx = x(r.value); const cy = (y(r.group) ?? 0) + y.bandwidth() / 2;
    const color = r.mine ? PALETTE[(r.series ?? 0) % PALETTE.length] : '#777';
    const node = r.mine
      ? g.append('path').attr('d', 'M0,-8L8,0L0,8L-8,0Z').attr('transform', `translate(${cx},${cy})`).attr('fill', color).attr('stroke', '#000').attr('class', 'mine')
      : g.append('circle').attr('cx', cx).attr('cy', cy).attr('r', 4.5).attr('fill', 'none').attr('stroke', color).attr('stroke-width', 1.5);
    node.append('title').text(`${r.group} · ${r.label}: ${fmt(r.value, opts.locale)} ${opts.unit}`);
  }
}

/** Horizontal grouped bars: rows × series; `text` values (like "<1") are drawn at `value` and labelled. */
export function groupedBars(el: SVGSVGElement, rows: { label: string; values: { series: string; value: number; text?: string }[] }[], opts: { title: string; unit: string; width?: number } & Words) {
  const series = [...new Set(rows.flatMap((r) => r.values.map((v) => v.series)))];
  const width = opts.width ?? 720; const left = 130; const rowH = 10 + series.length * 7;
  const height = 50 + rows.length * rowH;
  const svg = svgIn(el, width, height, opts.title);
  const x = scaleLinear().domain([0, Math.max(1, ...rows.flatMap((r) => r.values.map((v) => v.value))) * 1.08]).range([left, width - 40]).nice();
  const y = scaleBand<string>().domain(rows.map((r) => r.label)).range([30, 30 + rows.length * rowH]).padding(0.15);
  const inner = scaleBand<string>().domain(series).range([0, y.bandwidth()]);
  svg.append('g').attr('class', 'axis').attr('transform', `translate(0,${30 + rows.length * rowH})`).call(axisBottom(x).ticks(6));
  wrapTicks(svg.append('g').attr('class', 'axis').attr('transform', `translate(${left},0)`).call(axisLeft(y)), left - 14);
  const legend = svg.append('g').attr('transform', `translate(${left},12)`);
  series.forEach((s, i) => {
    legend.append('rect').attr('x', i * 130).attr('y', -8).attr('width', 10).attr('height', 10).attr('fill', PALETTE[i % PALETTE.length]);
    legend.append('text').attr('x', i * 130 + 14).attr('y', 1).text(s);
  });
  svg.append('text').attr('class', 'unit').attr('x', width - 40).attr('y', height - 4).attr('text-anchor', 'end').text(opts.unit);
  for (const r of rows) for (const v of r.values) {
    const i = series.indexOf(v.series);
    const yy = (y(r.label) ?? 0) + (inner(v.series) ?? 0);
    const bar = svg.append('rect').attr('x', left).attr('y', yy).attr('width', Math.max(1, x(v.value) - left)).attr('height', Math.max(1, inner.bandwidth() - 1)).attr('fill', PALETTE[i % PALETTE.length]);
    bar.append('title').text(`${r.label} · ${v.series}: ${v.text ?? fmt(v.value, opts.locale)} ${opts.unit}`);
    if (v.text) svg.append('text').attr('x', x(v.value) + 3).attr('y', yy + inner.bandwidth() - 1).attr('class', 'small').text(v.text);
  }
}

/** Line chart of the pointer-chase curve: x = working set (MiB, log2), y = ns per access.
 * The legend sits under the plot, one whole name a line (names are long: a CPU model, the
 * hypervisor and when the run was made), so no name is cut. */
export function curveChart(el: SVGSVGElement, lines: { name: string; points: { x: number; y: number }[]; dashed?: boolean; series: number }[], opts: { title: string; width?: number } & Words) {
  const t = opts.t ?? tEn;
  const width = opts.width ?? 720; const plotH = 300; const left = 60; const bottom = 40; const legendRow = 18;
  const height = plotH + 10 + lines.length * legendRow;
  const svg = svgIn(el, width, height, opts.title);
  const xs = [...new Set(lines.flatMap((l) => l.points.map((p) => p.x)))].sort((a, b) => a - b);
  const x = scalePoint<number>().domain(xs).range([left, width - 20]).padding(0.3);
  const y = scaleLinear().domain([0, Math.max(1, ...lines.flatMap((l) => l.points.map((p) => p.y))) * 1.1]).range([plotH - bottom, 15]).nice();
  svg.append('g').attr('class', 'axis').attr('transform', `translate(0,${plotH - bottom})`).call(axisBottom(x).tickFormat((d) => `${d} MiB`));
  svg.append('g').attr('class', 'axis').attr('transform', `translate(${left},0)`).call(axisLeft(y).ticks(6));
  svg.append('text').attr('class', 'unit').attr('x', 4).attr('y', 10).text(t('chart.nsPerAccess'));
  const path = line<{ x: number; y: number }>().x((p) => x(p.x) ?? 0).y((p) => y(p.y));
  lines.forEach((l, i) => {
    const c = PALETTE[l.series % PALETTE.length];
    svg.append('path').attr('d', path(l.points) ?? '').attr('fill', 'none').attr('stroke', c).attr('stroke-width', 2).attr('stroke-dasharray', l.dashed ? '5 4' : null);
    for (const p of l.points) svg.append('circle').attr('cx', x(p.x) ?? 0).attr('cy', y(p.y)).attr('r', 3).attr('fill', c).append('title').text(`${l.name}, ${p.x} MiB: ${fmt(p.y, opts.locale)} ns`);
    const lg = svg.append('g').attr('class', 'legend').attr('transform', `translate(${left},${plotH + 4 + i * legendRow})`);
    lg.append('line').attr('x1', 0).attr('x2', 18).attr('y1', 0).attr('y2', 0).attr('stroke', c).attr('stroke-width', 2).attr('stroke-dasharray', l.dashed ? '5 4' : null);
    lg.append('text').attr('x', 24).attr('y', 4).attr('class', 'small').text(l.name);
  });
}

/** label: a name written beside the dot (the class's teacher sees students' names). */
export interface StripPoint { group: string; value: number; mine: boolean; id: string; tip: string; label?: string }
/** A published figure on the class chart: a dashed line at lo (= hi), or a band from lo to
 * hi (a set of runs), labelled above the plot; title says whose figure it is. */
export interface RefMark { lo: number; hi: number; label: string; title: string }

/** Class distribution: per group a box (quartiles, median) and every upload as a dot; own dots ringed.
 * A group's label may have two lines ("\n" between them: the group, then the run size);
 * a line too long for the margin is shortened and the whole label is the tick's title.
 * refs: published figures drawn across every group, their labels in as many rows above the
 * plot as they need not to overlap. */
export function stripPlot(el: SVGSVGElement, points: StripPoint[], opts: { title: string; unit: string; width?: number; groupLabel?: (group: string) => string; refs?: RefMark[] } & Words) {
  const t = opts.t ?? tEn;
  const lines = (g: string) => (opts.groupLabel ?? ((x: string) => x))(g).split('\n');
  const show = (g: string) => lines(g).join(' · ');
  const groups = [...new Set(points.map((p) => p.group))].sort();
  const refs = opts.refs ?? [];
  // On a narrow screen the caller passes the width the chart has, so that the viewBox is
  // drawn at its own size and 11 px text stays 11 px (a 760-wide viewBox on a 390 px phone
  // drew it at about 5 px); the group names get a share of it.
  const width = opts.width ?? 760; const left = Math.min(200, Math.round(width * 0.38)); const rowH = 46; const labelRow = 13;
  const nameMax = Math.max(8, Math.floor((left - 14) / 6.5));
  if (!points.length) { svgIn(el, width, 30 + rowH + 30, opts.title).append('text').attr('x', 20).attr('y', 40).text(t('chart.noUploads')); return; }
  const x = xScale([...points.map((p) => p.value), ...refs.flatMap((r) => [r.lo, r.hi])], left, width - 20);
  // Each mark's label centred on it (kept inside the plot), in the first row where it
  // overlaps no other label (about 6 px a character at the chart's small size).
  const rowEnds: number[] = [];
  const placed = [...refs].sort((a, b) => a.lo - b.lo).map((r) => {
    const w = r.label.length * 6 + 8;
    const cx = Math.min(width - 20 - w / 2, Math.max(left + w / 2, x((r.lo + r.hi) / 2)));
    let row = rowEnds.findIndex((end) => end <= cx - w / 2);
    if (row < 0) { row = rowEnds.length; rowEnds.push(0); }
    rowEnds[row] = cx + w / 2;
    return { r, cx, row };
  });
  const top = 20 + rowEnds.length * labelRow;
  const height = top + 10 + Math.max(1, groups.length) * rowH + 30;
  const svg = svgIn(el, width, height, opts.title);
  const bottom = top + groups.length * rowH;
  const y = scaleBand<string>().domain(groups).range([top, bottom]).padding(0.15);
  svg.append('g').attr('class', 'axis').attr('transform', `translate(0,${bottom})`).call(axisBottom(x as ScaleLinear<number, number>).ticks(6, '~s'));
  const marks = svg.append('g').attr('class', 'refs');
  for (const { r, cx, row } of placed) {
    const m = marks.append('g').attr('class', 'ref-mark');
    m.append('title').text(r.title);
    if (r.hi > r.lo) m.append('rect').attr('x', x(r.lo)).attr('width', Math.max(1, x(r.hi) - x(r.lo))).attr('y', top).attr('height', bottom - top).attr('fill', 'rgba(230,159,0,0.18)');
    for (const v of r.hi > r.lo ? [r.lo, r.hi] : [r.lo]) m.append('line').attr('x1', x(v)).attr('x2', x(v)).attr('y1', top - 2).attr('y2', bottom).attr('stroke', '#b36b00').attr('stroke-width', 1.5).attr('stroke-dasharray', '4 3');
    m.append('text').attr('class', 'small ref-label').attr('x', cx).attr('y', 16 + row * labelRow).attr('text-anchor', 'middle').text(r.label);
  }
  const axis = svg.append('g').attr('class', 'axis group-axis').attr('transform', `translate(${left},0)`).call(axisLeft(y).tickFormat(() => ''));
  axis.selectAll<SVGTextElement, string>('.tick text').each(function (g) {
    const ls = lines(g); const text = select(this);
    ls.forEach((l, i) => text.append('tspan').attr('x', -9).attr('dy', i === 0 ? `${0.32 - (ls.length - 1) * 0.6}em` : '1.2em').text(l.length > nameMax ? l.slice(0, nameMax - 1) + '…' : l));
    text.attr('dy', null).append('title').text(show(g));
  });
  svg.append('text').attr('class', 'unit').attr('x', width - 20).attr('y', height - 4).attr('text-anchor', 'end').text(opts.unit);
  let seed = 7;
  const rand = () => { seed = (seed * 16807) % 2147483647; return seed / 2147483647; };
  for (const gname of groups) {
    const vs = points.filter((p) => p.group === gname).map((p) => p.value).sort((a, b) => a - b);
    const q = (f: number) => { const i = (vs.length - 1) * f; const lo = Math.floor(i); return vs[lo] + (vs[Math.ceil(i)] - vs[lo]) * (i - lo); };
    const top = y(gname) ?? 0; const bw = y.bandwidth();
    const box = svg.append('g').attr('class', 'box').attr('data-group', gname);
    box.append('line').attr('x1', x(vs[0])).attr('x2', x(vs[vs.length - 1])).attr('y1', top + bw / 2).attr('y2', top + bw / 2).attr('stroke', '#999');
    box.append('rect').attr('x', x(q(0.25))).attr('width', Math.max(1, x(q(0.75)) - x(q(0.25)))).attr('y', top + 4).attr('height', bw - 8).attr('fill', 'rgba(86,180,233,0.2)').attr('stroke', '#56b4e9');
    box.append('line').attr('x1', x(q(0.5))).attr('x2', x(q(0.5))).attr('y1', top + 2).attr('y2', top + bw - 2).attr('stroke', '#0072b2').attr('stroke-width', 2);
    box.append('title').text(t('chart.box', { group: show(gname), n: vs.length, median: fmt(q(0.5), opts.locale), unit: opts.unit }));
  }
  const dots = svg.append('g').attr('class', 'dots');
  for (const p of [...points].sort((a, b) => Number(a.mine) - Number(b.mine))) {
    const cy = (y(p.group) ?? 0) + y.bandwidth() / 2 + (rand() - 0.5) * (y.bandwidth() - 14);
    const c = dots.append('circle').attr('cx', x(p.value)).attr('cy', cy).attr('r', p.mine ? 7 : 3.5)
      .attr('fill', p.mine ? '#d55e00' : '#333').attr('stroke', p.mine ? '#000' : 'none').attr('stroke-width', 2)
      .attr('class', p.mine ? 'point mine' : 'point').attr('data-id', p.id);
    c.append('title').text(p.tip);
    if (p.mine) dots.append('text').attr('x', x(p.value) + 9).attr('y', cy - 6).attr('class', 'small you').text(t('chart.you'));
    if (p.label) dots.append('text').attr('x', x(p.value) + (p.mine ? 9 : 6)).attr('y', cy + (p.mine ? 12 : 3)).attr('class', 'small point-name').attr('data-id', p.id).text(p.label);
  }
}

/** A measured value for display: whole numbers with digit grouping from 1000 up (in the
 * given locale), three significant figures or so below. */
export function fmt(v: number, locale = 'en-US'): string {
  if (!Number.isFinite(v)) return '–';
  const a = Math.abs(v);
  return a >= 1000 ? Math.round(v).toLocaleString(locale) : a >= 10 ? v.toFixed(1) : a >= 1 ? v.toFixed(2) : v.toPrecision(2);
}

/* The "Your program" chart: one figure per measure, the five modes across, one bar per
 * trace in each mode (the traces side by side), each bar labelled with its value, a legend
 * naming the traces, the title and the unit drawn in the chart. Labels go in with .text()
 * (a program's name is data, never HTML); colour always comes with the legend's name. */
import { axisBottom, axisLeft } from 'd3-axis';
import { scaleBand, scaleLinear } from 'd3-scale';
import { select } from 'd3-selection';
import { fmt, PALETTE } from '../results/charts';

export interface ModeBars {
  /** the mode's name as shown */
  label: string;
  /** one value per trace, in the order of `series` */
  values: number[];
}

export function modeBars(el: SVGSVGElement, groups: ModeBars[], series: string[], opts: { title: string; unit: string; locale?: string; width?: number }) {
  const width = opts.width ?? 560;
  const legendRows = Math.ceil(series.length / 2);
  const top = 40 + legendRows * 16, left = 52, bottom = 30, plotH = 170;
  const height = top + plotH + bottom;
  const svg = select(el);
  svg.selectAll('*').remove();
  svg.attr('viewBox', `0 0 ${width} ${height}`).attr('width', '100%').attr('role', 'img').attr('aria-label', `${opts.title} (${opts.unit})`);
  svg.append('title').text(`${opts.title} (${opts.unit})`);
  svg.append('text').attr('class', 'chart-title').attr('x', 0).attr('y', 14).text(opts.title);
  series.forEach((s, i) => {
    const g = svg.append('g').attr('transform', `translate(${(i % 2) * (width / 2)},${30 + Math.floor(i / 2) * 16})`);
    g.append('rect').attr('width', 10).attr('height', 10).attr('y', -9).attr('fill', PALETTE[i % PALETTE.length]);
    g.append('text').attr('x', 14).attr('class', 'small').text(s.length > 40 ? s.slice(0, 39) + '…' : s);
  });
  const max = Math.max(0, ...groups.flatMap((g) => g.values));
  const x = scaleBand<string>().domain(groups.map((g) => g.label)).range([left, width - 8]).padding(0.18);
  const inner = scaleBand<number>().domain(series.map((_, i) => i)).range([0, x.bandwidth()]).padding(0.08);
  const y = scaleLinear().domain([0, max > 0 ? max * 1.15 : 1]).range([top + plotH, top]).nice();
  svg.append('g').attr('class', 'axis').attr('transform', `translate(0,${top + plotH})`).call(axisBottom(x));
  svg.append('g').attr('class', 'axis').attr('transform', `translate(${left},0)`).call(axisLeft(y).ticks(5, max >= 10000 ? '~s' : '~g'));
  svg.append('text').attr('class', 'unit small').attr('x', left).attr('y', top - 6).text(opts.unit);
  for (const g of groups) {
    g.values.forEach((v, i) => {
      const bx = (x(g.label) ?? 0) + (inner(i) ?? 0), by = y(Math.max(0, v));
      const bar = svg.append('rect').attr('x', bx).attr('y', by).attr('width', inner.bandwidth())
        .attr('height', Math.max(v > 0 ? 1 : 0, top + plotH - by)).attr('fill', PALETTE[i % PALETTE.length])
        .attr('data-mode', g.label).attr('data-series', i);
      bar.append('title').text(`${series[i]} · ${g.label}: ${fmt(v, opts.locale)} ${opts.unit}`);
      if (inner.bandwidth() >= 14) {
        svg.append('text').attr('class', 'small bar-value').attr('text-anchor', 'middle')
          .attr('x', bx + inner.bandwidth() / 2).attr('y', by - 3).text(fmt(v, opts.locale));
      }
    });
  }
}

/* Host physical memory as the frames one access touches, coloured by role, with the
 * current step's frame outlined. D3 owns the SVG; React only hands it the trace. */
import { useEffect, useMemo, useRef } from 'react';
import { useTranslation } from 'react-i18next';
import { select } from 'd3-selection';
import type { AccessResult, Result } from '../../../wasm-core/js/types';
import { sizeWords } from './size';
import { currentPfn, framesOf, roleWords, type Frame, type FrameRole } from '../model/memory';

const COLS = 6;
const W = 112;
const H = 46;
const GAP = 8;

export interface MemoryProps { result: Result; access: AccessResult; step: number }

export function MemoryView({ result, access, step }: MemoryProps) {
  const { t } = useTranslation('views');
  const svgRef = useRef<SVGSVGElement>(null);
  const frames = useMemo(() => framesOf(result, access), [result, access]);
  const cur = currentPfn(access, step);
  const roles = [...new Set(frames.map((f) => f.role))] as FrameRole[];

  useEffect(() => {
    const svg = select(svgRef.current!);
    const rows = Math.max(1, Math.ceil(frames.length / COLS));
    svg.attr('viewBox', `0 0 ${COLS * (W + GAP)} ${rows * (H + GAP)}`);
    const g = svg.selectAll<SVGGElement, Frame>('g.frame').data(frames, (d) => d.pfn.toString());
    g.exit().remove();
    const enter = g.enter().append('g').attr('class', 'frame');
    enter.append('rect').attr('width', W).attr('height', H).attr('rx', 4);
    enter.append('text').attr('class', 'addr').attr('x', 6).attr('y', 18);
    enter.append('text').attr('class', 'role').attr('x', 6).attr('y', 36);
    enter.append('title');
    const all = enter.merge(g);
    all.attr('transform', (_d, i) => `translate(${(i % COLS) * (W + GAP)},${Math.floor(i / COLS) * (H + GAP)})`)
      .attr('data-pfn', (d) => '0x' + d.pfn.toString(16))
      .attr('data-role', (d) => d.role);
    all.select('rect').attr('class', (d) => `role-${d.role}`);
    all.select('text.addr').text((d) => '0x' + (d.pfn << 12n).toString(16));
    all.select('text.role').text((d) => `${t(`memory.roleShort.${d.role}`)}${d.steps.length ? ' · ' + d.steps.length + '×' : ''}`);
    all.select('title').text((d) => t('memory.frameTitle', { role: roleWords(d.role, t), hpa: '0x' + (d.pfn << 12n).toString(16), steps: d.steps.join(', ') || t('memory.noSteps') }));
  }, [frames, t]);

  useEffect(() => {
    select(svgRef.current!).selectAll<SVGGElement, Frame>('g.frame')
      .classed('current', (d) => cur !== null && d.pfn === cur)
      .classed('touched', (d) => d.steps.some((n) => n <= step) || (d.role === 'data' && step >= access.steps.length))
      .attr('aria-current', (d) => (cur !== null && d.pfn === cur ? 'true' : null));
  }, [frames, cur, step, access]);

  return (
    <section className="memory" aria-label={t('memory.label')}>
      <h3>{t('memory.title')} <span className="muted">({frames.length})</span></h3>
      <ul className="legend">
        {roles.map((r) => <li key={r}><span className={`swatch role-${r}`} />{roleWords(r, t)}</li>)}
      </ul>
      {frames.length === 0 ? <p className="muted">{t('memory.none')}</p> : null}
      <svg ref={svgRef} className="memsvg" role="img" aria-label={t('memory.frames', { count: frames.length })} />
      {result.flat_table_bytes ? <p className="muted">{t('memory.flatSpan', { size: sizeWords(result.flat_table_bytes) })}</p> : null}
    </section>
  );
}

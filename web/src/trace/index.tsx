/* The "Your program" panel as the views see it: loaded on demand (its charts, the trace
 * reader and the worker stay out of the first page's bundle). One line in CompareView and
 * in the Results tab: <YourProgram where="compare" />. */
import { lazy, Suspense } from 'react';
import type { TracePanelProps } from './TracePanel';

const Panel = lazy(() => import('./TracePanel').then((m) => ({ default: m.TracePanel })));

export function YourProgram(props: TracePanelProps) {
  return <Suspense fallback={null}><Panel {...props} /></Suspense>;
}

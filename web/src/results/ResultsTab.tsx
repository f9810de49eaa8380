/* The Results tab as the app shell sees it: loaded on demand so that ajv, the schema and the
 * charts stay out of the first page's bundle. */
import { lazy, Suspense } from 'react';

const View = lazy(() => import('./ResultsView').then((m) => ({ default: m.ResultsView })));

export function ResultsTab() {
  return <Suspense fallback={<p className="muted">Loading the results view…</p>}><View /></Suspense>;
}

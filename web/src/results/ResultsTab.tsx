/* The Results tab as the app shell sees it: loaded on demand so that ajv, the schema and the
 * charts stay out of the first page's bundle. */
import { lazy, Suspense } from 'react';
import { useTranslation } from 'react-i18next';

const View = lazy(() => import('./ResultsView').then((m) => ({ default: m.ResultsView })));

/** What the tab shows while its code loads. */
export function ResultsLoading() {
  const { t } = useTranslation('results');
  return <p className="muted">{t('loading')}</p>;
}

export function ResultsTab() {
  return <Suspense fallback={<ResultsLoading />}><View /></Suspense>;
}

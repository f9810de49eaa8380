/* A translated message with someone else's words in it: the browser's or the class server's
 * own message (English, untranslated) where the translation says {{error}}, marked
 * lang="en" so that screen readers and the language tests know it for what it is. */
import type { T } from '../i18n';
import { around } from './labels';

/** key: the message; raw: someone else's words for its {{error}}; rawKey: our own words
 * for it instead (a key of the same namespace). */
export interface Saying { key: string; values?: Record<string, unknown>; raw?: string; rawKey?: string }

/** How an error caught from the store or the server fills a message's {{error}}. */
export function because(e: unknown): Pick<Saying, 'raw' | 'rawKey'> {
  const key = e instanceof Error ? (e as { key?: unknown }).key : undefined; // StoreError's
  return typeof key === 'string' ? { rawKey: key } : { raw: e instanceof Error ? e.message : String(e) };
}

export function Said({ t, say }: { t: T; say: Saying }) {
  if (say.rawKey !== undefined) return <>{t(say.key, { ...say.values, error: t(say.rawKey) })}</>;
  if (say.raw === undefined) return <>{t(say.key, say.values)}</>;
  const [before, after] = around(t, say.key, say.values);
  return <>{before}<span lang="en">{say.raw}</span>{after}</>;
}

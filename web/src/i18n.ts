/* UI strings in English, Japanese and Chinese (i18next). Each namespace is one JSON file
 * per language under locales/<lang>/<namespace>.json:
 *   translation  the shell and the lessons
 *   views        walk, memory, compare, caches, controls, playground and the step words
 *   exercises    the lessons' generated exercises (exercises.ts builds Msg objects)
 *   results      the Results tab and the class panel
 *   examples     the bundled example scenarios' descriptions (English = the files')
 *   live         the Live guest tab
 *   bochs        the "verified on Bochs" badge and reference list (views/BochsVerified.tsx)
 *   trace        the "Your program" panel (trace replay; web/src/trace/)
 * English is complete by definition; a key missing in another language falls back to
 * English (never to blank), and src/test/i18n.test.ts fails the build when one is missing.
 * The chosen language is remembered in localStorage and can be given in the URL. */
import i18next from 'i18next';
import { initReactI18next } from 'react-i18next';
import type { Lang } from './lessons/langs';

export const NAMESPACES = ['translation', 'views', 'examples', 'exercises', 'results', 'live', 'bochs', 'trace'] as const;
export type Namespace = (typeof NAMESPACES)[number];

const files = import.meta.glob<{ default: Record<string, unknown> }>('./locales/*/*.json', { eager: true });
export const resources: Record<string, Record<string, Record<string, unknown>>> = {};
for (const [path, mod] of Object.entries(files)) {
  const m = /\.\/locales\/(\w+)\/(\w+)\.json$/.exec(path);
  if (!m) continue;
  (resources[m[1]] ??= {})[m[2]] = mod.default;
}

export const LANG_NAMES: Record<Lang, string> = { en: 'English', ja: '日本語', zh: '中文' };

export function savedLang(): Lang {
  try {
    const l = localStorage.getItem('vmemlab-lang');
    if (l === 'en' || l === 'ja' || l === 'zh') return l;
  } catch { /* storage may be off */ }
  const nav = typeof navigator !== 'undefined' ? navigator.language : 'en';
  return nav.startsWith('ja') ? 'ja' : nav.startsWith('zh') ? 'zh' : 'en';
}

export function saveLang(l: Lang) {
  try { localStorage.setItem('vmemlab-lang', l); } catch { /* storage may be off */ }
  void i18next.changeLanguage(l);
}

// The document's language follows the UI's: screen readers read it right, and the browser
// picks Japanese or Chinese glyph forms for the Han characters they share.
i18next.on('languageChanged', (lng) => {
  if (typeof document !== 'undefined') {
    document.documentElement.lang = lng === 'zh' ? 'zh-Hans' : lng;
    document.title = i18next.t('docTitle', { lng });
  }
});

void i18next.use(initReactI18next).init({
  resources, lng: savedLang(), fallbackLng: 'en', ns: [...NAMESPACES], defaultNS: 'translation',
  interpolation: { escapeValue: false }, returnEmptyString: false, initAsync: false,
});

/** A translate function as the pure model code takes it (views pass their hook's t). */
export type T = (key: string, options?: Record<string, unknown>) => string;
/** English from one namespace, for code and tests that run without a language chosen. */
export const englishFor = (ns: Namespace): T => (key, options) => i18next.getFixedT('en', ns)(key, options ?? {}) as string;
/** English from the views namespace (the model code's default). */
export const tEn: T = englishFor('views');

export default i18next;

/* The lessons' languages, apart from the lessons: the app shell needs the list, and
 * importing content.ts for it would put every lesson's text into the first page's bundle
 * (content.ts bundles all lessons of all languages for the lazily loaded Lessons tab). */
export type Lang = 'en' | 'ja' | 'zh';
export const LANGS: Lang[] = ['en', 'ja', 'zh'];

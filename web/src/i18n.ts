/* UI strings in English, Japanese and Chinese (i18next): the shell and the lessons so far.
 * Missing keys fall back to English, never to blank; the chosen language is remembered. */
import i18next from 'i18next';
import { initReactI18next } from 'react-i18next';
import type { Lang } from './lessons/content';

const resources = {
  en: { translation: {
    lessons: 'Lessons', index: 'All lessons', done: 'done', markDone: 'Mark as done', prerequisites: 'Read first',
    notTranslated: 'This lesson is not translated into {{lang}} yet: showing the English text.',
    exercise: 'Exercise', check: 'Check', newExercise: 'Another one', hint: 'Hint', showWalk: 'Show the walk',
    correct: 'Correct.', wrong: 'Not quite: the engine says {{expected}}.', answer: 'Your answer', language: 'Language',
    progress: '{{done}} of {{total}} lessons done', seed: 'seed', openInWalk: 'Open in the walk view',
    tab: { walk: 'Walk', memory: 'Memory', compare: 'Compare', playground: 'Playground', results: 'Results', live: 'Live guest', lessons: 'Lessons' },
    keys: 'Keys: ← → step · Space play/pause · Home/End', scenario: 'scenario', themeTo: 'switch to {{theme}} theme',
  } },
  ja: { translation: {
    lessons: 'レッスン', index: 'レッスン一覧', done: '完了', markDone: '完了にする', prerequisites: '先に読むもの',
    notTranslated: 'このレッスンはまだ{{lang}}に翻訳されていません。英語の本文を表示しています。',
    exercise: '演習', check: '答え合わせ', newExercise: '別の問題', hint: 'ヒント', showWalk: 'ウォークを見る',
    correct: '正解です。', wrong: '惜しい。エンジンの答えは {{expected}} です。', answer: 'あなたの答え', language: '言語',
    progress: '{{total}} レッスン中 {{done}} 完了', seed: 'シード', openInWalk: 'ウォーク画面で開く',
    tab: { walk: 'ウォーク', memory: 'メモリ', compare: '比較', playground: 'プレイグラウンド', results: '測定結果', live: 'ライブゲスト', lessons: 'レッスン' },
    keys: 'キー：← → ステップ · Space 再生/停止 · Home/End', scenario: 'シナリオ', themeTo: '{{theme}}テーマに切り替え',
  } },
  zh: { translation: {
    lessons: '课程', index: '全部课程', done: '已完成', markDone: '标记为完成', prerequisites: '先修',
    notTranslated: '本课尚未翻译成{{lang}}，正在显示英文原文。',
    exercise: '练习', check: '检查', newExercise: '换一题', hint: '提示', showWalk: '显示遍历过程',
    correct: '正确。', wrong: '不对：引擎给出的答案是 {{expected}}。', answer: '你的答案', language: '语言',
    progress: '已完成 {{done}} / {{total}} 课', seed: '种子', openInWalk: '在遍历视图中打开',
    tab: { walk: '遍历', memory: '内存', compare: '对比', playground: '实验场', results: '测量结果', live: '实时客户机', lessons: '课程' },
    keys: '按键：← → 单步 · 空格 播放/暂停 · Home/End', scenario: '场景', themeTo: '切换到{{theme}}主题',
  } },
};

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

void i18next.use(initReactI18next).init({
  resources, lng: savedLang(), fallbackLng: 'en', interpolation: { escapeValue: false }, returnEmptyString: false,
});

export default i18next;

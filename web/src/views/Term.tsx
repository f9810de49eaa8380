/* A glossary term as the views show it: the word, with its definition in the current
 * language on hover and keyboard focus (the same markup the lessons' glossary links use). */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import glossary from '../../../lessons/glossary.json';

export type TermId = keyof typeof glossary.terms;

const LABELS: Partial<Record<TermId, string>> = { eptp: 'EPTP', ncr3: 'nCR3', pte: 'PTE', tlb: 'TLB', pwc: 'PWC', ntlb: 'nTLB', vmfunc: 'VMFUNC', vmcall: 'VMCALL' };

export function definition(id: TermId, lang: string): string {
  const d = glossary.terms[id] as Record<string, string>;
  return d[lang] ?? d.en;
}

export function Term({ id, children }: { id: TermId; children?: ReactNode }) {
  const { i18n } = useTranslation();
  return (
    <abbr className="term" tabIndex={0} data-term={id} title={definition(id, i18n.language)}>
      {children ?? LABELS[id] ?? id}
    </abbr>
  );
}

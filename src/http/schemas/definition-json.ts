/**
 * The lookup's answer as JSON, exactly as JSON.stringify writes it, with the definition's JSON text
 * kept: escaping a definition (its line breaks) costs more than the rest of the answer, and the same
 * few definitions are answered over and over (the definition cache returns the same string each time).
 */

import { Kept } from '../../domain/kept.js';

/** Definitions whose JSON text is kept (a tenth of the definition cache's memory). */
const jsonOfDefinition = new Kept<string, string>(1024);

const FIELDS = ['keyword', 'definition', 'credits'] as const;

export function serializeDefinitionResult(data: unknown): string {
  if (data === null || typeof data !== 'object' || !hasOnlyFields(data)) return JSON.stringify(data);
  const { keyword, definition, credits } = data as { keyword: unknown; definition: unknown; credits: unknown };
  // Anything JSON.stringify would write otherwise (a number it writes as null, a toJSON of its own) goes to it.
  if (typeof keyword !== 'string' || typeof definition !== 'string' || typeof credits !== 'number' || !Number.isFinite(credits) || 'toJSON' in data) {
    return JSON.stringify(data);
  }
  return `{"keyword":${JSON.stringify(keyword)},"definition":${definitionJson(definition)},"credits":${credits}}`;
}

/** The object's enumerable fields (own and inherited) are exactly keyword, definition, credits, in that order. */
function hasOnlyFields(data: object): boolean {
  let i = 0;
  for (const name in data) if (name !== FIELDS[i++]) return false;
  return i === FIELDS.length;
}

function definitionJson(definition: string): string {
  return jsonOfDefinition.get(definition) ?? jsonOfDefinition.add(definition, JSON.stringify(definition));
}

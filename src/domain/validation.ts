/**
 * Request rules are zod schemas, written once in the domain and used by every door: the domain
 * functions parse with them (GraphQL and the workers come through those), and REST routes declare
 * them, so the same rules validate requests and describe them in the OpenAPI document.
 *
 * A schema's messages are rules relative to the field they are about ("must be a string"); the field
 * is named from the issue's path here, so that an entry's message names its index (`prompts[3] must
 * be a string`) however deep the rule sits.
 */
import { z } from 'zod';
import { invalid, type AppError } from './errors.js';

export interface Issue {
  readonly path: readonly PropertyKey[];
  readonly message: string;
}

/**
 * The field an issue is about: `prompts[3]` for path [3] of the value named 'prompts'. A request body
 * (`root` 'body') names its fields alone (`prompts[3]`, `origins`) and itself `body`.
 */
export function fieldOf(path: readonly PropertyKey[], root: string): string {
  if (path.length === 0) return root || 'body';
  let field = root === 'body' ? '' : root;
  for (const part of path) field = typeof part === 'number' ? `${field}[${part}]` : field ? `${field}.${String(part)}` : String(part);
  return field;
}

/**
 * The issue the contract reports: the first field in the schema's order, and within that field its
 * own rule (missing, not an array, too many entries) before any entry's.
 */
export function firstIssue<T extends Issue>(issues: readonly T[]): T {
  const [first] = issues;
  if (!first) throw new Error('firstIssue: no issues');
  const sameField = issues.filter((i) => i.path[0] === first.path[0]);
  return sameField.reduce((best, i) => (i.path.length < best.path.length ? i : best), sameField[0]!);
}

/** The 400 the contract wants for a failed parse: `invalid_request`, naming the field and the rule. */
export function invalidFrom(issues: readonly Issue[], root: string): AppError {
  const issue = firstIssue(issues);
  const field = fieldOf(issue.path, root);
  return invalid(field, `${field} ${issue.message}`);
}

/**
 * Cheap tests, per schema, that are true only of values the schema accepts as they are (its output
 * equals its input): a charging request checks its input at every door it passes (the REST body, then
 * the domain), and on the hot path the common case need not go through zod twice. A value the test
 * does not pass is parsed by zod as before, so every error and its message stays zod's.
 */
const quickAccepts = new WeakMap<z.ZodType, (input: unknown) => boolean>();

/** Registers `accepts` for `schema` (see quickAccepts); returns the schema. */
export function withQuickAccept<S extends z.ZodType>(schema: S, accepts: (input: unknown) => boolean): S {
  quickAccepts.set(schema, accepts);
  return schema;
}

/** The schema's quick test, if it has one. */
export function quickAcceptOf(schema: unknown): ((input: unknown) => boolean) | undefined {
  return schema instanceof z.ZodType ? quickAccepts.get(schema) : undefined;
}

/** Parses `input` with a domain schema, or throws the contract's 400. */
export function parseWith<S extends z.ZodType>(schema: S, input: unknown, root: string): z.output<S> {
  if (quickAccepts.get(schema)?.(input)) return input as z.output<S>;
  const result = schema.safeParse(input);
  if (!result.success) throw invalidFrom(result.error.issues, root);
  return result.data;
}

/** Characters, not UTF-16 code units: an emoji counts once (JSON Schema's maxLength counts the same way). */
export function characters(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

/**
 * A string that is not empty after trimming and at most `max` characters once trimmed, with the
 * contract's messages. The document states the same limits (`pattern` \S, `maxLength`).
 */
export function trimmedText(max: number, notAString: string | ((input: unknown) => string), description: string) {
  return (
    z
      .string({ error: typeof notAString === 'string' ? notAString : (iss) => notAString(iss.input) })
      // \S is exactly what String.prototype.trim leaves: not empty after trimming.
      .regex(/\S/, 'must not be empty')
      .check((ctx) => {
        const n = characters(ctx.value.trim());
        if (n > max) ctx.issues.push({ code: 'custom', message: `must be at most ${max} characters (got ${n})`, input: ctx.value });
      })
      .meta({ maxLength: max, description })
  );
}

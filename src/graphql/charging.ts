import { Kind, type DocumentNode, type FragmentDefinitionNode, type OperationDefinitionNode, type SelectionSetNode } from 'graphql';

/** The mutations that charge credits: each one, aliased or not, is a request of its own for the rate limit. */
const CHARGING_FIELDS: ReadonlySet<string> = new Set(['lookup', 'generate']);

/**
 * How many charging fields an operation runs: its root selection set, through inline fragments and
 * fragment spreads (a spread of a fragment already counted is not counted again, as graphql-js runs it
 * once). Queries and subscriptions charge nothing. The document is already validated.
 */
export function chargingFields(document: DocumentNode, operation: OperationDefinitionNode): number {
  if (operation.operation !== 'mutation') return 0;
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  const seen = new Set<string>();
  const count = (set: SelectionSetNode): number => {
    let n = 0;
    for (const s of set.selections) {
      if (s.kind === Kind.FIELD) n += CHARGING_FIELDS.has(s.name.value) ? 1 : 0;
      else if (s.kind === Kind.INLINE_FRAGMENT) n += count(s.selectionSet);
      else if (!seen.has(s.name.value)) {
        seen.add(s.name.value);
        const fragment = fragments.get(s.name.value);
        if (fragment) n += count(fragment.selectionSet);
      }
    }
    return n;
  };
  return count(operation.selectionSet);
}

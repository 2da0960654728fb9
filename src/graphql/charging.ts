import { Kind, type DocumentNode, type FragmentDefinitionNode, type OperationDefinitionNode, type SelectionSetNode } from 'graphql';

/** The mutations that charge credits: each one, aliased or not, is a request of its own for the rate limit. */
const CHARGING_FIELDS: ReadonlySet<string> = new Set(['lookup', 'generate']);

/**
 * Counted once per operation node: Apollo's document store (HTTP) hands back the same parsed document
 * for the same query text, so an operation sent again is not walked again (issue 18).
 */
const counted = new WeakMap<OperationDefinitionNode, number>();

/**
 * How many charging fields an operation runs: its root selection set, through inline fragments and
 * fragment spreads (a spread of a fragment already counted is not counted again, as graphql-js runs it
 * once). Queries and subscriptions charge nothing. The document is already validated.
 */
export function chargingFields(document: DocumentNode, operation: OperationDefinitionNode): number {
  if (operation.operation !== 'mutation') return 0;
  let n = counted.get(operation);
  if (n === undefined) {
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
    n = countIn(operation.selectionSet, fragments, new Set());
    counted.set(operation, n);
  }
  return n;
}

function countIn(set: SelectionSetNode, fragments: ReadonlyMap<string, FragmentDefinitionNode>, seen: Set<string>): number {
  let n = 0;
  for (const s of set.selections) {
    if (s.kind === Kind.FIELD) n += CHARGING_FIELDS.has(s.name.value) ? 1 : 0;
    else if (s.kind === Kind.INLINE_FRAGMENT) n += countIn(s.selectionSet, fragments, seen);
    else if (!seen.has(s.name.value)) {
      seen.add(s.name.value);
      const fragment = fragments.get(s.name.value);
      if (fragment) n += countIn(fragment.selectionSet, fragments, seen);
    }
  }
  return n;
}

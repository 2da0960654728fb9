import { Kind, type DocumentNode, type FragmentDefinitionNode, type OperationDefinitionNode, type SelectionSetNode } from 'graphql';
import type { KeyPermission } from '../domain/keys/permissions.js';
import { OPERATIONS, operationOfGraphQLField, type OperationName } from '../domain/operations/catalog.js';

/** What an operation's root fields ask, as the operation catalog prices and permits them. */
export interface RootFields {
  /** The catalog operation of each root field run (each alias is a field of its own), in document order. */
  readonly operations: readonly OperationName[];
  /** Root fields the catalog does not know (introspection's own `__schema`, `__type`, `__typename` aside). */
  readonly unknown: readonly string[];
  /** The distinct key permissions the fields need. */
  readonly permissions: readonly KeyPermission[];
  /** Units of the per-key rate limit the fields count (every charging field: 15 aliased `lookup`s are 15). */
  readonly rateUnits: number;
}

/**
 * Read once per operation node: Apollo's document store (HTTP) and the admission's own cache (WebSocket)
 * hand back the same parsed document for the same query text, so an operation sent again is not walked
 * again (issue 18).
 */
const read = new WeakMap<OperationDefinitionNode, RootFields>();

/**
 * The root fields of an operation: its selection set, through inline fragments and fragment spreads (a
 * spread of a fragment already read is not read again, as graphql-js runs it once). The document is
 * already validated.
 */
export function rootFields(document: DocumentNode, operation: OperationDefinitionNode): RootFields {
  let fields = read.get(operation);
  if (fields === undefined) {
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
    const names: string[] = [];
    collect(operation.selectionSet, fragments, new Set(), names);
    const operations: OperationName[] = [];
    const unknown: string[] = [];
    for (const name of names) {
      const op = operationOfGraphQLField(name);
      if (op) operations.push(op);
      else if (!name.startsWith('__')) unknown.push(name);
    }
    fields = {
      operations,
      unknown,
      permissions: [...new Set(operations.map((op) => OPERATIONS[op].permission))],
      rateUnits: operations.reduce((n, op) => n + OPERATIONS[op].rateUnits, 0),
    };
    read.set(operation, fields);
  }
  return fields;
}

function collect(set: SelectionSetNode, fragments: ReadonlyMap<string, FragmentDefinitionNode>, seen: Set<string>, into: string[]): void {
  for (const s of set.selections) {
    if (s.kind === Kind.FIELD) into.push(s.name.value);
    else if (s.kind === Kind.INLINE_FRAGMENT) collect(s.selectionSet, fragments, seen, into);
    else if (!seen.has(s.name.value)) {
      seen.add(s.name.value);
      const fragment = fragments.get(s.name.value);
      if (fragment) collect(fragment.selectionSet, fragments, seen, into);
    }
  }
}

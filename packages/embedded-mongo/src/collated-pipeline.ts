// Aggregation stages under a non-simple collation. mingo, which runs the stages, compares strings by
// code unit (its `collation` option reaches only its $sort, and only for top-level strings), so the
// stages that compare strings run here instead: $match and $sort with the collator, $group (and
// $sortByCount, which is a $group and a $sort) grouping keys the collator holds equal, $facet running
// each sub-pipeline by these rules. A stage or expression that would compare strings in mingo is
// refused with NotImplemented before anything runs (README: Known differences); stages that compare
// nothing run in mingo as usual.
import { Aggregator } from 'mingo';
import { compareValues, isPlainObject, type Doc, type StringCompare } from './bson-order.js';
import { comparingOperator, holdsString, notWithCollation, type Collator } from './collation.js';
import { docComparator, parseSort } from './collection.js';
import { compileFilter, MINGO_OPTIONS } from './matcher.js';

type Step = (docs: Doc[]) => Doc[];
type Resolver = (coll: string) => Doc[];

// Stages that compare no values: mingo runs them as written.
const NOT_COMPARING = new Set(['$limit', '$skip', '$count', '$sample', '$unwind', '$unset', '$out', '$listLocalSessions']);
// Stages whose only comparisons are those of the expressions they hold.
const EXPRESSION_STAGES = new Set(['$project', '$addFields', '$set', '$replaceRoot', '$replaceWith', '$redact', '$documents']);

/**
 * Compiles pipeline stages to run under `collator`; throws NotImplemented for a stage that would
 * compare strings by code unit. The result runs the stages on a batch of documents.
 */
export function planCollated(stages: Doc[], collator: Collator, resolver?: Resolver): Step {
  const steps: Step[] = [];
  let pending: Doc[] = [];
  const flush = (): void => {
    if (pending.length === 0) return;
    const agg = new Aggregator(pending, { ...MINGO_OPTIONS, collectionResolver: resolver });
    steps.push((docs) => agg.run(docs) as Doc[]);
    pending = [];
  };
  for (const stage of stages) {
    const [name] = Object.keys(stage);
    const spec = stage[name];
    const own = ownStep(name, spec, collator, resolver);
    if (own) {
      flush();
      steps.push(own);
      continue;
    }
    checkStage(name, spec);
    pending.push(stage);
  }
  flush();
  return (docs) => steps.reduce((out, step) => step(out), docs);
}

/** The stages run here rather than in mingo; undefined for the others (and for a malformed spec, which mingo refuses). */
function ownStep(name: string, spec: unknown, collator: Collator, resolver: Resolver | undefined): Step | undefined {
  const strings = collator.compare;
  switch (name) {
    case '$match': {
      if (!isPlainObject(spec)) return undefined;
      const pred = compileFilter(spec, strings);
      return (docs) => docs.filter(pred);
    }
    case '$sort': {
      if (!isPlainObject(spec)) return undefined;
      const cmp = docComparator(parseSort(spec), strings);
      return (docs) => [...docs].sort(cmp);
    }
    case '$group':
      return isPlainObject(spec) && '_id' in spec ? groupStep(spec, strings) : undefined;
    case '$sortByCount': {
      // mongod's definition of the stage: a $group counting each key, then a descending $sort on the count.
      if (!(typeof spec === 'string' && spec.startsWith('$')) && !isPlainObject(spec)) return undefined;
      const group = groupStep({ _id: spec, count: { $sum: 1 } }, strings);
      const cmp = docComparator(parseSort({ count: -1 }), strings);
      return (docs) => group(docs).sort(cmp);
    }
    case '$facet': {
      if (!isPlainObject(spec) || !Object.values(spec).every(Array.isArray)) return undefined;
      const facets = Object.entries(spec).map(([field, sub]) => [field, planCollated(sub as Doc[], collator, resolver)] as const);
      return (docs) => [Object.fromEntries(facets.map(([field, run]) => [field, run(docs)]))];
    }
    default:
      return undefined;
  }
}

/**
 * $group under a collation: documents whose keys the collator holds equal form one group, whose `_id`
 * is the key of its first document (as mongod keeps the first key it saw); mingo computes the keys and
 * then the accumulators of each group.
 */
function groupStep(spec: Doc, strings: StringCompare): Step {
  const { _id: key, ...accumulators } = spec;
  const comparing = comparingOperator(key) ?? comparingOperator(accumulators);
  if (comparing) throw notWithCollation(`${comparing} in $group`);
  const keysOf = new Aggregator([{ $replaceWith: { k: key } }], MINGO_OPTIONS);
  const accumulate = new Aggregator([{ $group: { _id: null, ...accumulators } }], MINGO_OPTIONS);
  return (docs) => {
    if (docs.length === 0) return [];
    // A missing key groups as null, as on mongod.
    const keys = (keysOf.run(docs) as Doc[]).map((d) => d.k ?? null);
    const order = keys.map((_, i) => i).sort((a, b) => compareValues(keys[a], keys[b], strings) || a - b);
    const groups: number[][] = [];
    for (const i of order) {
      const last = groups[groups.length - 1];
      if (last && compareValues(keys[last[0]], keys[i], strings) === 0) last.push(i);
      else groups.push([i]);
    }
    groups.sort((a, b) => a[0] - b[0]);
    return groups.map((members) => {
      const [out] = accumulate.run(members.map((i) => docs[i])) as Doc[];
      return { ...out, _id: keys[members[0]] };
    });
  };
}

/** Refuses a stage mingo would run comparing strings by code unit. */
function checkStage(name: string, spec: any): void {
  if (NOT_COMPARING.has(name)) return;
  if (EXPRESSION_STAGES.has(name)) {
    const comparing = comparingOperator(spec);
    if (comparing) throw notWithCollation(`${comparing} in ${name}`);
    return;
  }
  const comparing = isPlainObject(spec) ? comparingOperator(spec.output) : undefined;
  switch (name) {
    case '$bucket':
      // Values fall into boundaries by BSON order: only string boundaries make the collation count.
      if (isPlainObject(spec) && (holdsString(spec.boundaries) || holdsString(spec.default))) throw notWithCollation('$bucket with string boundaries');
      if (isPlainObject(spec) && comparingOperator(spec.groupBy)) throw notWithCollation(`${comparingOperator(spec.groupBy)} in $bucket`);
      if (comparing) throw notWithCollation(`${comparing} in $bucket`);
      return;
    case '$setWindowFields':
      if (isPlainObject(spec) && (spec.partitionBy !== undefined || spec.sortBy !== undefined)) throw notWithCollation('$setWindowFields with partitionBy or sortBy');
      if (comparing) throw notWithCollation(`${comparing} in $setWindowFields`);
      return;
    case '$fill':
      if (isPlainObject(spec) && (spec.partitionBy !== undefined || spec.partitionByFields !== undefined || spec.sortBy !== undefined)) {
        throw notWithCollation('$fill with partitionBy, partitionByFields or sortBy');
      }
      if (comparing) throw notWithCollation(`${comparing} in $fill`);
      return;
    case '$densify':
      if (isPlainObject(spec) && Array.isArray(spec.partitionByFields) && spec.partitionByFields.length > 0) throw notWithCollation('$densify with partitionByFields');
      return;
    case '$unionWith':
      if (isPlainObject(spec) && Array.isArray(spec.pipeline) && spec.pipeline.length > 0) throw notWithCollation('$unionWith with a pipeline');
      return;
    default:
      // $lookup, $graphLookup and $bucketAuto compare values in every form.
      throw notWithCollation(name);
  }
}

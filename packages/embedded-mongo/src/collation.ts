// Collation (https://www.mongodb.com/docs/manual/reference/collation/): a `collation` document is
// validated as mongod validates it (its IDL parser, then its ICU collator factory, with the same codes
// and texts) and becomes an Intl.Collator, which is ICU underneath. Options Intl.Collator cannot
// express are refused with BadValue rather than approximated. Only strings compare by collation; every
// other type keeps its BSON order.
import { numberType, toNumber, type Doc, type StringCompare } from './bson-order.js';
import { MongoError, wrongFieldType } from './errors.js';

export type Collator = {
  /** The filled-in spec, as mongod stores and lists it (listIndexes, listCollections). */
  readonly spec: Doc;
  /** Canonical form of `spec`: two collators order strings alike when their keys are equal. */
  readonly key: string;
  readonly compare: StringCompare;
};

/** The ICU version mongod 7.0 is built with, which it writes into every filled-in spec. */
const ICU_VERSION = '57.1';

// mongod's locales (https://www.mongodb.com/docs/manual/reference/collation-locales-defaults/), as ICU
// locale IDs; any other is refused as mongod refuses a locale ICU has no collation data for.
const LOCALES = new Set(
  ('af sq am ar hy as az bn be bs bs_Cyrl bg my ca chr zh zh_Hant hr cs da nl dz en en_US en_US_POSIX eo et ee fo fil fi ' +
    'fr fr_CA gl ka de de_AT el gu ha haw he hi hu is ig smn id ga it ja kl kn kk km kok ko ky lkt lo lv ln lt dsb lb mk ' +
    'ms ml mt mr mn ne se nb nn or om ps fa fa_AF pl pt pa ro ru sr sr_Latn si sk sl es sw sv ta te th bo to tr uk hsb ur ' +
    'ug vi wae cy yi yo zu').split(' '),
);

// Each documented variant (`<locale>@collation=<variant>`) and its BCP 47 name (`-u-co-<name>`).
const VARIANTS: Record<string, string> = {
  compat: 'compat', search: 'search', searchjl: 'searchjl', traditional: 'trad', big5han: 'big5han', gb2312han: 'gb2312',
  unihan: 'unihan', zhuyin: 'zhuyin', eor: 'eor', phonebook: 'phonebk', phonetic: 'phonetic', dictionary: 'dict',
};

const FIELDS = ['locale', 'caseLevel', 'caseFirst', 'strength', 'numericOrdering', 'alternate', 'maxVariable', 'normalization', 'backwards', 'version'];
const ENUMS: Record<string, string[]> = { caseFirst: ['upper', 'lower', 'off'], alternate: ['non-ignorable', 'shifted'], maxVariable: ['punct', 'space'] };
const BOOLS = new Set(['caseLevel', 'numericOrdering', 'normalization', 'backwards']);

/** A spec as mongod prints one in an error message: `{ locale: "xx", strength: 1 }`. */
function shown(spec: Doc): string {
  const fields = Object.entries(spec).map(([k, v]) => `${k}: ${typeof v === 'string' ? JSON.stringify(v) : String(v?.value ?? v)}`);
  return fields.length === 0 ? '{}' : `{ ${fields.join(', ')} }`;
}

function numeric(v: unknown): number | undefined {
  return numberType(v) ? toNumber(v) : undefined;
}

/** mongod's IDL parse of a Collation document: unknown fields, types, enum values and the strength bounds. */
function parseFields(raw: Doc): Doc {
  const out: Doc = {};
  for (const [k, v] of Object.entries(raw)) {
    if (!FIELDS.includes(k)) throw new MongoError(40415, `BSON field 'collation.${k}' is an unknown field.`, 'IDLUnknownField');
    if (k === 'locale' || k === 'version') {
      if (typeof v !== 'string') throw wrongFieldType(`collation.${k}`, v, 'string');
    } else if (BOOLS.has(k)) {
      if (typeof v !== 'boolean') throw wrongFieldType(`collation.${k}`, v, 'bool');
    } else if (k === 'strength') {
      const n = numeric(v);
      if (n === undefined) throw wrongFieldType(`collation.${k}`, v, ['long', 'int', 'decimal', 'double']);
      const s = Math.trunc(n);
      if (s < 0) throw new MongoError(51024, `BSON field 'collation.strength' value must be >= 0, actual value '${s}'`, 'Location51024');
      if (s > 5) throw new MongoError(51024, `BSON field 'collation.strength' value must be <= 5, actual value '${s}'`, 'Location51024');
      out[k] = s;
      continue;
    } else {
      if (typeof v !== 'string') throw wrongFieldType(`collation.${k}`, v, 'string');
      if (!ENUMS[k].includes(v)) throw new MongoError(2, `Enumeration value '${v}' for field 'collation.${k}' is not a valid value.`, 'BadValue');
    }
    out[k] = v;
  }
  if (out.locale === undefined) throw new MongoError(40414, "BSON field 'collation.locale' is missing but a required field", 'IDLFailedToParse');
  return out;
}

const unsupported = (what: string, spec: Doc): MongoError =>
  new MongoError(2, `${what} is not supported by the embedded MongoDB server (collation: ${shown(spec)})`, 'BadValue');

/** Builds the collator for a validated, non-simple spec; refuses what Intl.Collator cannot do exactly. */
function build(raw: Doc, given: Doc): Collator {
  const locale = given.locale as string;
  if (locale.includes('\0')) throw new MongoError(2, `Field 'locale' cannot contain null byte. Collation spec: ${shown(raw)}`, 'BadValue');
  if (locale === '') throw new MongoError(2, `Field 'locale' cannot be the empty string in: ${shown(raw)}`, 'BadValue');
  const [base, keywords] = locale.split('@');
  const variant = keywords?.startsWith('collation=') ? keywords.slice('collation='.length) : undefined;
  if (!LOCALES.has(base) || (keywords !== undefined && (variant === undefined || !(variant in VARIANTS)))) {
    throw new MongoError(2, `Field 'locale' is invalid in: ${shown(raw)}`, 'BadValue');
  }
  if (given.strength === 0) throw new MongoError(2, "Enumeration value '0' for field 'collation.strength' is not a valid value.", 'BadValue');
  if (given.version !== undefined && given.version !== ICU_VERSION) {
    throw new MongoError(
      161,
      `Requested collation version ${String(given.version)} but the only available collator version was ${ICU_VERSION}. Requested collation spec: ${shown(raw)}`,
      'IncompatibleCollationVersion',
    );
  }
  const bcp47 = base.replace('_POSIX', '-u-va-posix').replace(/_/g, '-') + (variant ? `-u-co-${VARIANTS[variant]}` : '');
  // The locale's own defaults (da and mt sort upper case first, th ignores punctuation), as mongod fills them in.
  const defaults = new Intl.Collator(bcp47).resolvedOptions();
  const spec: Doc = {
    locale,
    caseLevel: given.caseLevel ?? false,
    caseFirst: given.caseFirst ?? (defaults.caseFirst === 'false' ? 'off' : defaults.caseFirst),
    strength: given.strength ?? 3,
    numericOrdering: given.numericOrdering ?? false,
    alternate: given.alternate ?? (defaults.ignorePunctuation ? 'shifted' : 'non-ignorable'),
    maxVariable: given.maxVariable ?? 'punct',
    normalization: given.normalization ?? false,
    // French (Canada) is the one documented locale that weighs accents from the end of the string.
    backwards: given.backwards ?? base === 'fr_CA',
    version: ICU_VERSION,
  };
  if (spec.backwards && spec.strength === 1) throw new MongoError(2, `'backwards' is invalid with 'strength' of 1 in: ${shown(raw)}`, 'BadValue');
  if (spec.caseFirst !== 'off' && !spec.caseLevel && spec.strength <= 2) {
    throw new MongoError(2, `'caseFirst' is invalid unless 'caseLevel' is on or 'strength' is greater than 2 in: ${shown(raw)}`, 'BadValue');
  }
  // Intl.Collator has one sensitivity per strength, and a case level only on top of strength 1 ('case').
  if (spec.strength > 3) throw unsupported(`strength ${spec.strength}`, raw);
  if (spec.caseLevel && spec.strength > 1) throw unsupported(`caseLevel with strength ${spec.strength}`, raw);
  if (spec.alternate === 'shifted' && spec.maxVariable === 'space') throw unsupported("maxVariable 'space'", raw);
  if (spec.backwards !== (base === 'fr_CA')) throw unsupported(`backwards: ${String(spec.backwards)} for locale '${base}'`, raw);
  const sensitivity = spec.strength === 1 ? (spec.caseLevel ? 'case' : 'base') : spec.strength === 2 ? 'accent' : 'variant';
  const intl = new Intl.Collator(bcp47, {
    usage: 'sort',
    sensitivity,
    numeric: spec.numericOrdering,
    caseFirst: spec.caseFirst === 'off' ? 'false' : spec.caseFirst,
    ignorePunctuation: spec.alternate === 'shifted',
  });
  // Intl silently falls back for what its ICU build or ECMA-402 leaves out (the 'search' variants, an
  // explicit non-ignorable alternate for th); refuse instead of comparing differently.
  const got = intl.resolvedOptions();
  if (variant && got.collation !== VARIANTS[variant]) throw unsupported(`the '${variant}' collation variant`, raw);
  if (got.ignorePunctuation !== (spec.alternate === 'shifted')) throw unsupported(`alternate '${spec.alternate}' for locale '${base}'`, raw);
  // Normalization is always on in Intl.Collator (ECMA-402 makes canonically equivalent strings equal);
  // with it off, ICU compares differently only for text that is not in FCD form, so both are accepted.
  return { spec, key: JSON.stringify(spec), compare: intl.compare };
}

// Collators by the spec a command sent (and by the filled-in specs that indexes store): building an
// Intl.Collator costs far more than a comparison, so each distinct spec is built once.
const cache = new Map<string, Collator | null>();
const CACHE_LIMIT = 256;

/**
 * The collator a `collation` document asks for, or undefined for `{locale: 'simple'}` (binary
 * comparison). Throws mongod's error for an invalid spec and BadValue for an option not implemented.
 */
export function collatorFor(raw: unknown): Collator | undefined {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw) || (raw as { _bsontype?: string })._bsontype !== undefined) {
    throw wrongFieldType('collation', raw, 'object');
  }
  const cacheKey = JSON.stringify(raw);
  const hit = cache.get(cacheKey);
  if (hit !== undefined) return hit ?? undefined;
  const given = parseFields(raw as Doc);
  const collator = given.locale === 'simple' ? undefined : build(raw as Doc, given);
  if (cache.size >= CACHE_LIMIT) cache.clear();
  cache.set(cacheKey, collator ?? null);
  return collator;
}

/** Whether two collations (undefined: simple) order and equate strings alike. */
export function sameCollation(a: Collator | undefined, b: Collator | undefined): boolean {
  return a === b || (a !== undefined && b !== undefined && a.key === b.key);
}

/**
 * The refusal for a construct that would compare strings by code unit under a non-simple collation
 * (mingo runs it, and mingo knows no collation): mongod has no code for "not implemented here", so
 * NotImplemented (238) names it.
 */
export function notWithCollation(what: string): MongoError {
  return new MongoError(238, `${what} with a non-simple collation is not supported by the embedded server`, 'NotImplemented');
}

// Expression operators (and accumulators, window functions) that compare values, and so strings by the
// collation on mongod (https://www.mongodb.com/docs/manual/reference/collation/#operations-that-support-collation).
const COMPARING_EXPRESSIONS = new Set([
  '$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$cmp', '$in', '$indexOfArray', '$setEquals', '$setIntersection', '$setUnion',
  '$setDifference', '$setIsSubset', '$max', '$min', '$maxN', '$minN', '$sortArray', '$addToSet', '$top', '$bottom', '$topN',
  '$bottomN',
]);

/** The first operator in an aggregation expression that compares values; undefined when none does. */
export function comparingOperator(expr: unknown): string | undefined {
  if (Array.isArray(expr)) {
    for (const x of expr) {
      const found = comparingOperator(x);
      if (found) return found;
    }
    return undefined;
  }
  if (expr === null || typeof expr !== 'object' || (expr as { _bsontype?: string })._bsontype !== undefined || expr instanceof Date || expr instanceof RegExp) {
    return undefined;
  }
  for (const [k, v] of Object.entries(expr)) {
    if (k === '$literal') continue;
    if (COMPARING_EXPRESSIONS.has(k)) return k;
    const found = comparingOperator(v);
    if (found) return found;
  }
  return undefined;
}

/** Whether a value holds a string anywhere (a regex's pattern is not one: $regex ignores collation). */
export function holdsString(v: unknown): boolean {
  if (typeof v === 'string') return true;
  if (Array.isArray(v)) return v.some(holdsString);
  if (v === null || typeof v !== 'object' || v instanceof Date || v instanceof RegExp) return false;
  const t = (v as { _bsontype?: string })._bsontype;
  if (t === 'BSONSymbol') return true;
  return t === undefined && Object.values(v).some(holdsString);
}

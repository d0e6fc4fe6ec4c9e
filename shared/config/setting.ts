import type Joi from 'joi';

/**
 * How one setting reads in the configuration table (docs/operators.md). `default` is only needed where the
 * default is not a plain value to quote (a computed one, or "unset" spelled differently).
 */
export interface OwnRowDoc {
  readonly default?: string;
  readonly expects: string;
  readonly usedBy: string;
}

/**
 * A variable documented in another variable's row: `sharesRowWith` lists its name and default in
 * that row (`JWT_ISSUER`, `JWT_AUDIENCE`); `describedIn` only mentions it in that row's text (an
 * old name kept as an alias).
 */
export type SettingDoc = OwnRowDoc | { readonly sharesRowWith: string } | { readonly describedIn: string };

/**
 * The process a configuration is loaded for. Only the ingress binds HOST, so only its HOST tells
 * where it runs; a worker or a script binds nothing, and a default that trusts where the process
 * runs must not be taken from a HOST it never listens on.
 */
export type ProcessRole = 'ingress' | 'worker' | 'script';

/**
 * A default computed from the raw environment (joi calls it with the object being validated) and
 * the role of the process loading it.
 */
export type ComputedDefault<V> = (env: Readonly<Record<string, unknown>>, role: ProcessRole) => V;

/**
 * One environment variable: its name, its joi schema (the start-up error shows the schema's
 * description as what the variable expects), its default, its row in the configuration table, and
 * where its value goes in the Config (`path`, dotted for nested groups) once `parse` has turned it
 * into what code reads.
 * The default is a field of its own, not a `.default()` of the schema, so that the Config type
 * knows which values may be undefined. A variable without a path is an input of a derived value
 * (DERIVED in ./settings.ts).
 */
export interface Setting<
  Name extends string = string,
  Value = unknown,
  Path extends string = string,
  Out = unknown,
> {
  readonly env: Name;
  readonly joi: Joi.Schema;
  readonly default: Value | ComputedDefault<Value> | undefined;
  readonly doc: SettingDoc;
  readonly path: Path | undefined;
  // A method, so that any row is a Setting<string, unknown> (its value type is checked by setting()).
  parse?(value: Value): Out;
}

/**
 * A row of the table. The value type is the joi schema's (`Joi.string<T>()` narrows it), made
 * optional when there is no default; the Config value is what `parse` returns, else that value.
 */
export function setting<
  const Name extends string,
  Schema,
  const Path extends string = never,
  const Default extends Schema | ComputedDefault<Schema> | undefined = undefined,
  Out = undefined extends Default ? Schema | undefined : Schema,
>(row: {
  readonly env: Name;
  readonly joi: Joi.AnySchema<Schema>;
  readonly default?: Default;
  readonly doc: SettingDoc;
  readonly path?: Path;
  readonly parse?: (value: undefined extends Default ? Schema | undefined : Schema) => Out;
}): Setting<Name, undefined extends Default ? Schema | undefined : Schema, Path, Out> {
  return {
    env: row.env,
    joi: row.joi,
    default: row.default,
    doc: row.doc,
    path: row.path,
    parse: row.parse,
  };
}

/** A Config value computed from several validated variables (the Redis target, an alias). */
export interface Derived<Env, Path extends string = string, Out = unknown> {
  readonly path: Path;
  readonly from: (env: Env) => Out;
}

/** What the types below need of a row, whatever its value type. */
interface SettingShape {
  readonly env: string;
  readonly path: string | undefined;
  parse?(value: never): unknown;
}

type ValueOf<R extends SettingShape> = Parameters<NonNullable<R['parse']>>[0];
type OutOf<R extends SettingShape> = R['parse'] extends ((value: never) => infer Out) | undefined
  ? Out
  : never;

/** The validated environment the rows yield: each variable's value as joi returns it. */
export type EnvOf<Rows extends readonly SettingShape[]> = {
  readonly [R in Rows[number] as R['env']]: ValueOf<R>;
};

/** One leaf of the Config: where it goes and its type. */
interface Leaf {
  readonly path: string;
  readonly value: unknown;
}

/** The Config leaves of the rows that have a path. */
export type LeavesOf<Rows extends readonly SettingShape[]> = Rows[number] extends infer R
  ? R extends SettingShape
    ? Exclude<R['path'], undefined> extends infer Path extends string
      ? [Path] extends [never]
        ? never
        : { readonly path: Path; readonly value: OutOf<R> }
      : never
    : never
  : never;

export type DerivedLeavesOf<D extends readonly Derived<never>[]> = D[number] extends infer R
  ? R extends Derived<never, infer Path, infer Out>
    ? { readonly path: Path; readonly value: Out }
    : never
  : never;

type Head<P extends string> = P extends `${infer H}.${string}` ? H : P;
type Below<L extends Leaf, H extends string> = L extends { path: `${H}.${infer Rest}`; value: infer V }
  ? { readonly path: Rest; readonly value: V }
  : never;

/** Leaves with dotted paths -> the nested, readonly object they describe. */
export type TreeOf<L extends Leaf> = {
  readonly [H in Head<L['path']>]: [Extract<L, { path: H }>] extends [never]
    ? TreeOf<Below<L, H>>
    : Extract<L, { path: H }>['value'];
};

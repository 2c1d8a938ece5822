/**
 * The per-query DuckDB child process: a program of its own, started by the
 * spawner (see spawn-query-process.ts) with the host `node`, inside the jail
 * when one is available. It is the only module of this subsystem that calls
 * `process.exit`, and it imports nothing of comis at run time (it runs alone
 * in the jail, which holds only this file and the `@duckdb` packages): the
 * one import from comis is `import type`, erased by every compiler.
 *
 * How it reaches the child: {@link queryChildProgram} (child-program.ts)
 * hands the spawner this module as JavaScript, which the spawner writes to the
 * child's private directory as `query-child.mjs`. From dist/ that is tsc's
 * output of this file; from src/ (tests, benches) esbuild strips its types.
 *
 * Protocol (types in child-protocol.ts), in two steps so a child can be
 * started (and hardened) before its query exists:
 * 1. boot: one JSON object on stdin ({@link ChildBoot}); the child imports
 *    DuckDB and applies and verifies the hardening;
 * 2. query: the parent drops a {@link ChildRequest} at `requestPath` (a file
 *    in the child's read-only private directory, renamed into place, so it is
 *    whole when it appears; only the parent can write there). A child with no
 *    query after `idleMs` exits. `engineOnly` exists for tests of the
 *    engine's confinement alone; runSliceQuery never sets it.
 * The reply is ONE line of JSON on stdout ({@link ChildReply}):
 * `{"ok":true,"columns":[…],"rowCount":n,"rows":[…]}` or
 * `{"ok":false,"code":"…","error":"…"}`. Nothing else is written to stdout.
 * Each child answers exactly one query, on a DuckDB instance no other query
 * has used.
 *
 * Order of the hardening (each measured on DuckDB 1.5.6): the instance is
 * created with extension autoinstall/autoload off, community/unsigned
 * extensions and persistent secrets off, bounded memory and threads; then on
 * the first connection `temp_directory = ''` (no spilling, so no temp
 * directory is silently added to the allowed list), `allowed_directories`,
 * `enable_external_access = false`, autoinstall/autoload off again, and
 * `lock_configuration = true`, in that order; the settings are read back and
 * the query is refused unless they hold exactly. Only then is the model's
 * query parsed by DuckDB: exactly one statement, of type SELECT, with no
 * parameters, whose parse tree names no denied function and no URL.
 */
import { existsSync, readFileSync, watch, type FSWatcher } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname } from 'node:path';

import type { ChildBoot, ChildErrorCode, ChildReply, ChildRequest } from './child-protocol.js';

// ------------------------------------------------------------ DuckDB's API

/*
 * The part of `@duckdb/node-api` this program uses, declared here rather
 * than imported: the package is an optional dependency, so the build must not
 * need its types, and the child loads it only at run time (from the path the
 * parent names in the boot message).
 */
interface DuckType {
  typeId: number;
  alias?: string;
}
type DuckValue = unknown;
type Converter = (value: DuckValue, type: DuckType, converter: Converter) => unknown;
interface DuckChunk {
  rowCount: number;
  getRows(): DuckValue[][];
}
interface DuckResult {
  deduplicatedColumnNames(): string[];
  columnTypes(): DuckType[];
  fetchChunk(): Promise<DuckChunk | null>;
}
interface DuckPrepared {
  statementType: number;
  parameterCount: number;
  stream(): Promise<DuckResult>;
}
interface DuckReader {
  getRows(): DuckValue[][];
  getRowObjectsJson(): Record<string, unknown>[];
}
interface DuckConnection {
  run(sql: string): Promise<unknown>;
  runAndReadAll(sql: string, values?: unknown[]): Promise<DuckReader>;
  extractStatements(sql: string): Promise<{ count: number; prepare(index: number): Promise<DuckPrepared> }>;
  interrupt(): void;
}
/** Value converters of the API (its `JsonDuckDBValueConverter` parts), keyed by the names it exports. */
interface DuckConverters {
  numberFromValue: Converter;
  jsonNumberFromValue: Converter;
  arrayFromListValue: Converter;
  arrayFromArrayValue: Converter;
  objectFromStructValue: Converter;
  objectArrayFromMapValue: Converter;
  objectFromUnionValue: Converter;
  fromVariantValue?: Converter;
}
interface DuckApi extends DuckConverters {
  DuckDBInstance: { create(path: string, options: Record<string, string>): Promise<{ connect(): Promise<DuckConnection> }> };
  DuckDBTypeId: Record<string, number>;
  StatementType: { SELECT: number };
}

// ------------------------------------------------------------ replying

let replied = false;
function reply(message: ChildReply | string): void {
  if (replied) return;
  replied = true;
  const line = `${typeof message === 'string' ? message : JSON.stringify(message)}\n`;
  process.stdout.write(line, () => process.exit(0));
}
function fail(code: ChildErrorCode, error: unknown): void {
  reply({ ok: false, code, error: String(error).split('\n')[0]!.slice(0, 500) });
}
function messageOf(err: unknown): unknown {
  return (err as { message?: unknown } | null)?.message || err;
}
process.on('uncaughtException', (err) => fail('internal', messageOf(err)));
process.on('unhandledRejection', (err) => fail('internal', messageOf(err)));

function classify(err: unknown): [ChildErrorCode, string] {
  const message = String(messageOf(err));
  const first = message.split('\n')[0]!;
  if (/^Permission Error/.test(first)) return ['access_denied', first];
  if (/^Out of Memory Error/.test(first)) return ['out_of_memory', first];
  if (/^INTERRUPT Error|Interrupted/i.test(first)) return ['timeout', 'the query was interrupted'];
  return ['sql_error', first];
}

function quoteSql(text: string): string {
  return `'${String(text).replace(/'/g, "''")}'`;
}

// ------------------------------------------------------------ parse-tree check

interface DenyList {
  deniedFunctions: Readonly<Record<string, string>>;
  deniedPrefixes: readonly (readonly [string, string])[];
  deniedTablePrefixes: readonly string[];
  deniedSchemas: readonly string[];
}

function deniedReason(name: string, deny: DenyList): string | undefined {
  const lower = String(name).toLowerCase();
  if (Object.prototype.hasOwnProperty.call(deny.deniedFunctions, lower)) return deny.deniedFunctions[lower];
  for (const [prefix, reason] of deny.deniedPrefixes) if (lower.startsWith(prefix)) return reason;
  return undefined;
}

/** DuckDB's own parse tree (json_serialize_sql), walked for denied functions and URLs. */
function findDenied(tree: unknown, deny: DenyList): string | undefined {
  const stack: unknown[] = [tree];
  let visited = 0;
  while (stack.length > 0) {
    const node = stack.pop();
    if (++visited > 1000000) return 'the query is too complex';
    if (typeof node === 'string') {
      if (node.includes('://')) return 'URLs are not allowed: the query may read only files under results/';
      continue;
    }
    if (node === null || typeof node !== 'object') continue;
    if (Array.isArray(node)) {
      for (const item of node) stack.push(item);
      continue;
    }
    const fn = (node as { function_name?: unknown }).function_name;
    if (typeof fn === 'string') {
      const why = deniedReason(fn, deny);
      if (why) return `${fn.toLowerCase()}() is not allowed: it ${why}`;
    }
    // A catalog view read as a table (`FROM pg_settings`, `information_schema.schemata`).
    const ref = node as { type?: unknown; table_name?: unknown; schema_name?: unknown };
    if (ref.type === 'BASE_TABLE' && typeof ref.table_name === 'string') {
      const name = ref.table_name.toLowerCase();
      const space = typeof ref.schema_name === 'string' ? ref.schema_name.toLowerCase() : '';
      if (deny.deniedSchemas.includes(space) || deny.deniedTablePrefixes.some((p) => name.startsWith(p))) {
        return `${space ? `${space}.` : ''}${name} is not allowed: it reads engine internals (a table of the query's own by that name must be renamed)`;
      }
    }
    for (const value of Object.values(node)) stack.push(value);
  }
  return undefined;
}

// ------------------------------------------------------------ values to JSON

interface Temporal {
  isFinite?: boolean;
  micros?: bigint;
  millis?: bigint;
  seconds?: bigint;
  nanos?: bigint;
  days?: number;
}

function makeConverter(duck: DuckApi): Converter {
  const T = duck.DuckDBTypeId;
  const C = duck;
  const SAFE = 9007199254740991n;
  const big: Converter = (v) => (typeof v === 'bigint' ? (v >= -SAFE && v <= SAFE ? Number(v) : v.toString()) : typeof v === 'number' ? v : String(v));
  const isoFromMillisAndRest = (ms: bigint, restMicros: number, zone: boolean): string | null => {
    const d = new Date(Number(ms));
    if (Number.isNaN(d.getTime())) return null;
    let iso = d.toISOString().slice(0, -1);
    if (restMicros) iso += String(restMicros).padStart(3, '0');
    return zone ? `${iso}Z` : iso;
  };
  const fromMicros = (micros: bigint, zone: boolean): string | null => {
    const ms = micros / 1000n - (micros % 1000n < 0n ? 1n : 0n);
    const rest = Number(micros - ms * 1000n);
    return isoFromMillisAndRest(ms, rest, zone);
  };
  const infinity = (raw: bigint | number): string => (raw > 0 ? 'infinity' : '-infinity');
  const timestamp = (value: Temporal, zone: boolean): string => {
    if (value.isFinite === false) return infinity(value.micros ?? value.millis ?? value.seconds ?? value.nanos ?? 1n);
    let iso: string | null = null;
    if (typeof value.micros === 'bigint') iso = fromMicros(value.micros, zone);
    else if (typeof value.millis === 'bigint') iso = isoFromMillisAndRest(value.millis, 0, zone);
    else if (typeof value.seconds === 'bigint') iso = isoFromMillisAndRest(value.seconds * 1000n, 0, zone);
    else if (typeof value.nanos === 'bigint') {
      const micros = value.nanos / 1000n - (value.nanos % 1000n < 0n ? 1n : 0n);
      iso = fromMicros(micros, zone);
    }
    return iso ?? String(value);
  };
  const date = (value: Temporal): string => {
    if (value.isFinite === false) return infinity(value.days ?? 1);
    const d = new Date((value.days ?? Number.NaN) * 86400000);
    return Number.isNaN(d.getTime()) ? String(value) : d.toISOString().slice(0, 10);
  };
  const text: Converter = (value, type) => {
    const s = String(value);
    if (type.alias === 'JSON') {
      try {
        return JSON.parse(s) as unknown;
      } catch {
        return s;
      }
    }
    return s;
  };
  const ts =
    (zone: boolean): Converter =>
    (v) =>
      timestamp(v as Temporal, zone);
  const byType: Record<number, Converter> = {};
  const add = (name: string, f: Converter): void => {
    const id = T[name];
    if (id !== undefined) byType[id] = f;
  };
  add('BOOLEAN', (v) => Boolean(v));
  for (const name of ['TINYINT', 'SMALLINT', 'INTEGER', 'UTINYINT', 'USMALLINT', 'UINTEGER']) add(name, C.numberFromValue);
  for (const name of ['BIGINT', 'UBIGINT', 'HUGEINT', 'UHUGEINT', 'BIGNUM']) add(name, big);
  add('FLOAT', C.jsonNumberFromValue);
  add('DOUBLE', C.jsonNumberFromValue);
  add('DECIMAL', (v) => {
    const d = v as { width: number; toDouble(): number; toString(): string };
    return d.width <= 15 ? d.toDouble() : d.toString();
  });
  add('DATE', (v) => date(v as Temporal));
  add('TIMESTAMP', ts(false));
  add('TIMESTAMP_S', ts(false));
  add('TIMESTAMP_MS', ts(false));
  add('TIMESTAMP_NS', ts(false));
  add('TIMESTAMP_TZ', ts(true));
  add('VARCHAR', text);
  add('LIST', C.arrayFromListValue);
  add('ARRAY', C.arrayFromArrayValue);
  add('STRUCT', C.objectFromStructValue);
  add('MAP', C.objectArrayFromMapValue);
  add('UNION', C.objectFromUnionValue);
  add('SQLNULL', () => null);
  if (C.fromVariantValue) add('VARIANT', C.fromVariantValue);
  const convert: Converter = (value, type, converter) => {
    if (value === null || value === undefined) return null;
    const f = byType[type.typeId];
    return f ? f(value, type, converter) : String(value);
  };
  return convert;
}

// ------------------------------------------------------------ the request

/** Resolves with the query request once the parent drops it; exits quietly after idleMs. */
function waitForRequest(path: string, idleMs: number): Promise<ChildRequest> {
  return new Promise((resolve) => {
    let done = false;
    let watcher: FSWatcher | undefined;
    const finish = (): void => {
      if (done || !existsSync(path)) return;
      done = true;
      clearInterval(poll);
      clearTimeout(idle);
      if (watcher) watcher.close();
      resolve(JSON.parse(readFileSync(path, 'utf8')) as ChildRequest);
    };
    const poll = setInterval(finish, 50);
    const idle = setTimeout(() => process.exit(0), idleMs);
    try {
      watcher = watch(dirname(path), (_event, name) => {
        if (name === null || name === basename(path)) finish();
      });
    } catch {
      /* no inotify here: the poll above finds it */
    }
    finish();
  });
}

// ------------------------------------------------------------ main

async function main(): Promise<void> {
  const boot = JSON.parse(readFileSync(0, 'utf8')) as ChildBoot;
  // The API is CommonJS: require() is ~60 ms cheaper than import() (no export scanning).
  const duck = createRequire(boot.duckdbEntry)(boot.duckdbEntry) as DuckApi;
  const instance = await duck.DuckDBInstance.create(':memory:', {
    threads: String(boot.threads),
    memory_limit: `${boot.memoryMb}MB`,
    autoinstall_known_extensions: 'false',
    autoload_known_extensions: 'false',
    allow_community_extensions: 'false',
    allow_unsigned_extensions: 'false',
    allow_persistent_secrets: 'false',
  });
  const connection = await instance.connect();
  for (const statement of [
    "SET temp_directory = ''",
    `SET allowed_directories = [${quoteSql(boot.allowedDir)}]`,
    'SET enable_external_access = false',
    'SET autoinstall_known_extensions = false',
    'SET autoload_known_extensions = false',
    'SET lock_configuration = true',
  ]) {
    await connection.run(statement);
  }
  const check = await connection.runAndReadAll(
    "SELECT current_setting('allowed_directories') AS dirs, current_setting('enable_external_access') AS ext, " +
      "current_setting('lock_configuration') AS locked, current_setting('temp_directory') AS tmp, " +
      "current_setting('autoinstall_known_extensions') AS ai, current_setting('autoload_known_extensions') AS al",
  );
  const s = check.getRowObjectsJson()[0] as Record<string, unknown>;
  const want = boot.allowedDir.endsWith('/') ? boot.allowedDir : `${boot.allowedDir}/`;
  const hardened = Array.isArray(s.dirs) && s.dirs.length === 1 && s.dirs[0] === want && s.ext === false && s.locked === true && s.tmp === '' && s.ai === false && s.al === false;

  const request = await waitForRequest(boot.requestPath, boot.idleMs);
  // Backstop only: the parent kills this process at its own deadline.
  setTimeout(() => process.kill(process.pid, 'SIGKILL'), request.deadlineMs).unref();
  if (!hardened) return fail('hardening_failed', 'the DuckDB sandbox settings did not apply; the query was not run');
  const deny: DenyList = { deniedFunctions: boot.deniedFunctions, deniedPrefixes: boot.deniedPrefixes, deniedTablePrefixes: boot.deniedTablePrefixes, deniedSchemas: boot.deniedSchemas };

  const ONLY = 'only a single read-only SELECT query is accepted';
  let extracted;
  try {
    extracted = await connection.extractStatements(request.query);
  } catch (err) {
    return fail(...classify(err));
  }
  if (extracted.count !== 1) return fail('sql_refused', `multiple statements are not accepted: ${ONLY}`);
  // engineOnly (tests of the engine's own confinement) skips the two parser-level checks.
  if (request.engineOnly !== true) {
    const serialized = await connection.runAndReadAll('SELECT json_serialize_sql($1::VARCHAR) AS tree', [request.query]);
    const tree = JSON.parse(String(serialized.getRows()[0]![0])) as { error?: unknown; statements?: unknown };
    if (tree.error || !Array.isArray(tree.statements) || tree.statements.length !== 1) return fail('sql_refused', ONLY);
    const why = findDenied(tree, deny);
    if (why) return fail('sql_refused', why);
  }

  let result: DuckResult;
  try {
    const prepared = await extracted.prepare(0);
    if (request.engineOnly !== true && prepared.statementType !== duck.StatementType.SELECT) return fail('sql_refused', ONLY);
    if (prepared.parameterCount !== 0) return fail('sql_refused', 'bound parameters are not supported');
    result = await prepared.stream();
  } catch (err) {
    return fail(...classify(err));
  }

  const columns = result.deduplicatedColumnNames();
  // The result's column types carry aliases (JSON) that the chunk vectors' types do not.
  const types = result.columnTypes();
  const convert = makeConverter(duck);
  const parts: string[] = [];
  let bytes = 2;
  let rowCount = 0;
  try {
    for (;;) {
      const chunk = await result.fetchChunk();
      if (!chunk || chunk.rowCount === 0) break;
      for (const values of chunk.getRows()) {
        const row: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
        for (let k = 0; k < columns.length; k++) row[columns[k]!] = convert(values[k], types[k]!, convert);
        const json = JSON.stringify(row);
        bytes += Buffer.byteLength(json) + (rowCount > 0 ? 1 : 0);
        if (bytes > request.maxOutputBytes) {
          try {
            connection.interrupt();
          } catch {
            /* the reply below is what matters */
          }
          return fail('output_limit', `the result is larger than ${request.maxOutputBytes} bytes; select fewer rows or columns (add LIMIT)`);
        }
        parts.push(json);
        rowCount++;
      }
    }
  } catch (err) {
    return fail(...classify(err));
  }
  reply(`{"ok":true,"columns":${JSON.stringify(columns)},"rowCount":${rowCount},"rows":[${parts.join(',')}]}`);
}

main().catch((err: unknown) => fail(...classify(err)));

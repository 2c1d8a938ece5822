/**
 * The program of the per-query DuckDB child process, as ESM JavaScript
 * source. It is a separate program (the only place in this subsystem that
 * calls `process.exit`); the parent writes it to a private file and runs it
 * with the host `node`, inside the jail when one is available.
 *
 * Why a string: the same bytes must run from `src/` under the test runner and
 * from `dist/` after `tsc`, on Node 20 (no type stripping) and with no build
 * step to copy a `.mjs` file; a string module is compiled by `tsc` like any
 * other module and needs no loader.
 *
 * Protocol, in two steps so a child can be started (and hardened) before its
 * query exists:
 * 1. boot: one JSON object on stdin: `{duckdbEntry, allowedDir, memoryMb,
 *    threads, deniedFunctions, deniedPrefixes, requestPath, idleMs}`; the
 *    child imports DuckDB and applies and verifies the hardening;
 * 2. query: the parent drops `{query, maxOutputBytes, deadlineMs,
 *    engineOnly?}` at `requestPath` (a file in the child's read-only private
 *    directory, renamed into place, so it is whole when it appears; only the
 *    parent can write there). A child with no query after `idleMs` exits.
 *    `engineOnly` exists for tests of the engine's confinement alone;
 *    {@link runSliceQuery} never sets it.
 * The reply is ONE line of JSON on stdout:
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
export const QUERY_CHILD_SOURCE = String.raw`
import { existsSync, readFileSync, watch } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname } from 'node:path';

let replied = false;
function reply(message) {
  if (replied) return;
  replied = true;
  const line = (typeof message === 'string' ? message : JSON.stringify(message)) + '\n';
  process.stdout.write(line, () => process.exit(0));
}
function fail(code, error) {
  reply({ ok: false, code, error: String(error).split('\n')[0].slice(0, 500) });
}
process.on('uncaughtException', (err) => fail('internal', (err && err.message) || err));
process.on('unhandledRejection', (err) => fail('internal', (err && err.message) || err));

function classify(err) {
  const message = String((err && err.message) || err);
  const first = message.split('\n')[0];
  if (/^Permission Error/.test(first)) return ['access_denied', first];
  if (/^Out of Memory Error/.test(first)) return ['out_of_memory', first];
  if (/^INTERRUPT Error|Interrupted/i.test(first)) return ['timeout', 'the query was interrupted'];
  return ['sql_error', first];
}

function quoteSql(text) {
  return "'" + String(text).replace(/'/g, "''") + "'";
}

function deniedReason(name, request) {
  const lower = String(name).toLowerCase();
  if (Object.prototype.hasOwnProperty.call(request.deniedFunctions, lower)) return request.deniedFunctions[lower];
  for (const [prefix, reason] of request.deniedPrefixes) if (lower.startsWith(prefix)) return reason;
  return undefined;
}

// DuckDB's own parse tree (json_serialize_sql), walked for denied functions and URLs.
function findDenied(tree, request) {
  const stack = [tree];
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
    if (typeof node.function_name === 'string') {
      const why = deniedReason(node.function_name, request);
      if (why) return node.function_name.toLowerCase() + '() is not allowed: it ' + why;
    }
    for (const value of Object.values(node)) stack.push(value);
  }
  return undefined;
}

function makeConverter(duck) {
  const T = duck.DuckDBTypeId;
  const C = duck;
  const SAFE = 9007199254740991n;
  const big = (v) => (typeof v === 'bigint' ? (v >= -SAFE && v <= SAFE ? Number(v) : v.toString()) : typeof v === 'number' ? v : String(v));
  const isoFromMillisAndRest = (ms, restMicros, zone) => {
    const d = new Date(Number(ms));
    if (Number.isNaN(d.getTime())) return null;
    let iso = d.toISOString().slice(0, -1);
    if (restMicros) iso += String(restMicros).padStart(3, '0');
    return zone ? iso + 'Z' : iso;
  };
  const fromMicros = (micros, zone) => {
    const ms = micros / 1000n - (micros % 1000n < 0n ? 1n : 0n);
    const rest = Number(micros - ms * 1000n);
    return isoFromMillisAndRest(ms, rest, zone);
  };
  const infinity = (raw) => (raw > 0 ? 'infinity' : '-infinity');
  const timestamp = (value, zone) => {
    if (value.isFinite === false) return infinity(value.micros ?? value.millis ?? value.seconds ?? value.nanos ?? 1n);
    let iso = null;
    if (typeof value.micros === 'bigint') iso = fromMicros(value.micros, zone);
    else if (typeof value.millis === 'bigint') iso = isoFromMillisAndRest(value.millis, 0, zone);
    else if (typeof value.seconds === 'bigint') iso = isoFromMillisAndRest(value.seconds * 1000n, 0, zone);
    else if (typeof value.nanos === 'bigint') {
      const micros = value.nanos / 1000n - (value.nanos % 1000n < 0n ? 1n : 0n);
      iso = fromMicros(micros, zone);
    }
    return iso ?? String(value);
  };
  const date = (value) => {
    if (value.isFinite === false) return infinity(value.days);
    const d = new Date(value.days * 86400000);
    return Number.isNaN(d.getTime()) ? String(value) : d.toISOString().slice(0, 10);
  };
  const text = (value, type) => {
    const s = String(value);
    if (type.alias === 'JSON') {
      try {
        return JSON.parse(s);
      } catch {
        return s;
      }
    }
    return s;
  };
  const byType = {
    [T.BOOLEAN]: (v) => Boolean(v),
    [T.TINYINT]: C.numberFromValue,
    [T.SMALLINT]: C.numberFromValue,
    [T.INTEGER]: C.numberFromValue,
    [T.UTINYINT]: C.numberFromValue,
    [T.USMALLINT]: C.numberFromValue,
    [T.UINTEGER]: C.numberFromValue,
    [T.BIGINT]: big,
    [T.UBIGINT]: big,
    [T.HUGEINT]: big,
    [T.UHUGEINT]: big,
    [T.BIGNUM]: big,
    [T.FLOAT]: C.jsonNumberFromValue,
    [T.DOUBLE]: C.jsonNumberFromValue,
    [T.DECIMAL]: (v) => (v.width <= 15 ? v.toDouble() : v.toString()),
    [T.DATE]: date,
    [T.TIMESTAMP]: (v) => timestamp(v, false),
    [T.TIMESTAMP_S]: (v) => timestamp(v, false),
    [T.TIMESTAMP_MS]: (v) => timestamp(v, false),
    [T.TIMESTAMP_NS]: (v) => timestamp(v, false),
    [T.TIMESTAMP_TZ]: (v) => timestamp(v, true),
    [T.VARCHAR]: text,
    [T.LIST]: C.arrayFromListValue,
    [T.ARRAY]: C.arrayFromArrayValue,
    [T.STRUCT]: C.objectFromStructValue,
    [T.MAP]: C.objectArrayFromMapValue,
    [T.UNION]: C.objectFromUnionValue,
    [T.SQLNULL]: () => null,
  };
  if (T.VARIANT !== undefined && C.fromVariantValue) byType[T.VARIANT] = C.fromVariantValue;
  const convert = (value, type, converter) => {
    if (value === null || value === undefined) return null;
    const f = byType[type.typeId];
    return f ? f(value, type, converter) : String(value);
  };
  return convert;
}

// Resolves with the query request once the parent drops it; exits quietly after idleMs.
function waitForRequest(path, idleMs) {
  return new Promise((resolve) => {
    let done = false;
    let watcher;
    const finish = () => {
      if (done || !existsSync(path)) return;
      done = true;
      clearInterval(poll);
      clearTimeout(idle);
      if (watcher) watcher.close();
      resolve(JSON.parse(readFileSync(path, 'utf8')));
    };
    const poll = setInterval(finish, 50);
    const idle = setTimeout(() => process.exit(0), idleMs);
    try {
      watcher = watch(dirname(path), (_event, name) => {
        if (name === null || name === basename(path)) finish();
      });
    } catch {}
    finish();
  });
}

async function main() {
  const boot = JSON.parse(readFileSync(0, 'utf8'));
  // The API is CommonJS: require() is ~60 ms cheaper than import() (no export scanning).
  const duck = createRequire(boot.duckdbEntry)(boot.duckdbEntry);
  const instance = await duck.DuckDBInstance.create(':memory:', {
    threads: String(boot.threads),
    memory_limit: boot.memoryMb + 'MB',
    autoinstall_known_extensions: 'false',
    autoload_known_extensions: 'false',
    allow_community_extensions: 'false',
    allow_unsigned_extensions: 'false',
    allow_persistent_secrets: 'false',
  });
  const connection = await instance.connect();
  for (const statement of [
    "SET temp_directory = ''",
    'SET allowed_directories = [' + quoteSql(boot.allowedDir) + ']',
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
  const s = check.getRowObjectsJson()[0];
  const want = boot.allowedDir.endsWith('/') ? boot.allowedDir : boot.allowedDir + '/';
  const hardened = Array.isArray(s.dirs) && s.dirs.length === 1 && s.dirs[0] === want && s.ext === false && s.locked === true && s.tmp === '' && s.ai === false && s.al === false;

  const request = await waitForRequest(boot.requestPath, boot.idleMs);
  // Backstop only: the parent kills this process at its own deadline.
  setTimeout(() => process.kill(process.pid, 'SIGKILL'), request.deadlineMs).unref();
  if (!hardened) return fail('hardening_failed', 'the DuckDB sandbox settings did not apply; the query was not run');
  request.deniedFunctions = boot.deniedFunctions;
  request.deniedPrefixes = boot.deniedPrefixes;

  const ONLY = 'only a single read-only SELECT query is accepted';
  let extracted;
  try {
    extracted = await connection.extractStatements(request.query);
  } catch (err) {
    return fail(...classify(err));
  }
  if (extracted.count !== 1) return fail('sql_refused', 'multiple statements are not accepted: ' + ONLY);
  // engineOnly (tests of the engine's own confinement) skips the two parser-level checks.
  if (request.engineOnly !== true) {
    const serialized = await connection.runAndReadAll('SELECT json_serialize_sql($1::VARCHAR) AS tree', [request.query]);
    const tree = JSON.parse(String(serialized.getRows()[0][0]));
    if (tree.error || !Array.isArray(tree.statements) || tree.statements.length !== 1) return fail('sql_refused', ONLY);
    const why = findDenied(tree, request);
    if (why) return fail('sql_refused', why);
  }

  let result;
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
  const parts = [];
  let bytes = 2;
  let rowCount = 0;
  try {
    for (;;) {
      const chunk = await result.fetchChunk();
      if (!chunk || chunk.rowCount === 0) break;
      for (const values of chunk.getRows()) {
        const row = Object.create(null);
        for (let k = 0; k < columns.length; k++) row[columns[k]] = convert(values[k], types[k], convert);
        const json = JSON.stringify(row);
        bytes += Buffer.byteLength(json) + (rowCount > 0 ? 1 : 0);
        if (bytes > request.maxOutputBytes) {
          try {
            connection.interrupt();
          } catch {}
          return fail('output_limit', 'the result is larger than ' + request.maxOutputBytes + ' bytes; select fewer rows or columns (add LIMIT)');
        }
        parts.push(json);
        rowCount++;
      }
    }
  } catch (err) {
    return fail(...classify(err));
  }
  reply('{"ok":true,"columns":' + JSON.stringify(columns) + ',"rowCount":' + rowCount + ',"rows":[' + parts.join(',') + ']}');
}

main().catch((err) => fail(...classify(err)));
`;

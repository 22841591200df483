// Reads a zero-cache replica file with zero's own SQLite build
// (@rocicorp/zero-sqlite3: wal2 journal mode, which Debian's sqlite3 cannot open).
//
//   node replica.mjs FILE SQL
//
// Prints each row as its values joined by "|" (NULL as an empty string,
// BigInts and numbers as JavaScript prints them), like the sqlite3 CLI's
// default output. Exit 1 with "error: ..." on stderr on any failure.
// The module is resolved from ZS_INTEROP_DIR, the install prepare.sh made.
import { createRequire } from 'node:module';
import path from 'node:path';

const [file, sql] = process.argv.slice(2);
if (!file || !sql) {
  console.error('usage: node replica.mjs FILE SQL');
  process.exit(2);
}
const dir = process.env.ZS_INTEROP_DIR;
if (!dir) {
  console.error('error: ZS_INTEROP_DIR is not set');
  process.exit(2);
}
const require = createRequire(path.join(dir, 'package.json'));
const Database = require('@rocicorp/zero-sqlite3');

let db;
try {
  db = new Database(file, { readonly: true, fileMustExist: true });
  db.pragma('busy_timeout = 5000');
  const stmt = db.prepare(sql);
  stmt.safeIntegers(true);
  const rows = stmt.reader ? stmt.raw(true).all() : (stmt.run(), []);
  const out = rows.map((r) =>
    r.map((v) => (v === null ? '' : Buffer.isBuffer(v) ? v.toString('hex') : String(v))).join('|'),
  );
  if (out.length) process.stdout.write(out.join('\n') + '\n');
} catch (e) {
  console.error(`error: ${e.message}`);
  process.exit(1);
} finally {
  db?.close();
}

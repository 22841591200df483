// What zero_client.mjs and zero_watch.mjs share: @rocicorp/zero, resolved
// from ZS_INTEROP_DIR (the install prepare.sh made), and a one-table schema
// from COLUMN:TYPE[:key] arguments (TYPE string, number or boolean; the
// primary key is the columns marked key, or else the first), with
// enableLegacyQueries for ad-hoc ZQL. Exits 2 on a bad argument.
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

export async function loadZero() {
  const dir = process.env.ZS_INTEROP_DIR;
  if (!dir) {
    console.error('error: ZS_INTEROP_DIR is not set');
    process.exit(2);
  }
  const require = createRequire(path.join(dir, 'package.json'));
  return import(pathToFileURL(require.resolve('@rocicorp/zero')).href);
}

// { schema, names }: the schema of tableName and its column names in order
export function tableSchema(zero, tableName, cols) {
  const { createSchema, table, string, number, boolean } = zero;
  const types = { string, number, boolean };
  const columns = {};
  const names = [];
  const keys = [];
  for (const c of cols) {
    const [name, type, key] = c.split(':');
    if (key === 'key') keys.push(name);
    if (!types[type]) {
      console.error(`error: column ${c}: the type is string, number or boolean`);
      process.exit(2);
    }
    columns[name] = types[type]().optional();
    names.push(name);
  }
  const schema = createSchema({
    tables: [table(tableName).columns(columns).primaryKey(...(keys.length ? keys : [names[0]]))],
    enableLegacyQueries: true,
  });
  return { schema, names };
}

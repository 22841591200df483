// Runs one query through a zero-cache view-syncer as a Zero client does
// (@rocicorp/zero's own client, in memory, no permissions deployed: an
// ad-hoc ZQL query of a schema with enableLegacyQueries), waiting for the
// server's complete result.
//
//   node zero_client.mjs URL TABLE ORDER_BY COLUMN:TYPE...
//
// URL is the view-syncer's (http://host:port); TABLE's primary key is the
// columns written NAME:TYPE:key, or else its first column; TYPE is string,
// number or boolean. Prints each row as its
// columns' values joined by "|" in the order given (NULL as an empty string),
// ordered by ORDER_BY, like replica.mjs. Exit 1 with "error: ..." on stderr
// on any failure or when no complete result arrives within
// ZS_ZERO_CLIENT_TIMEOUT_MS (default 60000). The module is resolved from
// ZS_INTEROP_DIR, the install prepare.sh made; the client's own log goes to
// stderr.
import { loadZero, tableSchema } from './zero_schema.mjs';

const [url, tableName, orderBy, ...cols] = process.argv.slice(2);
if (!url || !tableName || !orderBy || cols.length === 0) {
  console.error('usage: node zero_client.mjs URL TABLE ORDER_BY COLUMN:TYPE...');
  process.exit(2);
}
const zero = await loadZero();
const { Zero } = zero;
const { schema, names } = tableSchema(zero, tableName, cols);

const logSink = {
  log(level, context, ...args) {
    process.stderr.write(`zero-client ${level}: ${args.map(String).join(' ')}\n`);
  },
};
const timeout = Number(process.env.ZS_ZERO_CLIENT_TIMEOUT_MS || 60000);
const timer = setTimeout(() => {
  console.error(`error: no complete result from ${url} within ${timeout} ms`);
  process.exit(1);
}, timeout);

let z;
try {
  z = new Zero({ cacheURL: url, schema, kvStore: 'mem', logLevel: 'error', logSink });
  const rows = await z.query[tableName].orderBy(orderBy, 'asc').run({ type: 'complete' });
  const out = rows.map((r) =>
    names.map((n) => (r[n] === null || r[n] === undefined ? '' : String(r[n]))).join('|'),
  );
  if (out.length) process.stdout.write(out.join('\n') + '\n');
  clearTimeout(timer);
  await z.close();
  process.exit(0);
} catch (e) {
  console.error(`error: ${e?.message ?? e}`);
  process.exit(1);
}

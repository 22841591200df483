// Watches a table through a zero-cache view-syncer as a Zero client's app
// does (@rocicorp/zero's own client, in memory, an ad-hoc ZQL query of a
// schema with enableLegacyQueries): two materialized views of TABLE, all of
// its rows and those with COLUMN >= VALUE, and a line each time either
// changes, until SIGTERM or SIGINT.
//
//   node zero_watch.mjs URL TABLE COLUMN VALUE COLUMN:TYPE...
//
// URL is the view-syncer's (http://host:port); TABLE's primary key is the
// columns written NAME:TYPE:key, or else the first; TYPE is string, number
// or boolean. Each line is
// "<view> <resultType> <rows>", view "all" or "where". The module is
// resolved from ZS_INTEROP_DIR, the install prepare.sh made; the client's
// own log goes to stderr.
import { loadZero, tableSchema } from './zero_schema.mjs';

const [url, tableName, whereColumn, whereValue, ...cols] = process.argv.slice(2);
if (!url || !tableName || !whereColumn || whereValue === undefined || cols.length === 0) {
  console.error('usage: node zero_watch.mjs URL TABLE COLUMN VALUE COLUMN:TYPE...');
  process.exit(2);
}
const zero = await loadZero();
const { Zero } = zero;
const { schema } = tableSchema(zero, tableName, cols);

const logSink = {
  log(level, context, ...args) {
    process.stderr.write(`zero-watch ${level}: ${args.map(String).join(' ')}\n`);
  },
};

const z = new Zero({ cacheURL: url, schema, kvStore: 'mem', logLevel: 'error', logSink });
const value = Number(whereValue);
const views = {
  all: z.materialize(z.query[tableName]),
  where: z.materialize(z.query[tableName].where(whereColumn, '>=', value)),
};
for (const [name, view] of Object.entries(views)) {
  view.addListener((data, resultType) => {
    process.stdout.write(`${name} ${resultType} ${data.length}\n`);
  });
}

const stop = async () => {
  for (const view of Object.values(views)) view.destroy();
  await z.close();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

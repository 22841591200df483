// The app server of TAP 048: zero-cache's push endpoint (ZERO_MUTATE_URL)
// for the custom mutators of item_app.mjs, applied with @rocicorp/zero's
// own PushProcessor and ZQLDatabase over a `postgres` (postgres.js) pool,
// as a Zero app's API server does.
//
//   node push_server.mjs PORT DB_FILE
//
// It answers POST /mutate (any path) on 127.0.0.1:PORT. DB_FILE holds the
// connection string of the current primary; it is read again for every
// request, so that a failover manager (here: the test) points the app
// server at the promoted server by rewriting the file, without restarting
// it. A changed string gets a new pool (the old one is ended).
//
// After a connection error the pool is discarded, as zero_stream's README
// asks of app servers ("Failover for Zero apps"): PushProcessor retries a
// mutation whose transaction failed by writing that failure as the
// mutation's permanent (application) error; on a discarded pool that retry
// fails too, so the whole push fails (zero-cache reports PushFailed, the
// client keeps the mutation and sends it again), and the next request gets
// a fresh pool.
//
// Each line on stdout is an event: "listening PORT", "pool N URL" (a new
// pool), "push CLIENT_ID MUTATION_ID NAME ARGS_JSON" (a mutation received),
// "result CLIENT_ID MUTATION_ID ok|ERROR_JSON" (its result),
// "push-failed REASON MESSAGE", "discarded N REASON" (a pool dropped after a
// connection error). The module is resolved from ZS_INTEROP_DIR.
import fs from 'node:fs';
import http from 'node:http';
import { pathToFileURL } from 'node:url';
import { loadApp } from './item_app.mjs';

const [portArg, dbFile] = process.argv.slice(2);
if (!portArg || !dbFile) {
  console.error('usage: node push_server.mjs PORT DB_FILE');
  process.exit(2);
}
const say = (line) => process.stdout.write(line + '\n');

const app = await loadApp(process.env.ZS_INTEROP_DIR);
const load = (m) => import(pathToFileURL(app.require.resolve(m)).href);
const server = await load('@rocicorp/zero/server');
const adapter = await load('@rocicorp/zero/server/adapters/postgresjs');
const postgres = app.require('postgres');
const { PushProcessor, ZQLDatabase } = server;
const { PostgresJsTransactionInternal } = adapter;

// errors of the connection, not of the statement: the pool is suspect
const CONNECTION_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH',
  'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT',
  '57P01', '57P02', '57P03', // admin_shutdown, crash_shutdown, cannot_connect_now
  '25006', // read_only_sql_transaction: the server is (again) a standby
]);
function connectionError(e) {
  for (let x = e, i = 0; x && i < 5; x = x.cause, i++) {
    const code = String(x.code ?? '');
    if (CONNECTION_CODES.has(code) || code.startsWith('08')) return `${code}: ${x.message}`;
  }
  return null;
}

let generations = 0;
let current = null;

// one pool and what PushProcessor uses of it
function makePool(url) {
  const gen = {
    n: ++generations,
    url,
    broken: null,
    sql: postgres(url, {
      max: 4,
      connect_timeout: 10,
      idle_timeout: 60,
      onnotice: () => {},
      connection: { application_name: 'zs-push-server' },
    }),
  };
  // a DBConnection (what PostgresJSConnection is) that refuses to run
  // anything once its pool is discarded
  const connection = {
    async transaction(fn) {
      if (gen.broken) throw new Error(`pool ${gen.n} was discarded after a connection error (${gen.broken})`);
      try {
        return await gen.sql.begin((pgTx) => fn(new PostgresJsTransactionInternal(pgTx)));
      } catch (e) {
        const why = connectionError(e);
        if (why && !gen.broken) {
          gen.broken = why;
          say(`discarded ${gen.n} ${why}`);
          gen.sql.end({ timeout: 0 }).catch(() => {});
        }
        throw e;
      }
    },
  };
  gen.processor = new PushProcessor(new ZQLDatabase(connection, app.schema), undefined, 'info');
  say(`pool ${gen.n} ${url}`);
  return gen;
}

function pool() {
  const url = fs.readFileSync(dbFile, 'utf8').trim();
  if (!current || current.broken || current.url !== url) {
    if (current && !current.broken) current.sql.end({ timeout: 5 }).catch(() => {});
    current = makePool(url);
  }
  return current;
}

async function handle(req, res) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  let status = 200;
  let out;
  try {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    const query = new URL(req.url, 'http://localhost').searchParams;
    for (const m of body.mutations ?? []) {
      say(`push ${m.clientID} ${m.id} ${m.name} ${JSON.stringify(m.args ?? null)}`);
    }
    out = await pool().processor.process(app.mutators, query, body);
    if (out.kind === 'PushFailed' || 'error' in out) {
      say(`push-failed ${out.reason ?? out.error} ${JSON.stringify(out.message ?? out.details ?? '')}`);
    }
    for (const m of out.mutations ?? []) {
      say(`result ${m.id.clientID} ${m.id.id} ${'error' in m.result ? JSON.stringify(m.result) : 'ok'}`);
    }
  } catch (e) {
    status = 500;
    out = { error: String(e?.message ?? e) };
    say(`push-failed exception ${JSON.stringify(out.error)}`);
  }
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(out));
}

// one request at a time, in order: zero-cache sends a client's pushes in
// order, and the log above stays readable
let chain = Promise.resolve();
const httpServer = http.createServer((req, res) => {
  if (req.method !== 'POST') {
    res.writeHead(req.method === 'GET' ? 200 : 405, { 'content-type': 'text/plain' });
    res.end('push server\n');
    return;
  }
  chain = chain.then(() => handle(req, res)).catch((e) => say(`push-failed handler ${JSON.stringify(String(e))}`));
});
httpServer.listen(Number(portArg), '127.0.0.1', () => say(`listening ${portArg}`));
for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    httpServer.close();
    (current ? current.sql.end({ timeout: 1 }) : Promise.resolve()).finally(() => process.exit(0));
  });
}

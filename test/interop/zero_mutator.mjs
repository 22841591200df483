// A long-running Zero client for TAP 048: @rocicorp/zero's own client (in
// memory), with the custom mutators of item_app.mjs, connected to a
// zero-cache view-syncer, that sends a mutation for each command it reads
// and says on stdout, one event a line, what becomes of it and of its
// connection. It runs until told "quit" (or stdin closes); it never makes a
// second Zero instance, so a reset shows as an event, never as a new client.
//
//   node zero_mutator.mjs URL
//
// Commands on stdin, one a line:
//   add ID TITLE...   z.mutate(mutators.item.add({id: ID, title: TITLE}))
//   quit              close the client and exit 0
//
// Events on stdout:
//   start CLIENT_ID                    the Zero instance exists
//   state NAME [REASON] client=CLIENT_ID group=CLIENT_GROUP_ID
//                                      every connection state change
//                                      (connecting, connected, disconnected,
//                                      needs-auth, error, closed)
//   sent ID mid=N                      the mutator ran optimistically: its mutation id
//   client ID ok|error MESSAGE         the mutation's client-side result
//   confirmed ID                       the server's result: success (the
//                                      mutation was applied upstream and
//                                      that reached this client)
//   rejected ID MESSAGE                the server's result: an error (also
//                                      when the connection goes to
//                                      disconnected, error or closed first)
//   rows RESULT_TYPE ID,ID,...         the live query of item, on each change
//   client-state-not-found             onClientStateNotFound (Zero would reload)
//   update-needed TYPE MESSAGE         onUpdateNeeded (Zero would reload)
//   fatal MESSAGE                      an exception in this script
// The client's own log (level ZS_ZERO_LOG_LEVEL, default info) goes to
// stderr. ZS_ZERO_DISCONNECT_TIMEOUT_MS sets Zero's disconnectTimeoutMs. The module is resolved from ZS_INTEROP_DIR.
import readline from 'node:readline';
import { loadApp } from './item_app.mjs';

const [url] = process.argv.slice(2);
if (!url) {
  console.error('usage: node zero_mutator.mjs URL');
  process.exit(2);
}
const say = (line) => process.stdout.write(line + '\n');
const one = (s) => String(s ?? '').replace(/\s+/g, ' ').trim();

const app = await loadApp(process.env.ZS_INTEROP_DIR, {
  onClientRun: ({ id, mutationID, reason }) => {
    if (reason === 'optimistic') say(`sent ${id} mid=${mutationID}`);
  },
});
const { Zero } = app.zero;

const logSink = {
  log(level, context, ...args) {
    const ctx = context ? Object.entries(context).map(([k, v]) => `${k}=${v}`).join(' ') + ' ' : '';
    process.stderr.write(`${new Date().toISOString()} zero-client ${level}: ${ctx}${args
      .map((a) => (a instanceof Error ? a.stack : typeof a === 'object' ? JSON.stringify(a) : String(a)))
      .join(' ')}\n`);
  },
};

let z;
try {
  z = new Zero({
    cacheURL: url,
    schema: app.schema,
    mutators: app.mutators,
    kvStore: 'mem',
    logLevel: process.env.ZS_ZERO_LOG_LEVEL || 'info',
    logSink,
    onClientStateNotFound: () => say('client-state-not-found'),
    onUpdateNeeded: (reason) => say(`update-needed ${reason?.type} ${one(reason?.message)}`),
    // how long the client may fail to connect before it goes to
    // disconnected, which settles every pending .server promise with an
    // error (the mutations stay queued and are sent again on reconnect);
    // Zero's default is 1 minute
    ...(process.env.ZS_ZERO_DISCONNECT_TIMEOUT_MS
      ? { disconnectTimeoutMs: Number(process.env.ZS_ZERO_DISCONNECT_TIMEOUT_MS) }
      : {}),
  });
} catch (e) {
  say(`fatal ${one(e?.stack ?? e)}`);
  process.exit(1);
}
say(`start ${z.clientID}`);
const group = await z.clientGroupID;

z.connection.state.subscribe((s) => {
  const reason = s.reason === undefined ? '' : ' ' + one(typeof s.reason === 'object' ? JSON.stringify(s.reason) : s.reason);
  say(`state ${s.name}${reason} client=${z.clientID} group=${group}`);
});
{
  const s = z.connection.state.current;
  say(`state ${s.name} client=${z.clientID} group=${group}`);
}

const view = z.materialize(z.query.item.orderBy('id', 'asc'));
view.addListener((rows, resultType) => {
  say(`rows ${resultType} ${rows.map((r) => r.id).join(',')}`);
});

function add(id, title) {
  let r;
  try {
    r = z.mutate(app.mutators.item.add({ id, title: title || id }));
  } catch (e) {
    say(`client ${id} error ${one(e?.message ?? e)}`);
    return;
  }
  // in 1.9.0 both promises resolve, to {type: 'success'} or to {type:
  // 'error', error: {type: 'app' | 'zero', message}}; .server settles when
  // the mutation's result (or its client's lastMutationID past it) reaches
  // this client through the view-syncer, or with a 'zero' error when the
  // connection goes to disconnected, error or closed
  const describe = (d) => (d?.type === 'success' ? 'ok' : `error ${d?.error?.type}: ${one(d?.error?.message ?? JSON.stringify(d))}`);
  r.client.then(
    (d) => say(`client ${id} ${describe(d)}`),
    (e) => say(`client ${id} error thrown: ${one(e?.message ?? e)}`),
  );
  r.server.then(
    (d) => say(d?.type === 'success' ? `confirmed ${id}` : `rejected ${id} ${describe(d)}`),
    (e) => say(`rejected ${id} thrown: ${one(e?.message ?? e)}`),
  );
}

async function quit(code) {
  try {
    view.destroy();
    await z.close();
  } catch (e) {
    say(`fatal ${one(e?.message ?? e)}`);
  }
  process.exit(code);
}

const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  const [cmd, id, ...rest] = line.trim().split(/\s+/);
  if (cmd === 'add' && id) add(id, rest.join(' '));
  else if (cmd === 'quit') quit(0);
  else if (cmd) say(`fatal unknown command: ${one(line)}`);
});
rl.on('close', () => quit(0));
process.on('unhandledRejection', (e) => say(`fatal unhandled ${one(e?.stack ?? e)}`));

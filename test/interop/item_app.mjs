// The small Zero app of TAP 048, shared by its app server (push_server.mjs)
// and its client (zero_mutator.mjs), as a Zero app shares its schema and
// custom mutators between the two: a table item (id, title), and one custom
// mutator, item.add({id, title}), that inserts an item; on the server it
// also appends a row to item_log (a table of its own, no primary key on the
// item's id), so that applying one mutation twice would show as two rows.
//
//   const app = await loadApp(process.env.ZS_INTEROP_DIR, {onClientRun});
//   app.zero, app.schema, app.mutators
//
// The module @rocicorp/zero is resolved from ZS_INTEROP_DIR, the install
// test/interop/prepare.sh made. onClientRun({id, mutationID, reason}) is
// called each time the mutator runs on a client (optimistic, then on every
// rebase).
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

export async function loadApp(dir, { onClientRun } = {}) {
  if (!dir) throw new Error('ZS_INTEROP_DIR is not set');
  const require = createRequire(path.join(dir, 'package.json'));
  const zero = await import(pathToFileURL(require.resolve('@rocicorp/zero')).href);
  const { createSchema, table, string, defineMutator, defineMutators } = zero;

  const schema = createSchema({
    tables: [table('item').columns({ id: string(), title: string() }).primaryKey('id')],
    // the client's live query of item is an ad-hoc ZQL query, read under
    // the permissions the test writes (zero.permissions)
    enableLegacyQueries: true,
  });

  const mutators = defineMutators({
    item: {
      add: defineMutator(async ({ tx, args }) => {
        await tx.mutate.item.insert({ id: args.id, title: args.title });
        if (tx.location === 'server') {
          await tx.dbTransaction.query(
            'INSERT INTO item_log (item_id, client_id, mutation_id) VALUES ($1, $2, $3)',
            [args.id, tx.clientID, tx.mutationID],
          );
        } else if (onClientRun) {
          onClientRun({ id: args.id, mutationID: tx.mutationID, reason: tx.reason });
        }
      }),
    },
  });

  return { zero, require, schema, mutators };
}

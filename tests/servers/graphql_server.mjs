// cordon's GraphQL test server: a real GraphQL server (npm `graphql-yoga`, with the automatic persisted
// queries plugin `@graphql-yoga/plugin-apq`) over HTTPS, endpoint /graphql, for the GraphQL policy tests.
//
//   CORDON_GRAPHQL_PREFIX=<npm prefix> node tests/servers/graphql_server.mjs --port P --cert CERT.pem \
//       --key KEY.pem [--log FILE] [--log-requests FILE]
//
// It listens on 127.0.0.1:P with the given PEM certificate and key and prints `ready` on stdout once it accepts
// connections; SIGTERM stops it. Queries are answered over GET and POST, mutations over POST only (yoga's
// defaults); subscriptions over SSE (Accept: text/event-stream). No GraphiQL, no landing page, errors
// unmasked. A tiny GitHub-like schema, its state in memory (issues 1 and 2, no comments at start):
//
//   type Issue { number: Int!, title: String!, comments: [String!]! }
//   type Query { issues: [Issue!]!, issue(number: Int!): Issue }
//   type Mutation { addComment(number: Int!, body: String!): Issue!, deleteRepo(name: String!): Boolean! }
//   type Subscription { ticks(count: Int!): Int! }     yields 1, 2, ..., count
//
// addComment on an unknown issue is a GraphQL error "no issue N"; deleteRepo answers true.
//
// APQ (automatic persisted queries, Apollo's protocol): a request with extensions.persistedQuery
// {version: 1, sha256Hash} and no query runs the stored document, or, when the hash is unknown, is answered
// HTTP 404 {"errors":[{"message":"PersistedQueryNotFound","extensions":{"code":"PERSISTED_QUERY_NOT_FOUND"}}]};
// one with both the query and its hash stores the document (a wrong hash is 400 PersistedQueryMismatch).
//
// With --log FILE, every operation that is executed (after parsing, validation and APQ lookup) appends one JSON
// line to FILE, flushed before it answers, so a test can tell what got through cordon:
//   {"operation": "query"|"mutation"|"subscription", "name": OPERATION_NAME or null, "fields": [TOP-LEVEL FIELDS]}
// With --log-requests FILE, every HTTP request that reaches the server appends, before yoga sees it:
//   {"method": "GET"|"POST"|..., "url": PATH_AND_QUERY, "body": BODY_TEXT or null}
//
// The packages are loaded from the prefix by path (createRequire): ES modules ignore NODE_PATH. They are loaded
// as CommonJS, so that yoga, the APQ plugin and this script share one copy of `graphql`.
import { appendFileSync, readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const prefix = process.env.CORDON_GRAPHQL_PREFIX;
if (!prefix) {
  console.error('set CORDON_GRAPHQL_PREFIX to the npm prefix where graphql-yoga is installed');
  process.exit(2);
}
const requireFromPrefix = createRequire(join(prefix, 'package.json'));
let yogaPkg, apqPkg, graphqlPkg;
try {
  yogaPkg = requireFromPrefix('graphql-yoga');
  apqPkg = requireFromPrefix('@graphql-yoga/plugin-apq');
  graphqlPkg = requireFromPrefix('graphql');
} catch (e) {
  console.error(`graphql-yoga, @graphql-yoga/plugin-apq or graphql is not installed under ${prefix}: ${e.message}`);
  process.exit(2);
}
const { createYoga, createSchema } = yogaPkg;
const { useAPQ } = apqPkg;
const { getOperationAST, GraphQLError, Kind } = graphqlPkg;

let args;
try {
  ({ values: args } = parseArgs({
    options: {
      port: { type: 'string' },
      cert: { type: 'string' },
      key: { type: 'string' },
      log: { type: 'string' },
      'log-requests': { type: 'string' },
    },
    strict: true,
  }));
} catch (e) {
  console.error(e.message);
  process.exit(2);
}
const port = Number(args.port);
if (!args.port || !Number.isInteger(port) || port < 1 || port > 65535 || !args.cert || !args.key) {
  console.error('usage: graphql_server.mjs --port P --cert CERT.pem --key KEY.pem [--log FILE] [--log-requests FILE]');
  process.exit(2);
}

const issues = new Map([
  [1, { number: 1, title: 'Crash on start', comments: [] }],
  [2, { number: 2, title: 'Add a dark mode', comments: [] }],
]);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const schema = createSchema({
  typeDefs: /* GraphQL */ `
    type Issue { number: Int!, title: String!, comments: [String!]! }
    type Query { issues: [Issue!]!, issue(number: Int!): Issue }
    type Mutation { addComment(number: Int!, body: String!): Issue!, deleteRepo(name: String!): Boolean! }
    type Subscription { ticks(count: Int!): Int! }
  `,
  resolvers: {
    Query: {
      issues: () => [...issues.values()],
      issue: (_, { number }) => issues.get(number) ?? null,
    },
    Mutation: {
      addComment: (_, { number, body }) => {
        const issue = issues.get(number);
        if (!issue) throw new GraphQLError(`no issue ${number}`);
        issue.comments.push(body);
        return issue;
      },
      deleteRepo: () => true,
    },
    Subscription: {
      ticks: {
        subscribe: async function* (_, { count }) {
          for (let i = 1; i <= count; i++) {
            yield { ticks: i };
            await sleep(10);
          }
        },
      },
    },
  },
});

// The top-level field names of a selection set, through inline fragments and fragment spreads.
function topLevelFields(selectionSet, fragments, out = []) {
  for (const sel of selectionSet.selections) {
    if (sel.kind === Kind.FIELD) out.push(sel.name.value);
    else if (sel.kind === Kind.INLINE_FRAGMENT) topLevelFields(sel.selectionSet, fragments, out);
    else if (sel.kind === Kind.FRAGMENT_SPREAD && fragments[sel.name.value]) {
      topLevelFields(fragments[sel.name.value].selectionSet, fragments, out);
    }
  }
  return out;
}

function logExecuted({ document, operationName }) {
  const op = getOperationAST(document, operationName ?? undefined);
  if (!op) return;
  const fragments = {};
  for (const def of document.definitions) {
    if (def.kind === Kind.FRAGMENT_DEFINITION) fragments[def.name.value] = def;
  }
  const line = {
    operation: op.operation,
    name: op.name?.value ?? null,
    fields: topLevelFields(op.selectionSet, fragments),
  };
  appendFileSync(args.log, JSON.stringify(line) + '\n');
}

const plugins = [useAPQ()];
if (args.log) {
  plugins.push({
    onExecute: ({ args: execArgs }) => logExecuted(execArgs),
    onSubscribe: ({ args: subArgs }) => logExecuted(subArgs),
  });
}

const yoga = createYoga({
  schema,
  graphqlEndpoint: '/graphql',
  graphiql: false,
  landingPage: false,
  maskedErrors: false,
  logging: 'warn',
  plugins,
});

// The body is read here, logged, and handed to yoga as an already-read body (whatwg-node's adapter takes a
// Uint8Array in req.body), so that --log-requests sees the raw request exactly as it arrived.
const server = createServer(
  { cert: readFileSync(args.cert), key: readFileSync(args.key) },
  (req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('error', () => res.destroy());
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (args['log-requests']) {
        const line = { method: req.method, url: req.url, body: body.length ? body.toString('utf8') : null };
        appendFileSync(args['log-requests'], JSON.stringify(line) + '\n');
      }
      if (body.length) req.body = body;
      yoga(req, res);
    });
  },
);
server.listen(port, '127.0.0.1', () => {
  console.log('ready');
});
process.on('SIGTERM', () => {
  server.close();
  process.exit(0);
});

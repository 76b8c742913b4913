// cordon's GraphQL test client: the agent side of the GraphQL policy tests, a real client (npm `@apollo/client`,
// its core and its persisted-query link, no React) whose HTTP goes through cordon.
//
//   CORDON_GRAPHQL_PREFIX=<npm prefix> node tests/clients/graphql_agent.mjs --url https://HOST:PORT/graphql \
//       [--ca CA.pem] [--apq] [--get] STEP...
//
// Each STEP is one argument, run in order by one ApolloClient, each with fetchPolicy "no-cache" (every step goes
// to the network) and errorPolicy "all":
//   issues            query Issues { issues { number title } }
//   comment:N:TEXT    mutation AddComment($number: Int!, $body: String!) { addComment(...) { number title comments } }
//   delete:NAME       mutation DeleteRepo($name: String!) { deleteRepo(name: $name) }
// --apq puts Apollo's PersistedQueryLink (SHA-256 from node:crypto) in front: each operation is first sent as
// its hash alone, and again with the full document when the server answers PersistedQueryNotFound.
// --get sends queries (not mutations) as GET (HttpLink useGETForQueries; with --apq also useGETForHashedQueries).
//
// HTTP goes through undici's EnvHttpProxyAgent (HTTPS_PROXY / HTTP_PROXY / NO_PROXY; Node 20's own fetch ignores
// them) with undici's fetch. With --ca, CA.pem is the only CA trusted for the server (requestTls when tunnelled
// through a proxy, connect when direct) and for an https:// proxy (proxyTls); without it, Node's default CAs
// plus NODE_EXTRA_CA_CERTS. Certificate verification is always on.
//
// One JSON line per step on stdout:
//   {"step": STEP, "data": DATA or null, "errors": [ERROR...], "status": STATUS or null,
//    "http": [{"method": M, "status": S or null, "reason": X_CORDON_REASON or null}...]}
// "http" lists the step's HTTP exchanges in order (two with --apq when the hash was unknown); "status" is the
// last one's status (null when none got an answer). An ERROR is a GraphQL error {"message", "extensions"?,
// "path"?} (from a 200 answer, or parsed out of the JSON body of a non-2xx answer), or, when the answer was no
// GraphQL response, {"message", "body"} (the body's first 500 characters), or for a transport failure
// (e.g. a refused CONNECT) {"message", "causes": [the error's cause chain]}. GraphQL and HTTP errors never stop
// the program: it exits 0 once every step has its line; 2 on bad arguments. A step taking over 60 s gets the
// error "timed out after 60 s" and the next step runs.
//
// The packages are loaded from the prefix by path (createRequire): ES modules ignore NODE_PATH. They are loaded
// as CommonJS, so that Apollo's links and errors share one copy of each module.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

// stdout carries only the step lines: anything a library logs goes to stderr.
console.log = console.info = console.debug = console.error;

const prefix = process.env.CORDON_GRAPHQL_PREFIX;
if (!prefix) {
  console.error('set CORDON_GRAPHQL_PREFIX to the npm prefix where @apollo/client and undici are installed');
  process.exit(2);
}
const requireFromPrefix = createRequire(join(prefix, 'package.json'));
let apollo, pq, undici;
try {
  apollo = requireFromPrefix('@apollo/client/core');
  pq = requireFromPrefix('@apollo/client/link/persisted-queries');
  undici = requireFromPrefix('undici');
} catch (e) {
  console.error(`@apollo/client or undici is not installed under ${prefix}: ${e.message}`);
  process.exit(2);
}
const { ApolloClient, ApolloLink, HttpLink, InMemoryCache, gql, CombinedGraphQLErrors, ServerError, ServerParseError } =
  apollo;
const { PersistedQueryLink } = pq;
const { EnvHttpProxyAgent, setGlobalDispatcher, fetch: undiciFetch } = undici;

const USAGE = 'usage: graphql_agent.mjs --url https://HOST:PORT/graphql [--ca CA.pem] [--apq] [--get] STEP...';
let args, steps;
try {
  ({ values: args, positionals: steps } = parseArgs({
    options: {
      url: { type: 'string' },
      ca: { type: 'string' },
      apq: { type: 'boolean', default: false },
      get: { type: 'boolean', default: false },
    },
    allowPositionals: true,
    strict: true,
  }));
} catch (e) {
  console.error(`${e.message}\n${USAGE}`);
  process.exit(2);
}
if (!args.url || steps.length === 0) {
  console.error(USAGE);
  process.exit(2);
}

const ISSUES = gql`
  query Issues {
    issues {
      number
      title
    }
  }
`;
const ADD_COMMENT = gql`
  mutation AddComment($number: Int!, $body: String!) {
    addComment(number: $number, body: $body) {
      number
      title
      comments
    }
  }
`;
const DELETE_REPO = gql`
  mutation DeleteRepo($name: String!) {
    deleteRepo(name: $name)
  }
`;

// A STEP as {kind: "query"|"mutate", document, variables}, or null when it is not one.
function parseStep(step) {
  if (step === 'issues') return { kind: 'query', document: ISSUES, variables: {} };
  let m = /^comment:(\d+):(.*)$/s.exec(step);
  if (m) return { kind: 'mutate', document: ADD_COMMENT, variables: { number: Number(m[1]), body: m[2] } };
  m = /^delete:(.+)$/s.exec(step);
  if (m) return { kind: 'mutate', document: DELETE_REPO, variables: { name: m[1] } };
  return null;
}
const parsed = steps.map(parseStep);
const bad = steps.filter((_, i) => parsed[i] === null);
if (bad.length) {
  console.error(`not a step: ${bad.join(', ')} (issues, comment:N:TEXT, delete:NAME)\n${USAGE}`);
  process.exit(2);
}

const tls = args.ca ? { ca: readFileSync(args.ca) } : {};
setGlobalDispatcher(new EnvHttpProxyAgent({ connect: tls, requestTls: tls, proxyTls: tls }));

// Every HTTP exchange of the current step, recorded by the fetch HttpLink uses.
let exchanges = [];
async function recordingFetch(url, init = {}) {
  const entry = { method: (init.method ?? 'GET').toUpperCase(), status: null, reason: null };
  exchanges.push(entry);
  const response = await undiciFetch(url, init);
  entry.status = response.status;
  entry.reason = response.headers.get('x-cordon-reason');
  return response;
}

const sha256 = (text) => createHash('sha256').update(text).digest('hex');
const http = new HttpLink({ uri: args.url, fetch: recordingFetch, useGETForQueries: args.get });
const link = args.apq
  ? ApolloLink.from([new PersistedQueryLink({ sha256, useGETForHashedQueries: args.get }), http])
  : http;
const client = new ApolloClient({ link, cache: new InMemoryCache() });

const graphqlError = (e) => {
  const out = { message: e?.message ?? String(e) };
  if (e?.extensions && Object.keys(e.extensions).length) out.extensions = e.extensions;
  if (e?.path) out.path = e.path;
  return out;
};

// An error from Apollo (thrown or in result.error) as {data, errors}.
function describe(error) {
  if (CombinedGraphQLErrors.is(error)) {
    return { data: error.data ?? null, errors: error.errors.map(graphqlError) };
  }
  if (ServerError.is(error) || ServerParseError.is(error)) {
    try {
      const body = JSON.parse(error.bodyText);
      if (body && Array.isArray(body.errors)) return { data: body.data ?? null, errors: body.errors.map(graphqlError) };
    } catch {}
    return { data: null, errors: [{ message: error.message, body: String(error.bodyText ?? '').slice(0, 500) }] };
  }
  const causes = [];
  for (let c = error?.cause; c && causes.length < 10; c = c.cause) causes.push(String(c?.message ?? c));
  const out = { message: error?.message ?? String(error) };
  if (causes.length) out.causes = causes;
  return { data: null, errors: [out] };
}

const STEP_TIMEOUT_MS = 60_000;
for (let i = 0; i < steps.length; i++) {
  const { kind, document, variables } = parsed[i];
  exchanges = [];
  let line;
  try {
    const run =
      kind === 'query'
        ? client.query({ query: document, variables, fetchPolicy: 'no-cache', errorPolicy: 'all' })
        : client.mutate({ mutation: document, variables, fetchPolicy: 'no-cache', errorPolicy: 'all' });
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${STEP_TIMEOUT_MS / 1000} s`)), STEP_TIMEOUT_MS);
    });
    const result = await Promise.race([run, timeout]).finally(() => clearTimeout(timer));
    if (result.error) {
      const d = describe(result.error);
      line = { data: result.data ?? d.data, errors: d.errors };
    } else {
      line = { data: result.data ?? null, errors: [] };
    }
  } catch (e) {
    line = describe(e);
  }
  const last = exchanges.length ? exchanges[exchanges.length - 1].status : null;
  process.stdout.write(JSON.stringify({ step: steps[i], ...line, status: last, http: exchanges }) + '\n');
}
process.exit(0);

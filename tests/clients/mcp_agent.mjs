// A real MCP client for the MCP policy tests, the TypeScript side: the official SDK (npm
// `@modelcontextprotocol/sdk`, its Client and StreamableHTTPClientTransport), every step in one session through
// cordon. It takes the same steps and prints the same lines as tests/clients/mcp_agent.py:
//
//   CORDON_MCP_TS_PREFIX=<npm prefix> node tests/clients/mcp_agent.mjs URL STEP [STEP ...]
//
// Each STEP is one argument: "list", "call NAME JSON_ARGS" or "touch PATH". The session is initialized before
// the first step. HTTP goes through undici's EnvHttpProxyAgent (HTTPS_PROXY / HTTP_PROXY; Node 20's own fetch
// ignores them) with undici's fetch, which the SDK is given; the only CA trusted (for the server and an https://
// proxy) is SSL_CERT_FILE's. Certificate verification is on. The SDK's own redirect handling is left as it is
// (it follows a redirect within the origin). One JSON line per step on stdout:
//
//   {"step": "list", "tools": [{"name": ..., "description": ...}, ...]}
//   {"step": "call", "tool": NAME, "result": TEXT}
//   {"step": "call", "tool": NAME, "error": {"code": N, "message": M}}        a JSON-RPC error
//   {"step": "call", "tool": NAME, "error": {"code": null, "message": TEXT}}  a result with isError
//   {"step": "touch"}
//
// When the HTTP layer refuses a step (a 4xx/5xx answer that is not JSON) it prints {"step": STEP, "http_error":
// STATUS, "reason": X_CORDON_REASON or null} and exits 3. Any other failure, including a step taking over 60 s,
// is one line on stderr and exit 2.
//
// The packages are loaded from the prefix by path (createRequire): ES modules ignore NODE_PATH.
import { closeSync, openSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

// stdout carries only the step lines: anything a library logs goes to stderr.
console.log = console.info = console.debug = console.error;

const STEP_TIMEOUT_MS = 60_000;
const prefix = process.env.CORDON_MCP_TS_PREFIX;
if (!prefix) {
  console.error('set CORDON_MCP_TS_PREFIX to the npm prefix where @modelcontextprotocol/sdk and undici are installed');
  process.exit(2);
}
const requireFromPrefix = createRequire(join(prefix, 'package.json'));
let sdk, transportModule, types, undici;
try {
  sdk = requireFromPrefix('@modelcontextprotocol/sdk/client/index.js');
  transportModule = requireFromPrefix('@modelcontextprotocol/sdk/client/streamableHttp.js');
  types = requireFromPrefix('@modelcontextprotocol/sdk/types.js');
  undici = requireFromPrefix('undici');
} catch (e) {
  console.error(`@modelcontextprotocol/sdk or undici is not installed under ${prefix}: ${e.message}`);
  process.exit(2);
}
const { Client } = sdk;
const { StreamableHTTPClientTransport } = transportModule;
const { McpError } = types;
const { EnvHttpProxyAgent, fetch: undiciFetch } = undici;

function parseStep(arg) {
  const words = arg.startsWith('call ') ? splitN(arg, 3) : splitN(arg, 2);
  const ok =
    (words.length === 1 && words[0] === 'list') ||
    (words[0] === 'call' && words.length === 3) ||
    (words[0] === 'touch' && words.length === 2);
  if (!ok) {
    console.error(`mcp_agent: bad step ${JSON.stringify(arg)} (list | call NAME JSON_ARGS | touch PATH)`);
    process.exit(2);
  }
  if (words[0] === 'call') words[2] = JSON.parse(words[2]);
  return words;
}

// `text` split at its first n-1 spaces.
function splitN(text, n) {
  const out = [];
  let rest = text;
  while (out.length < n - 1 && rest.includes(' ')) {
    const i = rest.indexOf(' ');
    out.push(rest.slice(0, i));
    rest = rest.slice(i + 1);
  }
  out.push(rest);
  return out;
}

const [url, ...stepArgs] = process.argv.slice(2);
if (!url || stepArgs.length === 0) {
  console.error('usage: mcp_agent.mjs URL STEP [STEP ...]');
  process.exit(2);
}
const steps = stepArgs.map(parseStep);

const caFile = process.env.SSL_CERT_FILE;
const tls = caFile ? { ca: readFileSync(caFile) } : {};
const dispatcher = new EnvHttpProxyAgent({ connect: tls, requestTls: tls, proxyTls: tls });

let step = 'initialize';
// The (status, x-cordon-reason) of the current step's last 4xx/5xx answer that was not JSON.
let refusal = null;
async function fetchThroughCordon(input, init) {
  const response = await undiciFetch(input, { ...init, dispatcher });
  const ctype = response.headers.get('content-type') ?? '';
  if (response.status >= 400 && !ctype.startsWith('application/json')) {
    refusal = { status: response.status, reason: response.headers.get('x-cordon-reason') };
  }
  return response;
}

function emit(fields) {
  process.stdout.write(`${JSON.stringify({ step, ...fields })}\n`);
}

function withTimeout(promise) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`step ${JSON.stringify(step)} took over 60 s`)), STEP_TIMEOUT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function doStep(client, words) {
  if (words[0] === 'list') {
    const result = await client.listTools();
    emit({ tools: result.tools.map((t) => ({ name: t.name, description: t.description })) });
  } else if (words[0] === 'call') {
    const result = await client.callTool({ name: words[1], arguments: words[2] });
    const text = (result.content ?? [])
      .filter((c) => c.type === 'text')
      .map((c) => c.text)
      .join('');
    emit(result.isError ? { tool: words[1], error: { code: null, message: text } } : { tool: words[1], result: text });
  } else if (words[0] === 'touch') {
    closeSync(openSync(words[1], 'a'));
    emit({});
  }
}

async function main() {
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: fetchThroughCordon });
  const client = new Client({ name: 'cordon-mcp-agent-ts', version: '1.0.0' });
  try {
    await withTimeout(client.connect(transport));
    for (const words of steps) {
      step = words[0];
      refusal = null;
      try {
        await withTimeout(doStep(client, words));
      } catch (e) {
        if (refusal) throw e;
        if (e instanceof McpError && words[0] === 'call') {
          emit({ tool: words[1], error: { code: e.code, message: e.message } });
        } else {
          throw e;
        }
      }
    }
  } catch (e) {
    if (refusal) {
      emit({ http_error: refusal.status, reason: refusal.reason });
      process.exitCode = 3;
    } else {
      process.stderr.write(`mcp_agent: step ${JSON.stringify(step)}: ${String(e?.stack ?? e).replace(/\n/g, ' ')}\n`);
      process.exitCode = 2;
    }
  } finally {
    await client.close().catch(() => {});
    await dispatcher.close().catch(() => {});
  }
}

await main();
process.exit();

// cordon's OAuth2 test server: a real authorization server (npm `oidc-provider`) that issues tokens by the
// client-credentials grant, on loopback, for the token-source tests.
//
//   CORDON_OIDC_PREFIX=<npm prefix with oidc-provider> node tests/servers/oauth2-cc.mjs [PORT]
//
// PORT 0 (the default) takes a free port. Prints `listening PORT` on stdout once it accepts connections;
// the token endpoint is then POST http://127.0.0.1:PORT/token. Clients:
//   sandbox-client / sandbox-secret         client_secret_basic (HTTP Basic)
//   sandbox-post-client / sandbox-secret    client_secret_post (form fields)
// both allowed the scope `api:read`. Access tokens are opaque and live 600 s (oidc-provider's default).
//
// oidc-provider is an ES module, and ES modules ignore NODE_PATH, so it is loaded from the prefix by path.
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const prefix = process.env.CORDON_OIDC_PREFIX;
if (!prefix) {
  console.error('set CORDON_OIDC_PREFIX to the npm prefix where oidc-provider is installed');
  process.exit(2);
}
const requireFromPrefix = createRequire(join(prefix, 'package.json'));
let entry;
try {
  entry = requireFromPrefix.resolve('oidc-provider');
} catch (e) {
  console.error(`oidc-provider is not installed under ${prefix}: npm install --prefix ${prefix} oidc-provider`);
  process.exit(2);
}
const { default: Provider } = await import(pathToFileURL(entry).href);

const wanted = Number(process.argv[2] ?? 0);
if (!Number.isInteger(wanted) || wanted < 0 || wanted > 65535) {
  console.error(`not a port: ${process.argv[2]}`);
  process.exit(2);
}

const client = (id, method) => ({
  client_id: id,
  client_secret: 'sandbox-secret',
  grant_types: ['client_credentials'],
  redirect_uris: [],
  response_types: [],
  token_endpoint_auth_method: method,
});

// The issuer must name the port, so the server listens first and the provider is mounted on it after.
let handler = (_req, res) => { res.statusCode = 503; res.end(); };
const server = createServer((req, res) => handler(req, res));
server.listen(wanted, '127.0.0.1', () => {
  const port = server.address().port;
  const provider = new Provider(`http://127.0.0.1:${port}`, {
    clients: [client('sandbox-client', 'client_secret_basic'), client('sandbox-post-client', 'client_secret_post')],
    features: { clientCredentials: { enabled: true }, devInteractions: { enabled: false } },
    scopes: ['api:read'],
  });
  handler = provider.callback();
  console.log(`listening ${port}`);
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(0));

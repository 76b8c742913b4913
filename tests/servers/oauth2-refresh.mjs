// cordon's OAuth2 provider for held sign-ins: a real authorization server (npm `oidc-provider`) that rotates
// refresh tokens on every use (`rotateRefreshToken: true`: the old one is consumed when the new one is issued,
// and presenting a consumed one revokes the whole grant), on loopback, for the `oauth2_refresh` tests.
//
//   CORDON_OIDC_PREFIX=<npm prefix with oidc-provider> node tests/servers/oauth2-refresh.mjs [PORT] [ACCESS_TTL]
//
// PORT 0 (the default) takes a free port; ACCESS_TTL is the access tokens' lifetime in seconds (default 600).
// Prints `listening PORT` on stdout once it accepts connections; the token endpoint is then
// POST http://127.0.0.1:PORT/token. One client: cordon-client / cordon-secret (client_secret_basic), grants
// authorization_code and refresh_token, scopes openid offline_access.
//
// Test hooks, not part of the provider (the test's stand-in for an operator's one-time sign-in and for the
// provider's side of a revocation):
//   POST /test/seed     a new grant for account `alice` and its first refresh token: {"refresh_token", "grant"}
//   POST /test/revoke   every grant made by /test/seed removed (their refresh tokens then answer invalid_grant)
//   POST /test/delay?ms=N   the next refresh's answer is held N ms after the provider has rotated (the old token
//                       is consumed and the new one saved before the wait): a client killed meanwhile never gets it
//   GET  /test/stats    {"refresh_ok", "refresh_failed", "errors": [error codes...], "last_refresh_token"}
//   GET  /test/active?token=T   {"active": bool}: whether T is a valid access token
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
const accessTtl = Number(process.argv[3] ?? 600);
if (!Number.isInteger(wanted) || wanted < 0 || wanted > 65535 || !Number.isInteger(accessTtl) || accessTtl < 1) {
  console.error(`usage: oauth2-refresh.mjs [PORT] [ACCESS_TTL]`);
  process.exit(2);
}

const stats = { refresh_ok: 0, refresh_failed: 0, errors: [], last_refresh_token: null };
const grants = [];
let delayNext = 0;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const json = (res, status, body) => {
  res.statusCode = status;
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify(body));
};

let provider;
async function hooks(req, res, url) {
  if (req.method === 'POST' && url.pathname === '/test/seed') {
    const grant = new provider.Grant({ accountId: 'alice', clientId: 'cordon-client' });
    grant.addOIDCScope('openid offline_access');
    const grantId = await grant.save();
    grants.push(grantId);
    const client = await provider.Client.find('cordon-client');
    const now = Math.floor(Date.now() / 1000);
    const token = new provider.RefreshToken({
      accountId: 'alice',
      client,
      grantId,
      scope: 'openid offline_access',
      gty: 'authorization_code',
      authTime: now,
    });
    return json(res, 200, { refresh_token: await token.save(), grant: grantId });
  }
  if (req.method === 'POST' && url.pathname === '/test/revoke') {
    for (const id of grants) {
      const grant = await provider.Grant.find(id);
      if (grant) await grant.destroy();
    }
    return json(res, 200, { revoked: grants.length });
  }
  if (req.method === 'POST' && url.pathname === '/test/delay') {
    delayNext = Number(url.searchParams.get('ms') ?? 0);
    return json(res, 200, { delay: delayNext });
  }
  if (req.method === 'GET' && url.pathname === '/test/stats') return json(res, 200, stats);
  if (req.method === 'GET' && url.pathname === '/test/active') {
    const token = await provider.AccessToken.find(url.searchParams.get('token') ?? '');
    return json(res, 200, { active: Boolean(token && !token.isExpired) });
  }
  return json(res, 404, { error: 'no such test hook' });
}

// The issuer must name the port, so the server listens first and the provider is mounted on it after.
let handler = (_req, res) => { res.statusCode = 503; res.end(); };
const server = createServer((req, res) => {
  const url = new URL(req.url, 'http://127.0.0.1');
  if (url.pathname.startsWith('/test/')) {
    hooks(req, res, url).catch((e) => json(res, 500, { error: String(e) }));
    return;
  }
  handler(req, res);
});
server.listen(wanted, '127.0.0.1', () => {
  const port = server.address().port;
  provider = new Provider(`http://127.0.0.1:${port}`, {
    clients: [{
      client_id: 'cordon-client',
      client_secret: 'cordon-secret',
      grant_types: ['authorization_code', 'refresh_token'],
      redirect_uris: ['http://127.0.0.1/callback'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    }],
    rotateRefreshToken: true,
    ttl: { AccessToken: accessTtl, RefreshToken: 86400, Grant: 86400, IdToken: 3600 },
    features: { devInteractions: { enabled: false } },
    scopes: ['openid', 'offline_access'],
  });
  // Count refreshes, and hold an answer when asked: after the provider rotated, before the client hears.
  provider.use(async (ctx, next) => {
    await next();
    if (ctx.method !== 'POST' || ctx.path !== '/token' || ctx.oidc?.params?.grant_type !== 'refresh_token') return;
    if (ctx.status === 200) {
      stats.refresh_ok += 1;
      stats.last_refresh_token = ctx.body?.refresh_token ?? null;
    } else {
      stats.refresh_failed += 1;
      stats.errors.push(ctx.body?.error_description ?? ctx.body?.error ?? String(ctx.status));
    }
    if (delayNext > 0) {
      const ms = delayNext;
      delayNext = 0;
      await sleep(ms);
    }
  });
  handler = provider.callback();
  console.log(`listening ${port}`);
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(0));

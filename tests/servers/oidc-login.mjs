// cordon's OpenID Connect test provider: a real provider (npm `oidc-provider`) that signs users in by the
// authorization-code flow with PKCE, on loopback, for the console's browser sign-in tests.
//
//   CORDON_OIDC_PREFIX=<npm prefix with oidc-provider> node tests/servers/oidc-login.mjs PORT REDIRECT_URI...
//
// PORT 0 takes a free port. Prints `listening PORT` on stdout once it accepts connections; the issuer is then
// http://127.0.0.1:PORT, with discovery at /.well-known/openid-configuration, authorization at /auth, the
// token endpoint at POST /token and the keys at /jwks. One client:
//   cordon-console / console-secret   client_secret_basic, authorization_code + PKCE (S256, required),
//                                     redirect URIs from the command line
// Users sign in on oidc-provider's development pages (devInteractions): a form with the fields `login` and
// `password` and a button "Sign-in"; any password is accepted (those pages do not check it). Consent is
// granted without a page for cordon-console. Accounts:
//   anna     anna@example.test    groups ["cordon-approvers"]
//   victor   victor@example.test  groups ["cordon-viewers"]
//   any other name: sub = the name, no email, groups []
// Scopes openid email profile groups; the ID token carries email, email_verified and groups when asked for.
// ID tokens are RS256, signed with an RSA key generated at start.
//
// Test modes, not part of the provider: POST /__mode with a plain-text body sets how the id_token of every
// later token response is spoiled; answers 204 (400 for an unknown mode).
//   normal          as issued (the default)
//   tamper          one character of the signature changed
//   expired         re-signed with exp = now-600, iat = now-1200
//   wrong-audience  re-signed with aud = someone-else
//   wrong-nonce     re-signed with nonce = not-the-nonce
//   alg-none        unsigned: header {"alg":"none","typ":"JWT"}, same payload, empty signature
//
// oidc-provider is an ES module, and ES modules ignore NODE_PATH, so it is loaded from the prefix by path.
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
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

const wanted = Number(process.argv[2]);
if (process.argv[2] === undefined || !Number.isInteger(wanted) || wanted < 0 || wanted > 65535) {
  console.error(`not a port: ${process.argv[2]}`);
  console.error('usage: node tests/servers/oidc-login.mjs PORT REDIRECT_URI [REDIRECT_URI...]');
  process.exit(2);
}
const redirectUris = process.argv.slice(3);
if (redirectUris.length === 0 || redirectUris.some((uri) => !URL.canParse(uri))) {
  console.error('give one or more absolute redirect URIs after the port');
  process.exit(2);
}

// The signing key. The provider takes it as a private JWK; the script keeps it to re-sign tokens.
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const kid = `cordon-test-${randomBytes(4).toString('hex')}`;
const signingJwk = { ...privateKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' };

const known = {
  anna: { email: 'anna@example.test', email_verified: true, groups: ['cordon-approvers'] },
  victor: { email: 'victor@example.test', email_verified: true, groups: ['cordon-viewers'] },
};
// Every login name is an account; the provider filters the claims by the granted scopes.
async function findAccount(_ctx, sub) {
  return {
    accountId: sub,
    async claims() {
      return { sub, groups: [], ...known[sub] };
    },
  };
}

// The console is first party: grant whatever OIDC scopes and claims it asks for, so no consent page shows.
async function loadExistingGrant(ctx) {
  const { oidc } = ctx;
  const grantId = oidc.result?.consent?.grantId || oidc.session.grantIdFor(oidc.client.clientId);
  let grant = grantId ? await oidc.provider.Grant.find(grantId) : undefined;
  if (oidc.client.clientId !== 'cordon-console') return grant;
  if (!grant || grant.accountId !== oidc.session.accountId) {
    grant = new oidc.provider.Grant({ accountId: oidc.session.accountId, clientId: oidc.client.clientId });
  }
  grant.addOIDCScope([...oidc.requestParamOIDCScopes].join(' '));
  grant.addOIDCClaims([...oidc.requestParamClaims]);
  await grant.save();
  return grant;
}

// ---- test modes: rewrite the id_token of token responses ----
const MODES = new Set(['normal', 'tamper', 'expired', 'wrong-audience', 'wrong-nonce', 'alg-none']);
let mode = 'normal';

const b64json = (value) => Buffer.from(JSON.stringify(value)).toString('base64url');
const unb64json = (part) => JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));

function resign(header, payload) {
  const input = `${b64json(header)}.${b64json(payload)}`;
  return `${input}.${sign('sha256', Buffer.from(input), privateKey).toString('base64url')}`;
}

function spoil(idToken) {
  const [h, p, s] = idToken.split('.');
  const header = unb64json(h);
  const payload = unb64json(p);
  const now = Math.floor(Date.now() / 1000);
  switch (mode) {
    // The first character carries the top bits of the signature (the last may be only padding bits).
    case 'tamper': return `${h}.${p}.${s[0] === 'A' ? 'B' : 'A'}${s.slice(1)}`;
    case 'expired': return resign(header, { ...payload, exp: now - 600, iat: now - 1200 });
    case 'wrong-audience': return resign(header, { ...payload, aud: 'someone-else' });
    case 'wrong-nonce': return resign(header, { ...payload, nonce: 'not-the-nonce' });
    case 'alg-none': return `${b64json({ alg: 'none', typ: 'JWT' })}.${p}.`;
    default: return idToken;
  }
}

// POST /__mode, handled before the provider sees the request.
function setMode(req, res) {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (chunk) => { body += chunk; });
  req.on('end', () => {
    const wantedMode = body.trim();
    if (!MODES.has(wantedMode)) {
      res.writeHead(400, { 'content-type': 'text/plain' });
      res.end(`unknown mode; one of: ${[...MODES].join(' ')}\n`);
      return;
    }
    mode = wantedMode;
    res.writeHead(204);
    res.end();
  });
}

// The issuer must name the port, so the server listens first and the provider is mounted on it after.
let handler = (_req, res) => { res.statusCode = 503; res.end(); };
const server = createServer((req, res) => {
  if (req.method === 'POST' && req.url === '/__mode') return setMode(req, res);
  return handler(req, res);
});
server.listen(wanted, '127.0.0.1', () => {
  const port = server.address().port;
  const provider = new Provider(`http://127.0.0.1:${port}`, {
    clients: [{
      client_id: 'cordon-console',
      client_secret: 'console-secret',
      grant_types: ['authorization_code'],
      response_types: ['code'],
      redirect_uris: redirectUris,
      token_endpoint_auth_method: 'client_secret_basic',
    }],
    // By default PKCE is required only of public clients; require it of this confidential one too.
    pkce: { required: () => true },
    scopes: ['openid', 'email', 'profile', 'groups'],
    claims: { email: ['email', 'email_verified'], groups: ['groups'] },
    // By default scope claims stay out of the ID token whenever an access token is issued too.
    conformIdTokenClaims: false,
    findAccount,
    loadExistingGrant,
    jwks: { keys: [signingJwk] },
    cookies: { keys: [randomBytes(32).toString('hex')] },
    features: { devInteractions: { enabled: true } },
  });
  // Koa middleware ahead of the provider's routes: after the token endpoint has set its JSON body (an object,
  // serialised by Koa afterwards, so the content-length follows), replace the id_token.
  provider.use(async (ctx, next) => {
    await next();
    if (mode !== 'normal' && ctx.method === 'POST' && ctx.path === '/token'
        && ctx.status === 200 && typeof ctx.body?.id_token === 'string') {
      ctx.body = { ...ctx.body, id_token: spoil(ctx.body.id_token) };
    }
  });
  // Error names and descriptions only: no tokens, codes or secrets.
  for (const event of ['server_error', 'authorization.error', 'grant.error']) {
    provider.on(event, (_ctx, err) => console.error(`${event}: ${err.name}: ${err.error_description ?? err.message}`));
  }
  handler = provider.callback();
  console.log(`listening ${port}`);
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(0));

// A real OpenID Connect provider for signoff's identity tests (oidc-provider, certified).
// Configured only through the environment; listens on 127.0.0.1 and prints "ready <issuer>".
//   IDP_PORT        port to listen on
//   IDP_JWKS        file with the private JWK set (the first key signs; rotate by restarting)
//   IDP_AUDIENCE    the `aud` of JWT access tokens for any resource but the "/other" one
//   IDP_REDIRECTS   comma-separated redirect URIs of the page client `signoff-page`
//   IDP_TTL         access and ID token lifetime in seconds (default 300)
import { readFileSync } from 'node:fs';
import Provider, { errors } from 'oidc-provider';

const port = Number(process.env.IDP_PORT);
const issuer = `http://127.0.0.1:${port}`;
const audience = process.env.IDP_AUDIENCE ?? 'signoff';
const ttl = Number(process.env.IDP_TTL ?? 300);
const jwks = JSON.parse(readFileSync(process.env.IDP_JWKS, 'utf8'));
const AGENT_CALLBACK = 'http://127.0.0.1/agent-callback';
const redirects = (process.env.IDP_REDIRECTS ?? '').split(',').filter(Boolean);

// People and the claims their tokens carry (signoff maps tenant and roles).
const ACCOUNTS = {
  alice: { tenant: 'acme', roles: ['refund_approver'] },
  carol: { tenant: 'acme', roles: [] },
  u_42: { tenant: 'acme', roles: [] },
  nomad: { roles: [] }, // no tenant claim at all
};
// Machine clients (client credentials) and the claims of their tokens.
const MACHINES = {
  'support-bot': { tenant: 'acme', roles: [] },
  'no-tenant-bot': { roles: [] },
  'conformance-client': { tenant: 'acme', roles: [] },
};

function claimsOf(token) {
  if (token.accountId) return ACCOUNTS[token.accountId] ?? {};
  return MACHINES[token.clientId] ?? {};
}

// Machine clients may also act for a person who signed in to them (authorization code).
const machine = (id) => ({
  client_id: id,
  client_secret: `${id}-secret`,
  grant_types: ['client_credentials', 'authorization_code'],
  redirect_uris: [AGENT_CALLBACK],
  response_types: ['code'],
});

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: 'signoff-page',
      client_secret: 'signoff-page-secret',
      redirect_uris: redirects,
      grant_types: ['authorization_code'],
      response_types: ['code'],
    },
    ...Object.keys(MACHINES).map(machine),
  ],
  jwks,
  cookies: { keys: ['signoff-test-idp-cookie-key'] },
  claims: { openid: ['sub'], signoff: ['tenant', 'roles'] },
  // Step-up: a password sign-in, or one with a second factor (the login form's `acr`).
  acrValues: ['urn:signoff:pwd', 'urn:signoff:mfa'],
  conformIdTokenClaims: false, // tenant and roles in the ID token too, as Keycloak or Entra put them
  findAccount: async (_ctx, sub) =>
    ACCOUNTS[sub] && { accountId: sub, claims: async () => ({ sub, ...ACCOUNTS[sub] }) },
  extraTokenClaims: async (_ctx, token) => claimsOf(token),
  pkce: { required: () => true },
  ttl: { AccessToken: ttl, ClientCredentials: ttl, IdToken: ttl, Interaction: 600, Session: 3600, Grant: 3600 },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    registration: { enabled: true },
    revocation: { enabled: true },
    rpInitiatedLogout: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async (_ctx, _client, oneOf) => oneOf ?? `${issuer}/signoff`,
      useGrantedResource: async () => true,
      getResourceServerInfo: async (_ctx, resource) => {
        if (!/^https?:\/\//.test(resource)) throw new errors.InvalidTarget();
        return {
          scope: 'openid signoff offline_access',
          audience: resource.endsWith('/other') ? 'other' : audience,
          accessTokenTTL: ttl,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
});
provider.proxy = false;

// The login "page": GET shows a form, POST signs in the named account and grants what was asked.
// The form may name the authentication class (`acr`, default urn:signoff:pwd) and, to stand
// for an earlier sign-in the provider remembers, when it happened (`ts`, Unix seconds).
provider.use(async (ctx, next) => {
  const match = /^\/interaction\/([^/]+)$/.exec(ctx.path);
  if (!match) return next();
  const details = await provider.interactionDetails(ctx.req, ctx.res);
  if (ctx.method === 'GET') {
    ctx.type = 'html';
    ctx.body = `<!doctype html><form method="post" action="/interaction/${details.uid}">` +
      '<input name="login"><button>Sign in</button></form>';
    return undefined;
  }
  const body = new URLSearchParams(await readBody(ctx.req));
  const accountId = body.get('login');
  if (!ACCOUNTS[accountId]) {
    ctx.status = 400;
    ctx.body = 'unknown account';
    return undefined;
  }
  const grant = new provider.Grant({ accountId, clientId: details.params.client_id });
  grant.addOIDCScope(details.params.scope ?? 'openid');
  for (const [indicator, scope] of Object.entries(details.prompt.details.missingResourceScopes ?? {})) {
    grant.addResourceScope(indicator, scope.join(' '));
  }
  const grantId = await grant.save();
  const acr = body.get('acr') ?? 'urn:signoff:pwd';
  const ts = body.has('ts') ? Number(body.get('ts')) : undefined;
  return provider.interactionFinished(ctx.req, ctx.res, {
    login: { accountId, acr, ...(ts === undefined ? {} : { ts }) },
    consent: { grantId },
  }, { mergeWithLastSubmission: false });
});

function readBody(req) {
  return new Promise((resolve, reject) => {
    let data = '';
    req.on('data', (chunk) => { data += chunk; });
    req.on('end', () => resolve(data));
    req.on('error', reject);
  });
}

provider.listen(port, '127.0.0.1', () => {
  process.stdout.write(`ready ${issuer}\n`);
});

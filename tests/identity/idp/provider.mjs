// A real OpenID Connect provider for signoff's identity tests (oidc-provider, certified).
// Configured only through the environment; listens on 127.0.0.1 and prints "ready <issuer>".
//   IDP_PORT        port to listen on
//   IDP_JWKS        file with the private JWK set (the first key signs; rotate by restarting)
//   IDP_AUDIENCE    the `aud` of JWT access tokens for any resource but the "/other" one
//   IDP_REDIRECTS   comma-separated redirect URIs of the page client `signoff-page`
//   IDP_TTL         access and ID token lifetime in seconds (default 300)
// CIBA with Rich Authorization Requests: the client `signoff-ciba` starts a backchannel request
// for a person (login_hint = account) with `signoff_proposal` authorization_details and a
// binding_message; the person's "device" is the test-only hook below: GET /test/ciba lists
// what each pending request shows, POST /test/ciba/<auth_req_id> (body approve|deny) answers.
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
  bob: { tenant: 'acme', roles: ['refund_approver'] },
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

// What a person's authentication device was asked, by auth_req_id (test-only).
const PENDING = new Map();
const PROPOSAL_FIELDS = ['proposal_id', 'tenant', 'tool', 'args_digest', 'title'];

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: 'signoff-ciba',
      client_secret: 'signoff-ciba-secret',
      grant_types: ['urn:openid:params:grant-type:ciba'],
      response_types: [],
      redirect_uris: [],
      backchannel_token_delivery_mode: 'poll',
      authorization_details_types: ['signoff_proposal'],
    },
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
    ciba: {
      enabled: true,
      deliveryModes: ['poll'],
      processLoginHint: async (_ctx, hint) => (ACCOUNTS[hint] ? hint : undefined),
      processLoginHintToken: async () => undefined,
      verifyUserCode: async () => undefined,
      validateRequestContext: async () => undefined,
      // The person's device shows it beside the proposal: required, short, plain.
      validateBindingMessage: async (_ctx, message) => {
        if (!/^[A-Za-z0-9 .,:#_-]{1,64}$/.test(message ?? '')) {
          throw new errors.InvalidBindingMessage('binding_message is required: 1-64 plain characters');
        }
      },
      triggerAuthenticationDevice: async (ctx, request, account) => {
        PENDING.set(request.jti, {
          auth_req_id: request.jti,
          account: account.accountId,
          binding_message: ctx.oidc.params.binding_message,
          authorization_details: JSON.parse(ctx.oidc.params.authorization_details ?? '[]'),
        });
      },
    },
    richAuthorizationRequests: {
      enabled: true,
      types: {
        signoff_proposal: {
          validate: async (_ctx, detail) => {
            const missing = PROPOSAL_FIELDS.filter((name) => typeof detail[name] !== 'string');
            if (missing.length || !Number.isInteger(detail.version)) {
              throw new errors.InvalidAuthorizationDetails(`signoff_proposal needs ${missing.join(', ') || 'an integer version'}`);
            }
          },
        },
      },
      authorizationDetailsForGrantSource: async (_ctx, source) => source.rar,
      // What the person approved on their device is what the access token carries.
      authorizationDetailsForAccessToken: async (_ctx, _token, source) => source.rar,
      authorizationDetailsForIntrospection: async (_ctx, token) => token.rar,
    },
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
// The test's authentication device: what each pending request shows, and the person's answer.
provider.use(async (ctx, next) => {
  if (ctx.path === '/test/ciba' && ctx.method === 'GET') {
    ctx.body = [...PENDING.values()];
    return undefined;
  }
  const match = /^\/test\/ciba\/([^/]+)$/.exec(ctx.path);
  if (!match || ctx.method !== 'POST') return next();
  const pending = PENDING.get(match[1]);
  if (!pending) {
    ctx.status = 404;
    ctx.body = 'no such pending request';
    return undefined;
  }
  PENDING.delete(match[1]);
  const answer = (await readBody(ctx.req)).trim();
  if (answer !== 'approve') {
    await provider.backchannelResult(match[1], new errors.AccessDenied('the person declined'));
    ctx.status = 204;
    return undefined;
  }
  const request = await provider.BackchannelAuthenticationRequest.find(match[1]);
  const grant = new provider.Grant({ accountId: pending.account, clientId: request.clientId });
  grant.addOIDCScope(request.scope);
  grant.addResourceScope(request.resource, 'signoff');
  await provider.backchannelResult(request, await grant.save(), {
    acr: 'urn:signoff:mfa',
    authTime: Math.floor(Date.now() / 1000),
    rar: pending.authorization_details,
  });
  ctx.status = 204;
  return undefined;
});

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

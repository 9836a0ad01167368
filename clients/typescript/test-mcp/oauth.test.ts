// The official TypeScript MCP SDK's client through the OAuth 2.1 flow against Effect Ledger's MCP
// gateway as a resource server. McpOAuthIT (mcp module) starts a real authorization server (Spring
// Authorization Server), the gateway, the ledger and the counting MCP server, and sets
//   EFFECTLEDGER_MCP_URL   the gateway's endpoint      EFFECTLEDGER_MCP_RUN   the run id to use
//   EFFECTLEDGER_IDP_ISSUER   the authorization server's issuer
// Not meant to run on its own: it fails without them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: this suite is run by McpOAuthIT`);
  return value;
};

type Answer = { isError?: boolean; content?: { text?: string }[]; _meta?: Record<string, unknown> };

const REDIRECT = 'http://127.0.0.1:53682/callback';

/**
 * A public client signing its user in with the authorization code grant and PKCE. Where a desktop
 * agent would open a browser, this one signs alice in on the provider's login page with fetch and
 * keeps the code the provider redirects to REDIRECT with.
 */
class SignInProvider implements OAuthClientProvider {
  private saved?: OAuthTokens;
  private verifier = '';
  code?: string;

  get redirectUrl(): string {
    return REDIRECT;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'effectledger-ts-agent',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }

  clientInformation(): OAuthClientInformationMixed {
    return { client_id: 'mcp-agent', token_endpoint_auth_method: 'none' } as OAuthClientInformationMixed;
  }

  tokens(): OAuthTokens | undefined {
    return this.saved;
  }

  saveTokens(tokens: OAuthTokens): void {
    this.saved = tokens;
  }

  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }

  codeVerifier(): string {
    return this.verifier;
  }

  async redirectToAuthorization(authorization: URL): Promise<void> {
    assert.equal(authorization.searchParams.get('resource'), env('EFFECTLEDGER_MCP_URL'), 'RFC 8707 resource');
    assert.equal(authorization.searchParams.get('code_challenge_method'), 'S256');
    const cookies = new Map<string, string>();
    const go = async (url: URL, init: RequestInit = {}): Promise<Response> => {
      const headers = new Headers(init.headers);
      headers.set('Accept', 'text/html');
      if (cookies.size > 0) headers.set('Cookie', [...cookies].map(([k, v]) => `${k}=${v}`).join('; '));
      const response = await fetch(url, { ...init, headers, redirect: 'manual' });
      for (const cookie of response.headers.getSetCookie()) {
        const [pair] = cookie.split(';');
        const eq = pair.indexOf('=');
        cookies.set(pair.slice(0, eq), pair.slice(eq + 1));
      }
      return response;
    };
    const next = (from: URL, response: Response): URL => {
      const location = response.headers.get('location');
      assert.ok(response.status >= 300 && response.status < 400 && location, `${from} answered ${response.status}`);
      return new URL(location, from);
    };
    const login = next(authorization, await go(authorization));
    const page = await (await go(login)).text();
    const csrf = /name="_csrf"[^>]*value="([^"]+)"/.exec(page)?.[1];
    assert.ok(csrf, 'the login page has a _csrf field');
    const form = new URLSearchParams({ username: 'alice', password: 'alice-password', _csrf: csrf });
    const saved = next(login, await go(login, { method: 'POST', body: form, headers: { 'Content-Type': 'application/x-www-form-urlencoded' } }));
    const callback = next(saved, await go(saved));
    assert.equal(`${callback.origin}${callback.pathname}`, REDIRECT);
    this.code = callback.searchParams.get('code') ?? undefined;
    assert.ok(this.code, `a code in ${callback}`);
  }
}

test('a machine agent gets its token by client credentials from the 401 and calls a write once', async () => {
  const url = new URL(env('EFFECTLEDGER_MCP_URL'));
  const run = env('EFFECTLEDGER_MCP_RUN');
  const open = async (): Promise<Client> => {
    const client = new Client({ name: 'effectledger-ts-machine', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(url, {
        authProvider: new ClientCredentialsProvider({
          clientId: 'acme-agent',
          clientSecret: 'acme-secret',
          scope: 'tools:read tools:write',
          // credentials go only to this authorization server, whatever the MCP server names
          expectedIssuer: env('EFFECTLEDGER_IDP_ISSUER'),
        }),
        requestInit: { headers: { 'X-Agent-Run': run } },
      }),
    );
    return client;
  };
  const first = await open();
  const again = await open();
  try {
    const args = { name: 'create_charge', arguments: { amount: 411, to: 'cus_ts_oauth' } };
    const a = (await first.callTool(args)) as Answer;
    const b = (await again.callTool(args)) as Answer;
    assert.equal(a.isError, false, JSON.stringify(a));
    assert.equal(a._meta?.['effectledger.dev/replayed'], false);
    assert.equal(b._meta?.['effectledger.dev/replayed'], true);
    console.log(`# machine key ${String(a._meta?.['effectledger.dev/idempotencyKey'])}`);
  } finally {
    await first.close();
    await again.close();
  }
});

test('a user signs in (authorization code, PKCE) and the agent calls as her tenant', async () => {
  const url = new URL(env('EFFECTLEDGER_MCP_URL'));
  const run = env('EFFECTLEDGER_MCP_RUN'); // its own run: the gateway allows a run 2 calls a second
  const provider = new SignInProvider();
  const options = { authProvider: provider, requestInit: { headers: { 'X-Agent-Run': `${run}-user` } } };
  const first = new StreamableHTTPClientTransport(url, options);
  await assert.rejects(
    new Client({ name: 'effectledger-ts-user', version: '1.0.0' }).connect(first),
    UnauthorizedError,
    'the first connect sends the user to sign in',
  );
  assert.ok(provider.code);
  await first.finishAuth(provider.code);
  assert.ok(provider.tokens()?.access_token, 'a token for the code');

  const client = new Client({ name: 'effectledger-ts-user', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url, options));
  try {
    const a = (await client.callTool({ name: 'create_charge', arguments: { amount: 412, to: 'cus_ts_user' } })) as Answer;
    assert.equal(a.isError, false, JSON.stringify(a));
    assert.equal(a._meta?.['effectledger.dev/replayed'], false);
    console.log(`# user key ${String(a._meta?.['effectledger.dev/idempotencyKey'])}`);
  } finally {
    await client.close();
  }
});

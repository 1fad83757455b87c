// An official TypeScript MCP client against the Compliance Ledger; prints what it saw as one JSON line.
//
//   node mcp_client.mjs SDK [--origin ORIGIN] http URL
//   node mcp_client.mjs SDK stdio COMMAND [ARG...]
//
// SDK: "v1" (@modelcontextprotocol/sdk, protocol 2025-11-25), "v2" (@modelcontextprotocol/client in its default
// legacy mode) or "v2-auto" (the same, negotiating protocol 2026-07-28 through server/discover).
// With --origin every HTTP request goes through what a browser page at ORIGIN would do (the Fetch standard's CORS
// protocol): a preflight when the request is not "simple", the Access-Control-Allow-* checks, and only the
// CORS-safelisted and exposed response headers shown to the SDK. A refusal is a TypeError, as in a browser.
// Run by tests/e2e/test_ts_sdk.py from the directory the pinned packages are installed in.

const [sdk, ...rest] = process.argv.slice(2);
let origin = null;
if (rest[0] === "--origin") {
  origin = rest[1];
  rest.splice(0, 2);
}
const [transportKind, ...target] = rest;
const isHttp = transportKind === "http";

const SAFELISTED_RESPONSE = ["cache-control", "content-language", "content-length", "content-type", "expires", "last-modified", "pragma"];
const SIMPLE_METHODS = ["GET", "HEAD", "POST"];
const SIMPLE_CONTENT_TYPES = ["application/x-www-form-urlencoded", "multipart/form-data", "text/plain"];
const cors = { preflights: [], requests: [], refused: null };

function unsafeHeaderNames(headers) {
  const names = [];
  for (const [name, value] of headers) {
    const lower = name.toLowerCase();
    const simple =
      ["accept", "accept-language", "content-language"].includes(lower) ||
      (lower === "content-type" && SIMPLE_CONTENT_TYPES.includes(value.split(";")[0].trim().toLowerCase()));
    if (!simple) names.push(lower);
  }
  return names.sort();
}

function listed(header) {
  return (header || "").split(",").map((v) => v.trim().toLowerCase()).filter(Boolean);
}

function refuse(reason) {
  cors.refused = reason;
  throw new TypeError(`CORS: ${reason}`);
}

// fetch as a page at `origin` sees it (no credentials: the SDK sends none, so "*" is acceptable everywhere).
async function browserFetch(url, init = {}) {
  const method = (init.method || "GET").toUpperCase();
  const headers = new Headers(init.headers);
  const unsafe = unsafeHeaderNames(headers);
  cors.requests.push({ method, headers: unsafe });
  if (!SIMPLE_METHODS.includes(method) || unsafe.length > 0) {
    const preflight = await fetch(url, {
      method: "OPTIONS",
      headers: {
        Origin: origin,
        "Access-Control-Request-Method": method,
        ...(unsafe.length ? { "Access-Control-Request-Headers": unsafe.join(",") } : {}),
      },
    });
    const allowOrigin = preflight.headers.get("access-control-allow-origin");
    const methods = listed(preflight.headers.get("access-control-allow-methods"));
    const allowed = listed(preflight.headers.get("access-control-allow-headers"));
    cors.preflights.push({ method, headers: unsafe, status: preflight.status, allowOrigin });
    if (preflight.status < 200 || preflight.status > 299) refuse(`preflight of ${method} answered ${preflight.status}`);
    if (allowOrigin !== "*" && allowOrigin !== origin) refuse(`preflight allows origin ${allowOrigin}`);
    if (!SIMPLE_METHODS.includes(method) && !methods.includes(method.toLowerCase()) && !methods.includes("*"))
      refuse(`preflight does not allow method ${method}`);
    // "*" never covers Authorization (Fetch standard).
    const missing = unsafe.filter((h) => !allowed.includes(h) && !(allowed.includes("*") && h !== "authorization"));
    if (missing.length) refuse(`preflight does not allow request headers ${missing.join(", ")}`);
  }
  headers.set("Origin", origin);
  const response = await fetch(url, { ...init, headers });
  const allowOrigin = response.headers.get("access-control-allow-origin");
  if (allowOrigin !== "*" && allowOrigin !== origin) refuse(`${method} answer allows origin ${allowOrigin}`);
  const exposed = listed(response.headers.get("access-control-expose-headers"));
  const visible = new Headers();
  for (const [name, value] of response.headers) {
    if (SAFELISTED_RESPONSE.includes(name) || exposed.includes(name) || exposed.includes("*")) visible.set(name, value);
  }
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers: visible });
}

async function loadSdk() {
  if (sdk === "v1") {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
    const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
    return { Client, StreamableHTTPClientTransport, StdioClientTransport, options: {} };
  }
  const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
  const { StdioClientTransport } = await import("@modelcontextprotocol/client/stdio");
  const options = sdk === "v2-auto" ? { versionNegotiation: { mode: "auto" } } : {};
  return { Client, StreamableHTTPClientTransport, StdioClientTransport, options };
}

async function protocolError(call) {
  try {
    const result = await call();
    return { answered: true, isError: result.isError === true, text: result.content?.[0]?.text ?? null };
  } catch (err) {
    return { answered: false, code: err.code ?? null, message: String(err.message) };
  }
}

const { Client, StreamableHTTPClientTransport, StdioClientTransport, options } = await loadSdk();
const client = new Client({ name: `ledger-test-${sdk}`, version: "1.0.0" }, options);
const transport = isHttp
  ? new StreamableHTTPClientTransport(new URL(target[0]), origin ? { fetch: browserFetch } : {})
  : new StdioClientTransport({ command: target[0], args: target.slice(1), env: process.env, stderr: "pipe" });
const seen = { sdk, transport: transportKind, origin };
try {
  await client.connect(transport);
  seen.protocolVersion = client.getNegotiatedProtocolVersion?.() ?? transport.protocolVersion ?? null;
  seen.server = client.getServerVersion();
  seen.tools = (await client.listTools()).tools.map((t) => t.name);
  seen.prompts = (await client.listPrompts()).prompts.map((p) => p.name);
  // Over HTTP a tool needs a session; over stdio the server opened one for its agent at start.
  let session = {};
  if (isHttp) {
    const clocked = await client.callTool({ name: "clock_in", arguments: { role: "ts-sdk" } });
    seen.clockIn = clocked.structuredContent;
    session = { session_id: clocked.structuredContent.session_id };
  }
  const search = await client.callTool({ name: "memory_search", arguments: { query: "role separation", ...session } });
  seen.search = { isError: search.isError === true, count: search.structuredContent?.count ?? null };
  const stamp = await client.callTool({ name: "assert_compliance", arguments: { ...session } });
  seen.stamp = stamp.structuredContent;
  seen.unknownPrompt = await protocolError(() => client.getPrompt({ name: "no_such_prompt" }));
  seen.unknownTool = await protocolError(() => client.callTool({ name: "no_such_tool", arguments: {} }));
  seen.badArgument = await protocolError(() =>
    client.callTool({ name: "memory_search", arguments: { query: "x", limit: "many", ...session } }),
  );
} catch (err) {
  seen.error = `${err.constructor.name}: ${err.message}`;
} finally {
  seen.cors = origin ? cors : null;
  await client.close().catch(() => {});
}
process.stdout.write(JSON.stringify(seen) + "\n");

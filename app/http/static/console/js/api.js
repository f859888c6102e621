// The console's only way to Cairn: the public GraphQL API over HTTP and graphql-transport-ws,
// with the member token the person pasted (session storage: gone when the tab closes).
import { createClient } from "../vendor/graphql-ws/client.js";

const KEY = "cairn.console.token";

export const session = {
  get token() {
    return sessionStorage.getItem(KEY);
  },
  set(token) {
    sessionStorage.setItem(KEY, token);
  },
  clear() {
    sessionStorage.removeItem(KEY);
  },
};

/** An error answer of the API: message, extensions.code and the HTTP status. */
export class ApiError extends Error {
  constructor(message, code, status, extensions) {
    super(message);
    this.code = code || "ERROR";
    this.status = status;
    this.extensions = extensions || {};
  }
}

let onSignedOut = () => {};
/** Called when the server no longer accepts the token (revoked member, malformed token). */
export function whenSignedOut(callback) {
  onSignedOut = callback;
}

/** POST /graphql with the member token; resolves to `data`, rejects with ApiError. */
export async function gql(query, variables = {}, token = session.token) {
  let response;
  try {
    response = await fetch("/graphql", {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify({ query, variables }),
    });
  } catch (err) {
    throw new ApiError(`the server cannot be reached (${err.message})`, "NETWORK");
  }
  let body;
  try {
    body = await response.json();
  } catch {
    throw new ApiError(`HTTP ${response.status} without a JSON body`, `HTTP_${response.status}`, response.status);
  }
  if (body.errors && body.errors.length) {
    const e = body.errors[0];
    const err = new ApiError(e.message, e.extensions && e.extensions.code, response.status, e.extensions);
    if (response.status === 401 && token === session.token) onSignedOut(err);
    throw err;
  }
  return body.data;
}

function wsUrl() {
  return `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/graphql`;
}

function toApiError(err) {
  if (err instanceof ApiError) return err;
  if (Array.isArray(err) && err.length) {
    const e = err[0];
    return new ApiError(e.message, e.extensions && e.extensions.code, undefined, e.extensions);
  }
  if (err && typeof err.code === "number") {
    return new ApiError(`the WebSocket closed (${err.code}${err.reason ? `: ${err.reason}` : ""})`, "WS_CLOSED");
  }
  return new ApiError(String((err && err.message) || err), "ERROR");
}

/**
 * Run one subscription over a fresh graphql-transport-ws connection (vendored graphql-ws).
 * `sink.next(data)` per event as it arrives, then `sink.complete()` or `sink.error(ApiError)`.
 * Returns a function that stops it.
 */
export function subscribe(query, variables, sink) {
  const client = createClient({
    url: wsUrl(),
    connectionParams: { Authorization: `Bearer ${session.token}` },
    lazy: true,
    retryAttempts: 0,
    lazyCloseTimeout: 0,
  });
  let done = false;
  const finish = () => {
    done = true;
    client.dispose();
  };
  const stop = client.subscribe(
    { query, variables },
    {
      next: (message) => {
        if (done) return;
        if (message.errors && message.errors.length) {
          finish();
          sink.error(toApiError(message.errors));
          return;
        }
        sink.next(message.data);
      },
      error: (err) => {
        if (done) return;
        finish();
        sink.error(toApiError(err));
      },
      complete: () => {
        if (done) return;
        finish();
        sink.complete();
      },
    },
  );
  return () => {
    if (!done) {
      done = true;
      stop();
      client.dispose();
    }
  };
}

// A loopback proxy in front of the live server that injects one fault per request, in order,
// then forwards normally: an answer held back until the client gives up (the request still
// reaches signoff), a 503 with Retry-After, a 409 idempotency_key_in_flight.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export type Fault = "hold" | "hold_unsent" | { status503: number } | "in_flight";

export interface Seen {
  method: string;
  path: string;
  idempotencyKey: string | undefined;
}

export class FaultProxy {
  readonly seen: Seen[] = [];
  readonly #faults: Fault[];
  readonly #upstream: string;
  readonly #held: ServerResponse[] = [];
  #server: Server | undefined;

  constructor(upstream: string, ...faults: Fault[]) {
    this.#upstream = upstream;
    this.#faults = faults;
  }

  async start(): Promise<string> {
    this.#server = createServer((request, response) => void this.#handle(request, response));
    await new Promise<void>((resolve) => this.#server?.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    for (const response of this.#held) response.destroy();
    this.#server?.closeAllConnections();
    await new Promise<void>((resolve) => this.#server?.close(() => resolve()));
  }

  async #handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const key = request.headers["idempotency-key"];
    this.seen.push({ method: request.method ?? "", path: request.url ?? "", idempotencyKey: typeof key === "string" ? key : undefined });
    const fault = this.#faults.shift();
    if (fault === "in_flight") return problem(response, 409, "idempotency_key_in_flight", {});
    if (typeof fault === "object") return problem(response, 503, "unavailable", { "Retry-After": String(fault.status503) });
    if (fault === "hold_unsent") {
      this.#held.push(response);
      return;
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(request.headers)) {
      if (typeof value === "string" && !["host", "connection", "content-length"].includes(name)) headers[name] = value;
    }
    const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
    const upstream = await fetch(this.#upstream + (request.url ?? "/"), {
      method: request.method ?? "GET",
      headers,
      ...(body === undefined ? {} : { body }),
    });
    const text = await upstream.text();
    if (fault === "hold") {
      // signoff has done the work; its answer never reaches the client.
      this.#held.push(response);
      return;
    }
    response.writeHead(upstream.status, { "Content-Type": upstream.headers.get("content-type") ?? "application/json" });
    response.end(text);
  }
}

function problem(response: ServerResponse, status: number, code: string, headers: Record<string, string>): void {
  response.writeHead(status, { "Content-Type": "application/problem+json", ...headers });
  response.end(JSON.stringify({ type: `urn:signoff:problem:${code}`, title: code, status, detail: `injected ${code}`, code }));
}

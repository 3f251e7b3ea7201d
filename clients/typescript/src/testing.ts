/**
 * Node only: a real `signoff serve --demo` for tests and examples, on a free loopback port with
 * a throw-away database, and its development tokens (`signoff dev-token --demo`). Never for
 * production: the demo's keys are public.
 *
 *     const demo = await startDemoServer();            // SIGNOFF_BIN or ./.venv/bin/signoff
 *     const agent = new SignoffClient({ baseUrl: demo.url, token: demo.token("--sub", "u_42", "--tenant", "acme", "--act", "agent:support-bot") });
 *     ...
 *     await demo.stop();
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export interface DemoServer {
  url: string;
  /** The server's throw-away SQLite database (the demo shop is `<database>.shop.sqlite`). */
  database: string;
  /** `signoff dev-token --demo <args>`: a development JWT for this server. */
  token(...args: string[]): string;
  /** `signoff tools --demo --format <format>`, parsed: the tool definitions a model is given. */
  tools(format?: "openai" | "openai-responses" | "mcp"): unknown;
  /** The server's log so far (for a failure message). */
  log(): string;
  stop(): Promise<void>;
}

export interface DemoServerOptions {
  /** The `signoff` executable. Default: `SIGNOFF_BIN`, else `.venv/bin/signoff` above the cwd. */
  signoff?: string;
  /** How long to wait for `/healthz`. Default 60 s. */
  startupMs?: number;
}

/** The `signoff` executable: `SIGNOFF_BIN`, else the nearest `.venv/bin/signoff` at or above `from`. */
export function findSignoff(from = process.cwd()): string {
  if (process.env["SIGNOFF_BIN"]) return process.env["SIGNOFF_BIN"];
  for (let dir = resolve(from); ; dir = resolve(dir, "..")) {
    const candidate = join(dir, ".venv", "bin", "signoff");
    if (existsSync(candidate)) return candidate;
    if (dir === resolve(dir, "..")) break;
  }
  throw new Error("no signoff executable: set SIGNOFF_BIN or install the project into .venv (see the README)");
}

export async function startDemoServer(options: DemoServerOptions = {}): Promise<DemoServer> {
  const signoff = options.signoff ?? findSignoff();
  const port = await freePort();
  const work = mkdtempSync(join(tmpdir(), "signoff-demo-"));
  const logFile = join(work, "server.log");
  const database = join(work, "demo.db");
  const server = spawn(
    signoff,
    ["serve", "--demo", "--db", database, "--port", String(port), "--reconcile-interval", "0"],
    { stdio: ["ignore", openSync(logFile, "w"), openSync(logFile, "a")] },
  );
  const exited = new Promise<void>((done) => server.once("exit", () => done()));
  const url = `http://127.0.0.1:${port}`;
  const log = (): string => (existsSync(logFile) ? readFileSync(logFile, "utf8") : "");
  const stop = async (): Promise<void> => {
    if (server.exitCode === null && server.signalCode === null) server.kill("SIGTERM");
    await exited;
    rmSync(work, { recursive: true, force: true });
  };
  try {
    await healthy(url, options.startupMs ?? 60_000, () => server.exitCode !== null);
  } catch (error) {
    const output = log();
    await stop();
    throw new Error(`${String(error)}\n${output.split("\n").slice(-20).join("\n")}`);
  }
  return {
    url,
    database,
    token: (...args) => execFileSync(signoff, ["dev-token", "--demo", ...args], { encoding: "utf8" }).trim(),
    tools: (format = "openai") => JSON.parse(execFileSync(signoff, ["tools", "--demo", "--format", format], { encoding: "utf8" })) as unknown,
    log,
    stop,
  };
}

async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const probe = createServer();
    probe.once("error", fail);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => done(port));
    });
  });
}

async function healthy(base: string, withinMs: number, gone: () => boolean): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    if (gone()) throw new Error("signoff serve exited before it answered");
    try {
      if ((await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(1000) })).ok) return;
    } catch {
      // not up yet
    }
    await new Promise((done) => setTimeout(done, 200));
  }
  throw new Error(`signoff serve did not answer on ${base} within ${withinMs} ms`);
}

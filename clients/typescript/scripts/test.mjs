// `npm test`'s runner: start a real `signoff serve --demo` on a free loopback port with a
// throw-away database, mint the callers' tokens with `signoff dev-token --demo`, run the compiled
// tests (build/test/*.test.js) with node's test runner, stop the server, exit with the tests' status.
//
//   SIGNOFF_BIN=/path/to/signoff npm test     # default: the repository's .venv/bin/signoff
//   npm test -- ai-sdk                        # only build/test/*ai-sdk*.test.js
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(dirname(fileURLToPath(import.meta.url)));
const signoff = process.env.SIGNOFF_BIN ?? join(here, "..", "..", ".venv", "bin", "signoff");
if (!existsSync(signoff)) {
  console.error(`no signoff executable at ${signoff}: install the project (README) or set SIGNOFF_BIN`);
  process.exit(2);
}

const port = await new Promise((resolve, reject) => {
  const probe = createServer();
  probe.once("error", reject);
  probe.listen(0, "127.0.0.1", () => {
    const { port } = probe.address();
    probe.close(() => resolve(port));
  });
});
const work = mkdtempSync(join(tmpdir(), "signoff-ts-"));
const log = join(work, "server.log");
const server = spawn(
  signoff,
  ["serve", "--demo", "--db", join(work, "demo.db"), "--port", String(port), "--reconcile-interval", "0"],
  { stdio: ["ignore", openSync(log, "w"), openSync(log, "a")] },
);
const url = `http://127.0.0.1:${port}`;
let status = 1;
try {
  await healthy(url, 60_000);
  // What a model is given, once per format (each `signoff tools` run starts Python).
  for (const format of ["openai", "openai-responses", "mcp"]) {
    writeFileSync(join(work, `tools-${format}.json`), execFileSync(signoff, ["tools", "--demo", "--format", format]));
  }
  const token = (...args) => execFileSync(signoff, ["dev-token", "--demo", ...args], { encoding: "utf8" }).trim();
  const env = {
    ...process.env,
    SIGNOFF_BIN: signoff,
    SIGNOFF_URL: url,
    SIGNOFF_TOOLS_DIR: work,
    SIGNOFF_TOKEN_AGENT: token("--sub", "u_42", "--tenant", "acme", "--act", "agent:support-bot"),
    SIGNOFF_TOKEN_ALICE: token("--sub", "alice", "--tenant", "acme", "--role", "refund_approver"),
    SIGNOFF_TOKEN_BOB: token("--sub", "bob", "--tenant", "acme", "--role", "refund_approver"),
    SIGNOFF_TOKEN_GLOBEX: token("--sub", "carol", "--tenant", "globex", "--role", "refund_approver"),
    SIGNOFF_TOKEN_ALICE_OTHER_APP: token("--client", "other-app", "--sub", "alice", "--tenant", "acme", "--role", "refund_approver"),
  };
  const tests = join(here, "build", "test");
  // `npm test -- client agents` runs only the files whose names contain one of the words.
  const only = process.argv.slice(2);
  const files = readdirSync(tests)
    .filter((name) => name.endsWith(".test.js") && (only.length === 0 || only.some((word) => name.includes(word))))
    .sort()
    .map((name) => join(tests, name));
  status = await new Promise((resolve) => {
    const child = spawn(process.execPath, ["--test", "--test-concurrency=1", ...files], { stdio: "inherit", env });
    child.on("exit", (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
} catch (error) {
  console.error(String(error));
} finally {
  server.kill("SIGTERM");
  await new Promise((resolve) => (server.exitCode !== null ? resolve() : server.once("exit", resolve)));
  if (status !== 0) {
    console.error("--- signoff serve log (last 50 lines) ---");
    console.error(readFileSync(log, "utf8").split("\n").slice(-50).join("\n"));
  }
  rmSync(work, { recursive: true, force: true });
}
process.exit(status);

async function healthy(base, withinMs) {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    if (server.exitCode !== null) throw new Error(`signoff serve exited with ${server.exitCode}`);
    try {
      const answer = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(1000) });
      if (answer.ok) return;
    } catch {
      // not up yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`signoff serve did not answer on ${base} within ${withinMs} ms`);
}

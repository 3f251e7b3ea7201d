// `npm test`'s runner (after the build): start a real `signoff serve --demo` on a free loopback
// port with a throw-away database (dist/testing.js), mint the callers' tokens with
// `signoff dev-token --demo`, run the compiled tests (build/test/*.test.js) with node's test
// runner, stop the server, and exit with the tests' status.
//
//   SIGNOFF_BIN=/path/to/signoff npm test     # default: the repository's .venv/bin/signoff
//   npm test -- ai-sdk                        # only build/test/*ai-sdk*.test.js
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { findSignoff, startDemoServer } from "../dist/testing.js";

const here = dirname(dirname(fileURLToPath(import.meta.url)));
const signoff = findSignoff(here);
const demo = await startDemoServer({ signoff });
const work = mkdtempSync(join(tmpdir(), "signoff-ts-"));
let status = 1;
try {
  // What a model is given, once per format (each `signoff tools` run starts Python).
  for (const format of ["openai", "openai-responses", "mcp"]) {
    writeFileSync(join(work, `tools-${format}.json`), JSON.stringify(demo.tools(format)));
  }
  const env = {
    ...process.env,
    SIGNOFF_BIN: signoff,
    SIGNOFF_URL: demo.url,
    SIGNOFF_DEMO_DB: demo.database,
    SIGNOFF_TOOLS_DIR: work,
    SIGNOFF_TOKEN_AGENT: demo.token("--sub", "u_42", "--tenant", "acme", "--act", "agent:support-bot"),
    SIGNOFF_TOKEN_ALICE: demo.token("--sub", "alice", "--tenant", "acme", "--role", "refund_approver"),
    SIGNOFF_TOKEN_BOB: demo.token("--sub", "bob", "--tenant", "acme", "--role", "refund_approver"),
    SIGNOFF_TOKEN_GLOBEX: demo.token("--sub", "carol", "--tenant", "globex", "--role", "refund_approver"),
    SIGNOFF_TOKEN_ALICE_OTHER_APP: demo.token("--client", "other-app", "--sub", "alice", "--tenant", "acme", "--role", "refund_approver"),
  };
  // `npm test -- client agents` runs only the files whose names contain one of the words.
  const only = process.argv.slice(2);
  const tests = join(here, "build", "test");
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
  if (status !== 0) {
    console.error("--- signoff serve log (last 50 lines) ---");
    console.error(demo.log().split("\n").slice(-50).join("\n"));
  }
  await demo.stop();
  rmSync(work, { recursive: true, force: true });
}
process.exit(status);

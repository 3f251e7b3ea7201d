// examples/typescript-ai-sdk and examples/typescript-agents run as their READMEs say
// (`npm start` after `npm ci`), each against its own `signoff serve --demo`, and end with one
// refund in the provider's ledger. Without their node_modules the test is skipped — except in
// CI (CI=true), where it fails: `.ci/run` installs them.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const examples = fileURLToPath(new URL("../../../../examples/", import.meta.url));

for (const name of ["typescript-ai-sdk", "typescript-agents"]) {
  const dir = examples + name;
  const installed = existsSync(`${dir}/node_modules/@signoff/client`);
  const skip = !installed && process.env["CI"] !== "true" ? `run \`npm --prefix examples/${name} ci\` first` : false;
  test(`examples/${name}: npm start refunds once, after the person's confirmation`, { skip }, () => {
    assert.ok(installed, `examples/${name}/node_modules is missing: npm --prefix examples/${name} ci`);
    const started = spawnSync("npm", ["start", "--silent"], { cwd: dir, encoding: "utf8", timeout: 240_000 });
    assert.equal(started.status, 0, started.stderr + started.stdout);
    assert.match(started.stdout, /a person confirms at http:\/\/127\.0\.0\.1:\d+\/ui\/proposals\/prop_/);
    assert.match(started.stdout, /^provider ledger: \[\["ord_1001",19900,"CNY"\]\]$/m);
  });
}

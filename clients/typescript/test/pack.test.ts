// `npm pack` makes a tarball that installs into an empty project with no download (its one
// runtime dependency, `jose`, is packed from the copy `npm ci` installed here: npm ci leaves no
// registry metadata in the cache, so `--offline` could not resolve it from there on a clean
// machine) and whose entry points load and work —
// the HTTP client's without `jose`, which only `@signoff/client/verify` imports.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../../", import.meta.url));

test("npm pack's tarball installs offline, and its entry points load", () => {
  const work = mkdtempSync(join(tmpdir(), "signoff-pack-"));
  try {
    execFileSync("npm", ["pack", "--silent", "--pack-destination", work], { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
    const [tarball] = readdirSync(work).filter((name) => name.endsWith(".tgz"));
    assert.ok(tarball, "npm pack wrote a tarball");
    const project = join(work, "project");
    execFileSync("mkdir", [project]);
    writeFileSync(join(project, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
    execFileSync("npm", ["pack", "--silent", "--pack-destination", work, join(root, "node_modules", "jose")], { cwd: work, stdio: ["ignore", "ignore", "inherit"] });
    const [jose] = readdirSync(work).filter((name) => name.startsWith("jose-") && name.endsWith(".tgz"));
    assert.ok(jose, "jose packed from node_modules");
    execFileSync("npm", ["install", "--offline", "--no-audit", "--no-fund", "--silent", join(work, tarball), join(work, jose)], { cwd: project });
    const script = [
      'import { confirmationIdempotencyKey, SignoffClient, VersionConflict } from "@signoff/client";',
      'import { startDemoServer } from "@signoff/client/testing";',
      'const key = await confirmationIdempotencyKey("prop_7QF2M9XK4T1A", 1);',
      "console.log(key, typeof SignoffClient, typeof VersionConflict, typeof startDemoServer);",
    ].join("\n");
    const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], { cwd: project, encoding: "utf8" });
    assert.equal(out.trim(), "confirm:v1:4d89ec74870d73eead7046638fce761ed84c41c63bb981f273fe11e4cd97b6d4 function function function");
    const verify = 'import { verifyReceipt, NoTrustRoot } from "@signoff/client/verify"; await verifyReceipt("x.y.z", null).catch((e) => console.log(e instanceof NoTrustRoot, e.code));';
    assert.equal(execFileSync(process.execPath, ["--input-type=module", "-e", verify], { cwd: project, encoding: "utf8" }).trim(), "true no_trust_root");
    assert.equal(execFileSync(process.execPath, [join(project, "node_modules", ".bin", "signoff-verify"), "--help"], { encoding: "utf8" }).split(" ")[0], "usage:");
    // Without jose the client and its adapters still load; only the verifier needs it.
    rmSync(join(project, "node_modules", "jose"), { recursive: true, force: true });
    const bare = 'import { SignoffClient } from "@signoff/client"; await import("@signoff/client/verify").then(() => console.log("loaded"), () => console.log(typeof SignoffClient, "verify needs jose"));';
    assert.equal(execFileSync(process.execPath, ["--input-type=module", "-e", bare], { cwd: project, encoding: "utf8" }).trim(), "function verify needs jose");
    const files = execFileSync("tar", ["-tzf", join(work, tarball)], { encoding: "utf8" }).split("\n");
    for (const expected of ["package/dist/index.js", "package/dist/index.d.ts", "package/dist/ai-sdk.d.ts", "package/dist/agents.js", "package/dist/verify/index.js", "package/dist/verify/cli.js", "package/README.md"]) {
      assert.ok(files.includes(expected), expected);
    }
    assert.ok(!files.some((file) => file.startsWith("package/test/") || file.startsWith("package/build/")), "no tests in the tarball");
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});

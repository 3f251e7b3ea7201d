// CI's drift check: regenerate src/generated/openapi.ts from ../../openapi.json into a
// temporary file and fail when it differs from the committed one (then run `npm run generate`).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(dirname(fileURLToPath(import.meta.url)));
const work = mkdtempSync(join(tmpdir(), "signoff-types-"));
try {
  const fresh = join(work, "openapi.ts");
  const bin = join(here, "node_modules", ".bin", "openapi-typescript");
  execFileSync(bin, [join(here, "..", "..", "openapi.json"), "--output", fresh], { stdio: ["ignore", "ignore", "inherit"] });
  const committed = readFileSync(join(here, "src", "generated", "openapi.ts"), "utf8");
  if (readFileSync(fresh, "utf8") !== committed) {
    console.error("src/generated/openapi.ts is not what openapi.json generates: run `npm run generate` in clients/typescript");
    process.exit(1);
  }
  console.log("src/generated/openapi.ts matches openapi.json");
} finally {
  rmSync(work, { recursive: true, force: true });
}

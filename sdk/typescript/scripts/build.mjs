// Builds dist/esm (ES modules) and dist/cjs (CommonJS), each with its .d.ts, from src/ with the pinned tsc.
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
rmSync(join(root, "dist"), { recursive: true, force: true });
const run = (...args) => execFileSync(process.execPath, [tsc, "-p", join(root, "tsconfig.json"), ...args], { stdio: "inherit" });
run();
run("--module", "commonjs", "--moduleResolution", "node10", "--outDir", join(root, "dist/cjs"));
for (const [dir, type] of [["esm", "module"], ["cjs", "commonjs"]]) {
  mkdirSync(join(root, "dist", dir), { recursive: true });
  writeFileSync(join(root, "dist", dir, "package.json"), JSON.stringify({ type }) + "\n");
}

// Tests what would be published: `npm pack`, install the tarball into a clean project (with the real
// `openai` and `@anthropic-ai/sdk` at the pinned versions, from npm's cache: no network), copy test/
// there and run it with `node --test`.
//
//   node scripts/test-packed.mjs                  # pack, install into a temp dir, run every test
//   node scripts/test-packed.mjs --prepare DIR    # pack and install into DIR only (tests/sdk uses it)
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const prepareOnly = args[0] === "--prepare";
const work = prepareOnly ? args[1] : mkdtempSync(join(tmpdir(), "tracerelay-ts-"));
const npm = process.platform === "win32" ? "npm.cmd" : "npm";
const quiet = { stdio: ["ignore", "ignore", "inherit"] };

rmSync(work, { recursive: true, force: true });
const packs = join(work, "pack");
mkdirSync(packs, { recursive: true });
execFileSync(npm, ["pack", "--silent", "--pack-destination", packs], { cwd: root, ...quiet });
const tarball = join(packs, readdirSync(packs).find((name) => name.endsWith(".tgz")));
const dev = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).devDependencies;
const app = join(work, "app");
cpSync(join(root, "test"), join(app, "test"), { recursive: true });
writeFileSync(join(app, "package.json"), JSON.stringify({ name: "tracerelay-test-app", private: true }, null, 2));
execFileSync(
  npm,
  ["install", "--offline", "--no-audit", "--no-fund", "--loglevel=error", tarball, `openai@${dev.openai}`, `@anthropic-ai/sdk@${dev["@anthropic-ai/sdk"]}`],
  { cwd: app, ...quiet },
);
if (!prepareOnly) {
  const files = readdirSync(join(app, "test")).filter((name) => /\.test\.(mjs|cjs|js)$/.test(name));
  const result = spawnSync(process.execPath, ["--test", ...files.map((f) => join("test", f))], { cwd: app, stdio: "inherit" });
  rmSync(work, { recursive: true, force: true });
  process.exit(result.status ?? 1);
}

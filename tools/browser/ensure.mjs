// The browser the dashboard's test drives (test/e2e/dashboard.test.ts): Debian's chromium.
// `npm test` runs this first, so the README's test command sets up a fresh machine: as root
// (CI) it installs the package when it is missing; otherwise it says how, and fails.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";

const path = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
if (existsSync(path)) process.exit(0);

const root = typeof process.getuid === "function" && process.getuid() === 0;
if (!root || !existsSync("/usr/bin/apt-get")) {
  console.error(`No browser at ${path} for the dashboard's browser test. Install Debian's chromium (sudo apt-get install -y chromium) or set CHROMIUM_PATH to a Chromium binary.`);
  process.exit(1);
}
console.log("Installing Debian's chromium for the dashboard's browser test (apt-get install -y chromium)...");
const quiet = { stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } };
execFileSync("apt-get", ["update", "-qq"], quiet);
execFileSync("apt-get", ["install", "-y", "-qq", "chromium"], quiet);
if (!existsSync(path)) {
  console.error(`apt-get installed chromium, but there is still nothing at ${path}.`);
  process.exit(1);
}

// What the browser tests share: the environment ctest gives them, the processes they start (the
// Splash stand-in with its control port, the real newsdesk binary) and always stop, headless
// Debian Chromium through playwright-core, and small waiting and checking helpers.
//
// A test exits 0 when it passed, 1 when it failed, and 77 (skipped) when something it needs is
// missing; under NEWSDESK_REQUIRE_CHROMIUM=1 (scripts/test) a missing part is a failure instead.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { tmpdir } from "node:os";
import { join } from "node:path";

const SKIP = 77;
const env = process.env;
const chromiumPath = env.CHROMIUM || "/usr/bin/chromium";
const newsdeskBinary = env.NEWSDESK_BINARY;
const standinBinary = env.STANDIN_CONTROL;
const sourceDir = env.NEWSDESK_SOURCE_DIR;
export const artifacts = env.NEWSDESK_ARTIFACTS || join(process.cwd(), "artifacts");

// axe-core's Playwright builder; its absence skips the test (fails it in CI, as skip() does).
export async function loadAxe() {
  try {
    return (await import("@axe-core/playwright")).default;
  } catch (e) {
    skip("@axe-core/playwright is not installed: run `npm ci --prefix tests/browser` (scripts/test does)");
  }
}

export function skip(why) {
  if (env.NEWSDESK_REQUIRE_CHROMIUM === "1") {
    console.log(`FAILED: ${why} (NEWSDESK_REQUIRE_CHROMIUM=1)`);
    process.exit(1);
  }
  console.log(`SKIPPED: ${why}`);
  process.exit(SKIP);
}

if (!existsSync(chromiumPath)) skip(`no Chromium at ${chromiumPath} (scripts/setup installs Debian's chromium)`);
for (const [name, path] of [["NEWSDESK_BINARY", newsdeskBinary], ["STANDIN_CONTROL", standinBinary], ["NEWSDESK_SOURCE_DIR", sourceDir]])
  if (!path || !existsSync(path)) skip(`${name} is not set or missing (run through ctest)`);

let playwright;
try {
  playwright = await import("playwright-core");
} catch (e) {
  skip("playwright-core is not installed: run `npm ci --prefix tests/browser` (scripts/test does)");
}

// ---- processes, always cleaned up -------------------------------------------------------------

const children = [];
const work = mkdtempSync(join(tmpdir(), "newsdesk-browser-"));
let browser;

async function cleanup() {
  if (browser) await browser.close().catch(() => {});
  for (const child of children) if (child.exitCode === null) child.kill("SIGTERM");
  rmSync(work, { recursive: true, force: true });
}
for (const signal of ["SIGINT", "SIGTERM"])
  process.on(signal, () => cleanup().finally(() => process.exit(1)));

// Starts `binary`, resolves with the first stdout lines matching `pattern` (its match).
function start(name, binary, args, pattern, timeoutMs = 20000) {
  const childEnv = { ...process.env };
  delete childEnv.SPLASH_URL; // the config file names the stand-in
  const child = spawn(binary, args, { env: childEnv, stdio: ["pipe", "pipe", "pipe"] });
  children.push(child);
  let log = "";
  child.stderr.on("data", (d) => (log = (log + d).slice(-20000)));
  child.logText = () => log;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start in time:\n${log}`)), timeoutMs);
    child.on("exit", (code) => reject(new Error(`${name} exited (${code}) before it was ready:\n${log}`)));
    const lines = createInterface({ input: child.stdout });
    const seen = [];
    lines.on("line", (line) => {
      seen.push(line);
      const all = seen.join("\n").match(pattern);
      if (all) {
        clearTimeout(timer);
        resolve({ child, match: all });
      }
    });
  });
}

// The Splash stand-in; setPage(url, html) changes what it renders for `url`.
export async function startStandin() {
  const standin = await start("standin-control", standinBinary, [], /splash on (\S+)\ncontrol on (\S+)/);
  const [, splashUrl, controlUrl] = standin.match;
  const control = async (what, url, body) => {
    const res = await fetch(`${controlUrl}/control/${what}?url=${encodeURIComponent(url)}`, { method: "POST", body });
    assert(res.status === 200, `stand-in control answered ${res.status}`);
  };
  return {
    splashUrl,
    setPage: (url, html) => control("set", url, html),
    // A real JPEG of width x height at /origin/NAME on the stand-in; resolves with its URL.
    setImage: async (name, width, height) => {
      const res = await fetch(`${controlUrl}/control/image?name=${encodeURIComponent(name)}&width=${width}&height=${height}`, { method: "POST" });
      assert(res.status === 200, `stand-in control answered ${res.status}`);
      return `${splashUrl}/origin/${name}`;
    },
    setError: (url, status) => control("error", url, String(status)),
  };
}

// newsdesk with `config` (its sites and settings; splash_url is the stand-in's), on its own
// ports and store. Returns its base URL, a refresh trigger and its log for failure messages.
export async function startNewsdesk(splashUrl, config) {
  const file = join(work, `config-${children.length}.json`);
  writeFileSync(file, JSON.stringify({ splash_url: splashUrl, wait: 0, ...config }, null, 2));
  const newsdesk = await start("newsdesk", newsdeskBinary, [
    "--config", file,
    "--port", "0",
    "--templates", join(sourceDir, "templates"),
    "--static", join(sourceDir, "static"),
    "--broker-listen", "127.0.0.1:0",
    "--store", join(work, `store-${children.length}.db`),
  ], /service=http url=(http:\/\/127\.0\.0\.1:\d+)/);
  const base = newsdesk.match[1];
  return {
    base,
    log: () => newsdesk.child.logText(),
    refresh: async (site) => {
      const res = await fetch(`${base}/api/refresh?site=${site}`, { method: "POST" });
      assert(res.status === 202, `POST /api/refresh answered ${res.status}`);
    },
    json: async (query = "") => (await fetch(`${base}/news.json${query}`)).json(),
    // Stops it (SIGTERM: streams are closed, then it exits); resolves once it has exited.
    stop: () => new Promise((resolve) => {
      if (newsdesk.child.exitCode !== null) return resolve();
      newsdesk.child.once("exit", resolve);
      newsdesk.child.kill("SIGTERM");
    }),
  };
}

export async function launchBrowser() {
  browser = await playwright.chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
           "--disable-component-update", "--disable-sync"],
  });
  return browser;
}

// A new page that records script errors, console errors and failed responses into `problems`.
export async function watchedPage(context) {
  const page = await context.newPage();
  page.problems = [];
  page.on("pageerror", (e) => page.problems.push(`page error: ${e.message}`));
  page.on("console", (m) => m.type() === "error" && page.problems.push(`console error: ${m.text()} (${m.location().url})`));
  page.on("response", (r) => r.status() >= 400 && page.problems.push(`${r.status()} for ${r.url()}`));
  return page;
}

// ---- checks ---------------------------------------------------------------------------------

export async function eventually(what, check, timeoutMs = 15000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await check().catch(() => false);
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export function assert(condition, message) {
  if (!condition) throw new Error(`check failed: ${message}`);
}

// CNN's 2015 markup (the cnn scraper reads it), as the C++ end-to-end tests build it.
// A story's third element, when given, is its card's picture (an <img> beside the headline).
export function cnnPage(stories) {
  return (
    "<html><head><title>CNN</title></head><body>" +
    stories
      .map(([href, title, image]) => `<article>${image ? `<img src="${image}" width="640" height="360" alt="">` : ""}<h3 class="cd__headline"><a href="${href}"><span class="cd__headline-text">${title}</span></a></h3></article>`)
      .join("") +
    "</body></html>"
  );
}

// The titles a page lists, in order.
export async function titles(page) {
  return page.locator("#headlines > li .story").allTextContents();
}

// Runs `main` with a deadline, cleans up, and exits with the test's result. `log` gives text to
// add to a failure (newsdesk's log).
export async function run(main, { timeoutMs = 100000, log = () => "" } = {}) {
  mkdirSync(artifacts, { recursive: true });
  let code = 0;
  try {
    await Promise.race([
      main(),
      new Promise((_, reject) => setTimeout(() => reject(new Error("timed out: the whole browser test")), timeoutMs).unref()),
    ]);
  } catch (e) {
    console.error(`FAILED: ${e.stack || e}\n--- newsdesk log ---\n${log()}`);
    code = 1;
  }
  await cleanup();
  process.exit(code);
}

export { join };

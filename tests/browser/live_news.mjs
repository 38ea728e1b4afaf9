// Browser test: headless Chromium (Debian's, driven by playwright-core; no browser download)
// opens /news on the real newsdesk binary, checks the headline boxes are laid out on screen and
// the live indicator says connected, then changes the Splash stand-in's page, asks for a
// refresh, and waits for the new headline to appear at the top with its "new" badge, without a
// reload. Screenshots (before/after) go to $NEWSDESK_ARTIFACTS.
//
// Run by ctest (tests/browser/CMakeLists.txt sets the environment). Exit 0: passed; 1: failed;
// 77: skipped (no Chromium, no Node modules, no binaries).
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
const artifacts = env.NEWSDESK_ARTIFACTS || join(process.cwd(), "artifacts");

// Under scripts/test (NEWSDESK_REQUIRE_CHROMIUM=1), which installs Chromium and the npm driver
// first, anything missing is a failure, never a quiet skip.
function skip(why) {
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

let chromium;
try {
  ({ chromium } = await import("playwright-core"));
} catch (e) {
  skip("playwright-core is not installed: run `npm ci --prefix tests/browser` (scripts/test does)");
}

// --- processes, always cleaned up -------------------------------------------------------------

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

// Starts `binary`, resolves with the first stdout line matching `pattern` (its match).
function start(name, binary, args, pattern, extraEnv = {}, timeoutMs = 20000) {
  const childEnv = { ...process.env, ...extraEnv };
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

const deadline = (ms, what) =>
  new Promise((_, reject) => setTimeout(() => reject(new Error(`timed out: ${what}`)), ms).unref());

async function eventually(what, check, timeoutMs = 15000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await check().catch(() => false);
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function assert(condition, message) {
  if (!condition) throw new Error(`check failed: ${message}`);
}

// CNN's 2015 markup (the cnn scraper reads it), as the C++ end-to-end tests build it.
function cnnPage(stories) {
  return (
    "<html><head><title>CNN</title></head><body>" +
    stories
      .map(([href, title]) => `<article><h3 class="cd__headline"><a href="${href}"><span class="cd__headline-text">${title}</span></a></h3></article>`)
      .join("") +
    "</body></html>"
  );
}

const liveUrl = "https://live.cnn.com/";
const worldUrl = "https://world.cnn.com/";
const liveStories = [
  ["/2025/01/01/markets-rally/index.html", "Markets rally as inflation cools"],
  ["/2025/01/01/storm-coast/index.html", "Storm heads for the coast, thousands evacuate"],
  ["/2025/01/01/election-count/index.html", "Election count enters its third day"],
  ["/2025/01/01/space-launch/index.html", "Crewed launch lifts off after two delays"],
];
const worldStories = [
  ["/2025/01/01/summit/index.html", "Leaders meet for climate summit talks"],
  ["/2025/01/01/football/index.html", "Underdogs reach the cup final"],
  ["/2025/01/01/museum/index.html", "Museum returns looted bronzes"],
];
const breaking = "Zebra crossing redesign wins city vote"; // sorts last: it must still be shown first

async function main() {
  mkdirSync(artifacts, { recursive: true });

  // 1. The Splash stand-in, with a control port to change its pages.
  const standin = await start("standin-control", standinBinary, [], /splash on (\S+)\ncontrol on (\S+)/);
  const [, splashUrl, controlUrl] = standin.match;
  const setPage = async (url, html) => {
    const res = await fetch(`${controlUrl}/control/set?url=${encodeURIComponent(url)}`, { method: "POST", body: html });
    assert(res.status === 200, `stand-in control answered ${res.status}`);
  };
  await setPage(liveUrl, cnnPage(liveStories));
  await setPage(worldUrl, cnnPage(worldStories));

  // 2. newsdesk against it, its own ports and store.
  const config = {
    splash_url: splashUrl,
    wait: 0,
    refresh: { manual_min_interval: 0, jitter: 0 },
    sites: [
      { name: "live", scraper: "cnn", url: liveUrl, display_name: "Live Desk", colour: "#1d4ed8" },
      { name: "world", scraper: "cnn", url: worldUrl, display_name: "World Desk", colour: "#b91c1c" },
    ],
  };
  writeFileSync(join(work, "config.json"), JSON.stringify(config, null, 2));
  const newsdesk = await start("newsdesk", newsdeskBinary, [
    "--config", join(work, "config.json"),
    "--port", "0",
    "--templates", join(sourceDir, "templates"),
    "--static", join(sourceDir, "static"),
    "--broker-listen", "127.0.0.1:0",
    "--store", join(work, "store.db"),
  ], /service=http url=(http:\/\/127\.0\.0\.1:\d+)/);
  const base = newsdesk.match[1];
  const failWithLog = (e) => {
    e.message += `\n--- newsdesk log ---\n${newsdesk.child.logText()}`;
    throw e;
  };

  await eventually("both sites' headlines in /news.json", async () => {
    const news = await (await fetch(`${base}/news.json`)).json();
    return news.headlines.length === liveStories.length + worldStories.length;
  }).catch(failWithLog);

  // 3. The page in Chromium.
  browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
           "--disable-component-update", "--disable-sync"],
  });
  const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
  const problems = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => m.type() === "error" && problems.push(`console error: ${m.text()} (${m.location().url})`));
  page.on("response", (r) => r.status() >= 400 && problems.push(`${r.status()} for ${r.url()}`));

  const response = await page.goto(`${base}/news`, { waitUntil: "load" });
  assert(response.status() === 200, `/news answered ${response.status()}`);

  // Every headline box is visible: laid out with a real size, inside the page's width.
  const boxes = page.locator("#headlines > li.headline");
  assert((await boxes.count()) === liveStories.length + worldStories.length, `${await boxes.count()} headline boxes`);
  for (let i = 0; i < (await boxes.count()); ++i) {
    const box = await boxes.nth(i).boundingBox();
    assert(box && box.width > 100 && box.height > 20, `headline ${i} has a box (${JSON.stringify(box)})`);
    assert(box.x >= 0 && box.x + box.width <= 1200, `headline ${i} is inside the viewport width`);
    assert(await boxes.nth(i).locator("a").isVisible(), `headline ${i}'s link is visible`);
  }
  const firstTitle = await boxes.first().locator("a").textContent();
  // Each site's boxes carry its colour.
  const liveColour = await page.locator("#headlines > li.site-live").first().evaluate((e) => getComputedStyle(e).backgroundColor);
  const worldColour = await page.locator("#headlines > li.site-world").first().evaluate((e) => getComputedStyle(e).backgroundColor);
  assert(liveColour === "rgb(29, 78, 216)" && worldColour === "rgb(185, 28, 28)", `site colours ${liveColour} / ${worldColour}`);

  // The live indicator says it is connected.
  const live = page.locator("#live");
  await live.filter({ hasText: "live" }).waitFor({ state: "visible", timeout: 10000 });
  assert(/\bconnected\b/.test(await live.getAttribute("class")), `live indicator class "${await live.getAttribute("class")}"`);
  await page.evaluate(() => (window.__sameDocument = true)); // gone if the page reloads
  await page.screenshot({ path: join(artifacts, "browser-news-before.png"), fullPage: true });

  // 4. The site publishes a new story; a refresh picks it up.
  await setPage(liveUrl, cnnPage([...liveStories, ["/2025/01/01/zebra-crossing/index.html", breaking]]));
  const refresh = await fetch(`${base}/api/refresh?site=live`, { method: "POST" });
  assert(refresh.status === 202, `POST /api/refresh answered ${refresh.status}`);

  // 5. It appears at the top, badged "new", with no reload.
  const first = boxes.first();
  await eventually("the new headline at the top of the page", async () => (await first.locator("a").textContent()) === breaking).catch(failWithLog);
  assert(await first.locator("a").isVisible(), "the new headline is visible");
  assert(await first.locator(".badge").isVisible(), "the new headline has a visible badge");
  assert((await first.locator(".badge").textContent()) === "new", "the badge says new");
  assert(/\bsite-live\b/.test(await first.getAttribute("class")), "the new headline has its site's class");
  assert((await first.evaluate((e) => getComputedStyle(e).backgroundColor)) === liveColour, "the new headline has its site's colour");
  const newBox = await first.boundingBox();
  assert(newBox && newBox.width > 100 && newBox.height > 20, `the new headline has a box (${JSON.stringify(newBox)})`);
  assert((await first.locator("a").getAttribute("href")) === "https://live.cnn.com/2025/01/01/zebra-crossing/index.html", "the new headline links to its story");
  assert(await page.evaluate(() => window.__sameDocument === true), "the page was not reloaded");
  assert((await boxes.count()) === liveStories.length + worldStories.length + 1, "exactly one headline was added");
  assert((await boxes.nth(1).locator("a").textContent()) === firstTitle, "the old headlines follow it");
  assert(/1 new/.test(await live.textContent()), `live indicator says "${await live.textContent()}"`);
  const summaryCount = await page.locator("#headline-count").textContent();
  assert(summaryCount === String(liveStories.length + worldStories.length + 1), `summary counts ${summaryCount} headlines`);
  await page.waitForTimeout(1200); // let the arrival highlight settle before the screenshot
  await page.screenshot({ path: join(artifacts, "browser-news-after.png"), fullPage: true });

  assert(problems.length === 0, problems.join("\n"));
  console.log(`ok: /news showed ${liveStories.length + worldStories.length} headlines, then "${breaking}" arrived live`);
  console.log(`screenshots: ${join(artifacts, "browser-news-before.png")} ${join(artifacts, "browser-news-after.png")}`);
}

let code = 0;
try {
  await Promise.race([main(), deadline(90000, "the whole browser test")]);
} catch (e) {
  console.error(`FAILED: ${e.stack || e}`);
  code = 1;
}
await cleanup();
process.exit(code);

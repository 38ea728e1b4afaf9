// Accessibility and layout of /news, as readers get it: axe-core (@axe-core/playwright) checks the
// page against WCAG 2.2 A and AA in light and dark, on a desktop and on a 390 px phone, with every
// kind of site on it (dark and light site colours, a failed site, a stale one, a right-to-left
// title) and the problem details opened. Any serious or critical violation fails the test; the
// rest are printed. It also checks what axe does not: the layout on a phone (one line of site
// chips, no sideways scrolling of the page), the search button's contrast with the page, the
// headings, and right-to-left titles. Screenshots of each go to $NEWSDESK_ARTIFACTS.
import { assert, artifacts, cnnPage, eventually, join, launchBrowser, run, skip, startNewsdesk, startStandin, watchedPage } from "./harness.mjs";

let AxeBuilder;
try {
  ({ default: AxeBuilder } = await import("@axe-core/playwright"));
} catch (e) {
  skip("@axe-core/playwright is not installed: run `npm ci --prefix tests/browser` (scripts/test does)");
}

const sites = [
  { name: "blue", colour: "#1d4ed8", display_name: "Blue Desk", stories: ["Markets rally as inflation cools", "Storm heads for the coast, thousands evacuate"] },
  { name: "yellow", colour: "#ffd43b", display_name: "Yellow Post", stories: ["Crewed launch lifts off after two delays", "Museum returns looted bronzes"] },
  // Near the colour where black and white text contrast the same: the hardest case.
  { name: "middle", colour: "#767676", display_name: "Grey Times", stories: ["Underdogs reach the cup final"] },
  { name: "arabic", colour: "#0f766e", display_name: "الجزيرة", stories: ["نهاية الحرب في الشمال بعد محادثات طويلة"] },
  { name: "stale", colour: "#b91c1c", display_name: "Stale Herald", stories: ["Leaders meet for climate summit talks"] },
  { name: "broken", colour: "#7c3aed", display_name: "Broken Wire", stories: [] },
  { name: "down", colour: "#be185d", display_name: "Down Daily", stories: [] },
];
const urlOf = (s) => `https://${s.name}.cnn.com/`;
const pageOf = (s) => cnnPage(s.stories.map((t, i) => [`/2025/01/01/${s.name}-${i}/index.html`, t]));

// WCAG relative luminance and contrast of two "rgb(r, g, b)" colours.
function luminance(rgb) {
  const [r, g, b] = rgb.match(/\d+(\.\d+)?/g).slice(0, 3).map(Number).map((v) => {
    const c = v / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}
function contrast(a, b) {
  const [x, y] = [luminance(a), luminance(b)].sort((p, q) => q - p);
  return (x + 0.05) / (y + 0.05);
}

let newsdesk;

async function check(browser, colorScheme, width, height) {
  const label = `${colorScheme} ${width}px`;
  const context = await browser.newContext({ colorScheme, viewport: { width, height } });
  const page = await watchedPage(context);
  await page.goto(`${newsdesk.base}/news`, { waitUntil: "load" });
  await page.locator("#live").filter({ hasText: "live" }).waitFor({ state: "visible", timeout: 10000 });
  // Before the details are opened: headings by section; the page never scrolls sideways; the chips are one line.
  assert((await page.locator("h1").count()) === 1, `${label}: one h1`);
  assert((await page.locator("h2").count()) >= 3, `${label}: a heading per section`);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert(overflow <= 0, `${label}: the page scrolls sideways by ${overflow}px`);
  const chips = await page.locator(".sites ul").boundingBox();
  assert(chips.height < 60, `${label}: the site chips take ${chips.height}px, more than one line`);
  const firstHeadline = await page.locator("#headlines > li").first().boundingBox();
  assert(firstHeadline.y < (width < 500 ? 420 : 300), `${label}: the first headline starts ${firstHeadline.y}px down`);

  for (const summary of await page.locator(".problems summary").all()) await summary.click();
  await page.waitForTimeout(300);

  const results = await new AxeBuilder({ page }).withTags(["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"]).analyze();
  const grave = results.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  for (const v of results.violations)
    console.log(`${label}: ${v.impact} ${v.id}: ${v.help} (${v.nodes.length}): ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", ")}`);
  await page.screenshot({ path: join(artifacts, `news-${colorScheme}-${width}.png`), fullPage: true });
  assert(grave.length === 0, `${label}: serious or critical axe violations:\n` +
    grave.map((v) => `${v.id}: ${v.help}\n  ${v.nodes.map((n) => `${n.target.join(" ")}: ${n.failureSummary}`).join("\n  ")}`).join("\n"));

  // The button stands out from the page (WCAG 1.4.11, 3:1), which axe does not check.
  const [buttonBg, pageBg] = await page.evaluate(() => [getComputedStyle(document.querySelector(".search button")).backgroundColor, getComputedStyle(document.body).backgroundColor]);
  assert(contrast(buttonBg, pageBg) >= 3, `${label}: the search button is ${contrast(buttonBg, pageBg).toFixed(2)}:1 against the page`);

  // A right-to-left title reads right to left, aligned right.
  const rtl = page.locator('#headlines > li.site-arabic .story');
  const [direction, left, right] = await rtl.evaluate((e) => {
    const range = document.createRange();
    range.selectNodeContents(e);
    const text = range.getBoundingClientRect();
    const box = e.getBoundingClientRect();
    return [getComputedStyle(e).direction, text.left - box.left, box.right - text.right];
  });
  assert(direction === "rtl" && right < left, `${label}: the Arabic title is ${direction}, ${left}px from the left and ${right}px from the right`);

  assert(page.problems.length === 0, page.problems.join("\n"));
  await context.close();
  return results.violations.length;
}

await run(async () => {
  const standin = await startStandin();
  for (const s of sites) if (s.stories.length) await standin.setPage(urlOf(s), pageOf(s));
  await standin.setPage(urlOf(sites.find((s) => s.name === "broken")), "<html><body><p>Nothing here</p></body></html>");
  await standin.setError(urlOf(sites.find((s) => s.name === "down")), 504);
  newsdesk = await startNewsdesk(standin.splashUrl, {
    refresh: { manual_min_interval: 0, jitter: 0, retries: 0 },
    sites: sites.map((s) => ({ name: s.name, scraper: "cnn", url: urlOf(s), display_name: s.display_name, colour: s.colour })),
  });
  const withHeadlines = sites.filter((s) => s.stories.length).reduce((n, s) => n + s.stories.length, 0);
  await eventually("every site tried", async () => {
    const news = await newsdesk.json();
    return news.headlines.length === withHeadlines && news.sites.every((s) => s.ok || s.error);
  }, 30000);
  // One site stops answering: its headlines stay, marked stale.
  await standin.setError(urlOf(sites.find((s) => s.name === "stale")), 504);
  await newsdesk.refresh("stale");
  await eventually("the stale site", async () => (await newsdesk.json()).sites.find((s) => s.name === "stale").stale === true);

  const browser = await launchBrowser();
  let minor = 0;
  for (const scheme of ["light", "dark"])
    for (const [width, height] of [[1280, 900], [390, 844]]) minor += await check(browser, scheme, width, height);
  console.log(`ok: no serious or critical axe violations in light and dark at 1280 and 390 px (${minor} lesser ones listed above); screenshots in ${artifacts}`);
}, { log: () => (newsdesk ? newsdesk.log() : "") });

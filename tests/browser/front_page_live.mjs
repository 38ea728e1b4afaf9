// Browser test of the front page as a daily reader meets it (issue 43), on the real newsdesk
// binary with the Splash stand-in: more than 500 headlines from nine sites, two of them telling
// one story. In headless Chromium it checks that
//   - a fresh load of a page cut at 500 headlines marks nothing new: the stream resumes where
//     the page ends, so the headlines left for its next page never arrive as news, the count in
//     the masthead stays the page's and no chip's count grows;
//   - every headline says when: first looks "seen before HH:MM";
//   - the chips are one row at 1280 and at 390 px, the rest behind "All N sites", which shows them;
//   - every site's chip stands out 3:1 from the page in light and in dark (a near-black and a
//     yellow site among them), its text 4.5:1 on it;
//   - the list reads across: the boxes of a row line up, and a story is shown once;
//   - with the pointer on a box, an arrival waits behind "N new" and nothing moves; the masthead
//     does not move when the live status grows; once the pointer leaves, it goes in;
//   - a story that three sites come to tell while the page is open becomes the first card of Top
//     stories within 10 s, without a reload, and its lead's picture comes live once made;
//   - a site that fails while the page is open is told on it: its notice and its chip.
// Screenshots of the page at 1280x800 and 390x844, light and dark, go to $NEWSDESK_ARTIFACTS.
import { artifacts, assert, cnnPage, eventually, join, launchBrowser, run, startNewsdesk, startStandin, watchedPage } from "./harness.mjs";

const sites = [
  { name: "north", colour: "#2b2b2b", display_name: "North Star" }, // BBC's near-black
  { name: "east", colour: "#ffd43b", display_name: "East Courier" }, // a yellow
  { name: "south", colour: "#1d4ed8", display_name: "South Ledger" },
  { name: "west", colour: "#b91c1c", display_name: "West Gazette" },
  { name: "upper", colour: "#15803d", display_name: "Upper Review" },
  { name: "lower", colour: "#7e22ce", display_name: "Lower Times" },
  { name: "inner", colour: "#c2410c", display_name: "Inner Post" },
  { name: "outer", colour: "#0f766e", display_name: "Outer Journal" },
  { name: "middle", colour: "#9d174d", display_name: "Middle Daily" },
];
const perSite = 60; // 9 x 60 = 540 headlines: the page shows 500
// Sites on an internal address, so that newsdesk may fetch their pictures from the stand-in (a
// site on a public address gets pictures from public addresses only); their links are CNN's.
const urlOf = (s) => `http://127.0.0.1/${s.name}/`;
// Headlines in made-up words of their own, so no two sites' resemble each other.
const word = (s, n) => s.name.slice(0, 3) + String.fromCharCode(97 + (Math.floor(n / 26) % 26), 97 + (n % 26));
const titleOf = (s, i) => `${s.display_name} notes ${[0, 1, 2].map((k) => word(s, i * 3 + k)).join(" ")}`;
const shared = "Dam bursts above Porto, valley evacuated";
const sharing = ["north", "east"];
const volcano = "Volcano erupts near Naples, villages evacuated";
const extra = {}; // site -> stories added at the top of its page
const sharedImage = {}; // site -> the picture of its telling of the shared story
// A site's page: its stories' links at CNN, a story's third element its card's picture.
const pageOf = (s) => cnnPage(storiesOf(s).map(([href, title, image]) => [`https://${s.name}.cnn.com${href}`, title, image]));
function storiesOf(s) {
  return [
    ...(extra[s.name] || []),
    ...(sharing.includes(s.name) ? [[`/2025/02/02/${s.name}-dam/index.html`, shared, sharedImage[s.name]]] : []),
    ...Array.from({ length: perSite }, (_, i) => [`/2025/02/02/${s.name}-${i}/index.html`, titleOf(s, i)]),
  ];
}
const total = sites.length * perSite + sharing.length;

let newsdesk;
let standin;

async function addStory(s, href, title, image) {
  extra[s.name] = [[href, title, image], ...(extra[s.name] || [])];
  await standin.setPage(urlOf(s), pageOf(s));
  await newsdesk.refresh(s.name);
}

function luminance(rgb) {
  const [r, g, b] = rgb.match(/\d+/g).slice(0, 3).map((v) => {
    const c = Number(v) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}
const contrast = (a, b) => (Math.max(luminance(a), luminance(b)) + 0.05) / (Math.min(luminance(a), luminance(b)) + 0.05);

async function openNews(context) {
  const page = await watchedPage(context);
  await page.goto(`${newsdesk.base}/news`, { waitUntil: "load" });
  await page.locator("#live").filter({ hasText: "live" }).waitFor({ state: "visible", timeout: 10000 });
  return page;
}

async function freshLoadMarksNothing(browser) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await openNews(context);
  const count = async () => Number(await page.locator("#headline-count").getAttribute("data-count"));
  const chips = async () => page.locator(".chip-count").evaluateAll((all) => all.map((e) => e.dataset.count).join(","));
  const shown = await page.locator("main [data-id]").count();
  const before = { count: await count(), chips: await chips() };
  assert(before.count === shown && shown <= 500, `the masthead counts what the page shows: ${before.count} of ${shown}`);
  assert((await page.locator(".more a").count()) === 1, "the page is cut, with a link to the next");
  // The stream has had time to replay anything it would.
  await page.waitForTimeout(3000);
  assert((await page.locator(".is-new").count()) === 0, `nothing is marked new: ${await page.locator(".is-new").count()}`);
  assert(!/new/.test(await page.locator("#live").textContent()), `the status says "${await page.locator("#live").textContent()}"`);
  assert((await count()) === before.count && (await chips()) === before.chips, "no count grows");
  // Every headline says when: a first look when it was seen by.
  const times = await page.locator("main [data-id] > .meta time.ago").allTextContents();
  assert(times.length === shown && times.every((t) => /^seen before \d{1,2}:\d{2}/.test(t)), `every headline has its time: ${times.slice(0, 3)}`);
  assert(page.problems.length === 0, page.problems.join("\n"));
  await context.close();
}

async function chipsAndColours(browser) {
  for (const scheme of ["light", "dark"])
    for (const [width, height] of [[1280, 800], [390, 844]]) {
      const context = await browser.newContext({ viewport: { width, height }, colorScheme: scheme });
      const page = await openNews(context);
      const label = `${scheme} ${width}px`;
      const rows = await page.locator(".sites li:not([hidden])").evaluateAll((all) => new Set(all.map((e) => e.offsetTop)).size);
      assert(rows === 1, `${label}: the chips take ${rows} rows`);
      const more = page.locator(".chip-more button");
      assert((await more.count()) === 1 && /^All 9 sites$/.test(await more.textContent()), `${label}: "All 9 sites" collapses the rest`);
      const pageBg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
      for (const chip of await page.locator(".chip[data-site]").all()) {
        const [bg, fg] = await chip.evaluate((e) => [getComputedStyle(e).backgroundColor, getComputedStyle(e).color]);
        const name = await chip.getAttribute("data-site");
        assert(contrast(bg, pageBg) >= 3, `${label}: ${name}'s chip ${bg} on the page ${pageBg}: ${contrast(bg, pageBg).toFixed(2)}:1`);
        assert(contrast(bg, fg) >= 4.5, `${label}: ${name}'s chip text ${fg} on ${bg}`);
      }
      // The list reads across: the boxes of each row start and end together.
      const rowsOfBoxes = await page.locator("#headlines > li").evaluateAll((all) => {
        const rows = new Map();
        for (const e of all.slice(0, 24)) {
          const r = e.getBoundingClientRect();
          const key = Math.round(r.top);
          rows.set(key, [...(rows.get(key) || []), Math.round(r.bottom)]);
        }
        return Array.from(rows.values());
      });
      assert(rowsOfBoxes.every((bottoms) => new Set(bottoms).size === 1), `${label}: a row's boxes line up: ${JSON.stringify(rowsOfBoxes)}`);
      const stories = await page.locator("#headlines > li[data-story]").evaluateAll((all) => all.map((e) => e.dataset.story));
      assert(new Set(stories).size === stories.length, `${label}: every story is shown once in the list`);
      await page.screenshot({ path: join(artifacts, `front-page-${scheme}-${width}.png`) });
      await more.click();
      assert((await page.locator(".sites li[hidden]").count()) === 0, `${label}: "All 9 sites" shows every chip`);
      assert(page.problems.length === 0, page.problems.join("\n"));
      await context.close();
    }
}

async function nothingMovesUnderThePointer(browser) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await openNews(context);
  const box = page.locator("#headlines > li").first();
  const title = await box.locator("a.story").textContent();
  await box.hover();
  const before = await box.boundingBox();
  const tools = await page.locator(".search").boundingBox();
  const s = sites[2];
  await addStory(s, "/2025/02/02/south-arrival/index.html", "South Ledger arrival while the pointer rests");
  const button = page.locator("#arrivals");
  await button.waitFor({ state: "visible", timeout: 15000 });
  const after = await page.locator("#headlines > li").first().boundingBox();
  assert((await page.locator("#headlines > li").first().locator("a.story").textContent()) === title && JSON.stringify(after) === JSON.stringify(before),
         `the box under the pointer stays: ${JSON.stringify(before)} then ${JSON.stringify(after)}`);
  // The pointer leaves the boxes: the arrival goes in, and the status counts it without moving
  // the masthead.
  await page.mouse.move(5, 5);
  await eventually("the arrival once the pointer left", async () =>
    (await page.locator("#headlines > li a.story").first().textContent()) === "South Ledger arrival while the pointer rests");
  assert(await button.isHidden(), "the button is gone");
  await eventually("the status to count the arrival", async () => /1 new/.test(await page.locator("#live").textContent()));
  assert(JSON.stringify(await page.locator(".search").boundingBox()) === JSON.stringify(tools), "the masthead does not move");
  assert(page.problems.length === 0, page.problems.join("\n"));
  await context.close();
}

async function breakingNewsBecomesACard(browser) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await openNews(context);
  await page.mouse.move(5, 5); // over the masthead, not a box
  await page.evaluate(() => (window.notReloaded = true));
  const first = (await page.locator("#stories > .top-story").count()) > 0
    ? await page.locator("#stories > .top-story .lead a.story").first().textContent() : "";
  assert(first === shared, `the two-site story is the first card: "${first}"`);
  const started = Date.now();
  // Each site's story has its picture: the card's lead shows its own once newsdesk made it.
  for (const name of ["upper", "lower", "inner"]) {
    const image = await standin.setImage(`volcano-${name}.jpg`, 1200, 800);
    await addStory(sites.find((s) => s.name === name), `/2025/02/02/${name}-volcano/index.html`, volcano, image);
  }
  await eventually("the volcano as the first card", async () =>
    (await page.locator("#stories > .top-story").first().locator(".lead a.story").textContent()) === volcano, 10000);
  const took = Date.now() - started;
  const card = page.locator("#stories > .top-story").first();
  // It becomes a card with its second site; the third joins it as it arrives (later under a
  // sanitizer's slowness).
  await eventually("the card telling 3 sources", async () =>
    (await card.locator(".story-meta a.sources").textContent()) === "3 sources", 10000);
  assert((await card.locator("li[data-id]").count()) === 3, "its three sites' headlines are in it");
  assert((await page.locator("#headlines a.story", { hasText: volcano }).count()) === 0, "and not in the list");
  // The lead's picture arrives live too (made after its headline arrived): newsdesk's copy at
  // 480 x 320, the title as its alt, loaded.
  const picture = card.locator(".lead > img.lead-picture");
  await eventually("the card's picture", async () =>
    (await picture.count()) === 1 && (await picture.evaluate((img) => img.complete && img.naturalWidth === 480)), 15000);
  const shown = await picture.evaluate((img) => ({ src: img.getAttribute("src"), width: img.width, height: img.height, alt: img.alt }));
  assert(/^\/pictures\/[0-9a-f]{32}\.webp$/.test(shown.src) && shown.alt === volcano, `the picture is newsdesk's, its alt the title: ${JSON.stringify(shown)}`);
  assert(await picture.evaluate((img) => getComputedStyle(img).display !== "none"), "the picture shows");
  assert(await card.locator(".telling > .lead-picture").evaluateAll((imgs) => imgs.every((img) => getComputedStyle(img).display === "none")), "the lines beneath show none");
  assert(await page.evaluate(() => window.notReloaded === true), "without a reload");
  await page.screenshot({ path: join(artifacts, "front-page-live-card-1280.png") });
  assert(page.problems.length === 0, page.problems.join("\n"));
  await context.close();
  return took;
}

async function failureToldLive(browser) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await openNews(context);
  await page.evaluate(() => (window.notReloaded = true));
  const s = sites[8];
  await standin.setError(urlOf(s), 504);
  await newsdesk.refresh(s.name);
  await eventually("the failure on the open page", async () =>
    (await page.locator("#problems li", { hasText: s.display_name }).count()) === 1, 20000);
  assert(await page.locator("#problems").isVisible(), "the problems are shown");
  assert(/chip-(stale|failed)/.test(await page.locator(`.chip[data-site="${s.name}"]`).getAttribute("class")), "the chip says it");
  assert(await page.evaluate(() => window.notReloaded === true), "without a reload");
  // It recovers: the notice goes.
  await standin.setPage(urlOf(s), pageOf(s));
  await newsdesk.refresh(s.name);
  await eventually("the notice to go", async () => (await page.locator("#problems li", { hasText: s.display_name }).count()) === 0, 20000);
  assert(await page.locator("#problems").isHidden(), "no problem left");
  assert(page.problems.length === 0, page.problems.join("\n"));
  await context.close();
}

await run(async () => {
  standin = await startStandin();
  for (const name of sharing) sharedImage[name] = await standin.setImage(`dam-${name}.jpg`, 1200, 800);
  for (const s of sites) await standin.setPage(urlOf(s), pageOf(s));
  newsdesk = await startNewsdesk(standin.splashUrl, {
    http: { max_streams_per_ip: 0 },
    refresh: { manual_min_interval: 0, jitter: 0, retries: 0 },
    sites: sites.map((s) => ({ name: s.name, scraper: "cnn", url: urlOf(s), display_name: s.display_name, colour: s.colour })),
  });
  await eventually("every headline in /news.json", async () => (await newsdesk.json("?limit=10000")).headlines.length === total, 30000);
  // The shared story's card with its picture, so the screenshots show one.
  await eventually("/news with the shared story and its picture", async () => {
    const html = await (await fetch(`${newsdesk.base}/news`)).text();
    return html.includes('class="top-story') && html.includes(shared) && html.includes('class="lead-picture"') &&
      sites.every((s) => html.includes(`data-site="${s.name}"`));
  }, 30000);
  const browser = await launchBrowser();
  await freshLoadMarksNothing(browser);
  await chipsAndColours(browser);
  await nothingMovesUnderThePointer(browser);
  const took = await breakingNewsBecomesACard(browser);
  await failureToldLive(browser);
  console.log(`ok: nothing new on a fresh load past 500, times on every headline, chips in one row, scheme colours 3:1, rows that line up, nothing moves under the pointer, a 3-site story a card in ${took} ms without a reload with its picture, a failure told live; screenshots in ${artifacts}`);
}, { log: () => (newsdesk ? newsdesk.log() : "") });

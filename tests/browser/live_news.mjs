// Browser test of the live page: headless Chromium (Debian's, driven by playwright-core) opens
// /news on the real newsdesk binary against the Splash stand-in, then changes the stand-in's pages
// and asks for refreshes, and checks what a reader sees:
//   - headlines newest first (one round's sites interleaved by rank), the page's order the same as
//     /news.json's, each with its age;
//   - a live arrival takes its place at the top, marked new, without a reload, and a reload shows
//     the same order;
//   - a filtered view (one site) counts no other site's arrivals and receives its own site's, in
//     the site's order;
//   - headlines that arrived while the reader was away are marked new on the next visit;
//   - relative times age on an open page (Playwright's clock moves time forward).
// Screenshots go to $NEWSDESK_ARTIFACTS. Run by ctest (tests/browser/CMakeLists.txt).
import { artifacts, assert, cnnPage, eventually, join, launchBrowser, run, startNewsdesk, startStandin, titles, watchedPage } from "./harness.mjs";

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
// Listed last on its site and last by title: it must still be shown first, as the newest.
const breaking = ["/2025/01/01/zebra-crossing/index.html", "Zebra crossing redesign wins city vote"];
const elsewhere = ["/2025/01/01/elsewhere/index.html", "Another live story the world view must not count"];
const worldNews = ["/2025/01/01/treaty/index.html", "Treaty signed after all-night session"];
const whileAway = ["/2025/01/01/away/index.html", "Story published while the reader was away"];

let newsdesk;

async function liveArrival(browser, setPage) {
  const context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
  const page = await watchedPage(context);
  const response = await page.goto(`${newsdesk.base}/news`, { waitUntil: "load" });
  assert(response.status() === 200, `/news answered ${response.status()}`);

  // Newest first, the same order as /news.json (no story two sites tell: no cards); every box
  // laid out, marked by its site's colour, aged.
  const boxes = page.locator("#headlines > li.headline");
  const total = liveStories.length + worldStories.length;
  assert((await boxes.count()) === total, `${await boxes.count()} headline boxes`);
  const json = await newsdesk.json();
  const shown = await titles(page);
  assert(JSON.stringify(shown) === JSON.stringify(json.headlines.map((h) => h.title)),
         `the page's order is /news.json's:\n${shown.join("\n")}`);
  // Newest first, one round's sites interleaved by rank: each site's headlines keep its order.
  const lastRank = {};
  for (const h of json.headlines) {
    assert(!(h.site in lastRank) || h.rank > lastRank[h.site], `${h.site}'s headlines keep its order`);
    lastRank[h.site] = h.rank;
  }
  assert(json.headlines[0].rank === 0, "/news.json opens with a site's lead");
  for (let i = 0; i < total; ++i) {
    const box = await boxes.nth(i).boundingBox();
    assert(box && box.width > 100 && box.height > 20 && box.x >= 0 && box.x + box.width <= 1200, `headline ${i} is laid out (${JSON.stringify(box)})`);
    // A fresh install's first refresh is not news: what it found has no age (no "just now"), only
    // when newsdesk saw it there by, as a clock time.
    const time = await boxes.nth(i).locator("time.ago").textContent();
    assert(/^seen before \d{1,2}:\d{2}/.test(time), `headline ${i} of the first refresh says when it was there by, not its age: "${time}"`);
  }
  // Calm boxes: the site's colour is a stripe (an inset shadow) on the page's neutral surface.
  const liveColour = await page.locator("#headlines > li.site-live").first().evaluate((e) => getComputedStyle(e).boxShadow);
  const worldColour = await page.locator("#headlines > li.site-world").first().evaluate((e) => getComputedStyle(e).boxShadow);
  assert(liveColour.includes("rgb(29, 78, 216)") && worldColour.includes("rgb(185, 28, 28)"), `site colours ${liveColour} / ${worldColour}`);

  // The live status says so; its dot is hidden from screen readers.
  const live = page.locator("#live");
  await live.filter({ hasText: "live" }).waitFor({ state: "visible", timeout: 10000 });
  assert(/\bconnected\b/.test(await live.getAttribute("class")), `live status class "${await live.getAttribute("class")}"`);
  assert((await live.locator(".dot").getAttribute("aria-hidden")) === "true", "the live dot is hidden from screen readers");
  assert(!/new/.test(await live.textContent()), `a first visit counts nothing new: "${await live.textContent()}"`);
  await page.evaluate(() => (window.__sameDocument = true)); // gone if the page reloads
  await page.screenshot({ path: join(artifacts, "browser-news-before.png"), fullPage: true });

  // The site lists a new story last; a refresh picks it up.
  await setPage(liveUrl, cnnPage([...liveStories, breaking]));
  await newsdesk.refresh("live");
  const first = boxes.first();
  await eventually("the new headline at the top", async () => (await first.locator(".story").textContent()) === breaking[1]);
  assert(await page.evaluate(() => window.__sameDocument === true), "the page was not reloaded");
  assert((await first.locator(".badge").textContent()) === "new", "the new headline is marked new");
  assert(await first.locator(".badge").isVisible(), "its mark is visible");
  const arrivedColour = await first.evaluate((e) => getComputedStyle(e).boxShadow);
  assert(arrivedColour.includes("rgb(29, 78, 216)"), `it has its site's colour: ${arrivedColour}`);
  assert((await first.locator(".story").getAttribute("href")) === `https://live.cnn.com${breaking[0]}`, "it links to its story");
  assert((await first.locator(".story").getAttribute("target")) === null, "it opens in the same tab");
  assert((await first.locator("time.ago").textContent()) === "seen just now", "it says it was just seen");
  assert((await boxes.count()) === total + 1, "exactly one headline was added");
  assert(/1 new/.test(await live.textContent()), `live status says "${await live.textContent()}"`);
  assert((await page.locator("#headline-count").textContent()) === `${total + 1} headlines`, "the summary counts it");
  const chip = page.locator('.chip[data-site="live"] .chip-count');
  assert((await chip.textContent()) === String(liveStories.length + 1), `the site's chip counts it (${await chip.textContent()})`);
  await page.waitForTimeout(1300); // let the arrival animation settle before the screenshot
  await page.screenshot({ path: join(artifacts, "browser-news-after.png"), fullPage: true });

  // A reload shows the same order. Live events go out before the views are rebuilt, and /news
  // answers with its previous bytes until then: wait for the page to have it first.
  const afterArrival = await titles(page);
  await eventually("the new headline on /news", async () => (await (await fetch(`${newsdesk.base}/news`)).text()).includes(breaking[1]));
  await page.reload({ waitUntil: "load" });
  const afterReload = await titles(page);
  assert(JSON.stringify(afterArrival) === JSON.stringify(afterReload),
         `order after the live arrival:\n${afterArrival.join("\n")}\nafter a reload:\n${afterReload.join("\n")}`);

  // The reader leaves; a story comes in; the next visit marks it new.
  await page.goto("about:blank"); // pagehide: the page remembers what it showed
  await setPage(liveUrl, cnnPage([...liveStories, breaking, whileAway]));
  await newsdesk.refresh("live");
  // The page is rebuilt after the JSON (each answers with its previous bytes until then): wait
  // for the page itself.
  await eventually("the story on /news", async () => (await (await fetch(`${newsdesk.base}/news`)).text()).includes(whileAway[1]));
  await page.goto(`${newsdesk.base}/news`, { waitUntil: "load" });
  assert((await boxes.first().locator(".story").textContent()) === whileAway[1], "the story that came while away is first");
  assert((await boxes.first().locator(".badge").count()) === 1, "it is marked new since the last visit");
  assert((await page.locator("#headlines .badge").count()) === 1, "nothing else is marked new");
  await eventually("the status to count it", async () => /1 new/.test(await live.textContent()));
  assert(page.problems.length === 0, page.problems.join("\n"));
  await context.close();
}

async function filteredView(browser, setPage) {
  const context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
  const page = await watchedPage(context);
  await page.goto(`${newsdesk.base}/news?site=world`, { waitUntil: "load" });
  const live = page.locator("#live");
  await live.filter({ hasText: "live" }).waitFor({ state: "visible", timeout: 10000 });
  const before = await titles(page);
  assert(JSON.stringify(before) === JSON.stringify(worldStories.map((s) => s[1])), `one site's view keeps the site's order:\n${before.join("\n")}`);
  assert((await page.locator('.chip[data-site="world"] a').getAttribute("aria-current")) === "page", "its chip is marked current");
  assert((await page.locator('form.search input[name="site"]').getAttribute("value")) === "world", "the search form keeps site=");

  // Another site's arrival: nothing here, no phantom count.
  await setPage(liveUrl, cnnPage([...liveStories, breaking, whileAway, elsewhere]));
  await newsdesk.refresh("live");
  await eventually("the other site's story in /news.json", async () => (await newsdesk.json()).headlines.some((h) => h.title === elsewhere[1]));
  await page.waitForTimeout(1000);
  assert(!/new/.test(await live.textContent()), `the world view counts nothing new: "${await live.textContent()}"`);
  assert(JSON.stringify(await titles(page)) === JSON.stringify(before), "the world view is unchanged");

  // Its own site's arrival, second on the site: it takes that place, marked new.
  const reordered = [worldStories[0], worldNews, ...worldStories.slice(1)];
  await setPage(worldUrl, cnnPage(reordered));
  await newsdesk.refresh("world");
  await eventually("the world story on the world view", async () => (await titles(page)).includes(worldNews[1]));
  const after = await titles(page);
  assert(JSON.stringify(after) === JSON.stringify(reordered.map((s) => s[1])), `in the site's order:\n${after.join("\n")}`);
  assert(/1 new/.test(await live.textContent()), `the world view counts its own: "${await live.textContent()}"`);
  await page.waitForTimeout(1300); // let the arrival animation settle before the screenshot
  await page.screenshot({ path: join(artifacts, "browser-news-site-view.png"), fullPage: true });
  await page.reload({ waitUntil: "load" });
  assert(JSON.stringify(await titles(page)) === JSON.stringify(after), "a reload shows the same order");
  assert(page.problems.length === 0, page.problems.join("\n"));
  await context.close();
}

async function timesAge(browser) {
  const context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
  const page = await watchedPage(context);
  await page.clock.install({ time: new Date() });
  await page.goto(`${newsdesk.base}/news`, { waitUntil: "load" });
  const firstTime = page.locator("#headlines > li.headline time.ago").first();
  const seen = Date.parse(await firstTime.getAttribute("datetime"));
  const hover = await firstTime.getAttribute("title");
  assert(/^seen .*\d/.test(hover), `the absolute time is on hover: "${hover}"`);
  const chipTime = page.locator(".chip time.ago").first();
  await page.clock.fastForward("12:00");
  const expected = Math.floor((Date.now() + 12 * 60000 - seen) / 60000);
  let text = "";
  await eventually("the first headline's age to move", async () => {
    text = await firstTime.textContent();
    const minutes = Number((text.match(/^seen (\d+) min ago$/) || [])[1]);
    return minutes >= expected - 1 && minutes <= expected + 1;
  }, 5000).catch((e) => {
    throw new Error(`${e.message}: it says "${text}", about ${expected} min ago expected`);
  });
  assert(/^\d+ min ago$/.test(await chipTime.textContent()), `a site's chip ages too: "${await chipTime.textContent()}"`);
  assert(/^\d\d:\d\d/.test(await page.locator("#as-of").textContent()), `the header's time is a clock time: "${await page.locator("#as-of").textContent()}"`);
  await context.close();
}

await run(async () => {
  const standin = await startStandin();
  await standin.setPage(liveUrl, cnnPage(liveStories));
  await standin.setPage(worldUrl, cnnPage(worldStories));
  newsdesk = await startNewsdesk(standin.splashUrl, {
    refresh: { manual_min_interval: 0, jitter: 0 },
    sites: [
      { name: "live", scraper: "cnn", url: liveUrl, display_name: "Live Desk", colour: "#1d4ed8" },
      { name: "world", scraper: "cnn", url: worldUrl, display_name: "World Desk", colour: "#b91c1c" },
    ],
  });
  await eventually("both sites' headlines in /news.json", async () =>
    (await newsdesk.json()).headlines.length === liveStories.length + worldStories.length);
  // The page is built after the JSON (each view answers with its previous bytes until its next
  // ones are ready): wait until /news lists them too.
  await eventually("both sites' headlines on /news", async () => {
    const html = await (await fetch(`${newsdesk.base}/news`)).text();
    return [...liveStories, ...worldStories].every(([, title]) => html.includes(title));
  });
  const browser = await launchBrowser();
  await liveArrival(browser, standin.setPage);
  await filteredView(browser, standin.setPage);
  await timesAge(browser);
  console.log("ok: newest first, live arrivals in place and kept after a reload, a filtered view hears only its site, marks since the last visit, times age");
}, { log: () => (newsdesk ? newsdesk.log() : "") });

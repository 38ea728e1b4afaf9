// Browser test of reading /news (issue 28): headless Chromium opens the page on the real newsdesk
// binary against the Splash stand-in, with enough headlines to scroll, and checks that
//   - stories come first: at 1280x800 the first screen shows headlines of both sites, and the two
//     sites' headlines of one story sit in one "Top stories" card that says "2 sources" and when
//     the story started, and are not listed again under the latest headlines; each headline in
//     the cards is one tab stop, in order, before the list's; the cards are neutral, titles
//     regular weight; the list can be made compact (one column), which a reload keeps;
//   - the first Tab reaches the "Skip to headlines" link, which leads to the first headline, and
//     each headline is one tab stop; a click anywhere on a box opens its story, and the site's
//     link on it still works;
//   - j and k move the focus from headline to headline, o opens the focused one (the browser asks
//     for its story), m marks it read, s opens its story's coverage, / focuses the search, ? lists
//     the keys and Escape closes the list; keys typed into the search stay there; the keys can be
//     turned off (then "N sources" links are tab stops again);
//   - read marks (opened, m, "Mark all read") survive a reload, and the tab's title counts the
//     unread;
//   - a search of one site's view offers the same search of every site;
//   - scrolled to the middle, a live arrival leaves the element under a fixed viewport point where
//     it was and waits behind an "N new" button (no axe violation with it shown); the button
//     inserts it, scrolls to the top and focuses it; at the top, an arrival goes in at once;
//   - with the renderer down, its failure is told once on the page, headlines and chips unmarked
//     but for a quiet dash on the chip;
//   - the live indicator stops saying "live" when the server stops streaming.
// Screenshots go to $NEWSDESK_ARTIFACTS. Run by ctest (tests/browser/CMakeLists.txt).
import { artifacts, assert, cnnPage, eventually, join, launchBrowser, loadAxe, run, startNewsdesk, startStandin, titles, watchedPage } from "./harness.mjs";

const AxeBuilder = await loadAxe();

// Six sites that list very different numbers of headlines, as real ones do (AP 86, Reuters 20).
const sites = [
  { name: "alpha", colour: "#1d4ed8", display_name: "Alpha Desk", count: 36, shares: true },
  { name: "beta", colour: "#ffd43b", display_name: "Beta Post", count: 24, shares: true },
  { name: "gamma", colour: "#b91c1c", display_name: "Gamma Times", count: 44 },
  { name: "delta", colour: "#15803d", display_name: "Delta Wire", count: 12 },
  { name: "epsilon", colour: "#7e22ce", display_name: "Epsilon Daily", count: 8 },
  { name: "zeta", colour: "#c2410c", display_name: "Zeta Herald", count: 20 },
];
const urlOf = (s) => `https://${s.name}.cnn.com/`;
// Two sites lead with one story (the store groups identical titles into one story).
const shared = "Earthquake shakes Lisbon, buildings evacuated";
const sharing = sites.filter((s) => s.shares).length;
// Every other headline in words of its own (made up, so that no two sites' headlines resemble
// each other and the cards stay the one story above, whatever order the refreshes end in), and
// one word they share for the search below: "Alpha Desk report: alpaa alpab alpac".
const madeUpWord = (s, n) => s.name.slice(0, 3) + String.fromCharCode(97 + Math.floor(n / 26) % 26, 97 + (n % 26));
const titleOf = (s, i) => `${s.display_name} report: ${[0, 1, 2].map((k) => madeUpWord(s, i * 3 + k)).join(" ")}`;
const storiesOf = (s, extra = []) => [
  ...(s.shares ? [[`/2025/01/01/${s.name}-quake/index.html`, shared]] : []),
  ...Array.from({ length: s.count }, (_, i) => [`/2025/01/01/${s.name}-${i}/index.html`, titleOf(s, i)]),
  ...extra,
];
const numbered = sites.reduce((n, s) => n + s.count, 0); // each "... report: ..."
const total = numbered + sharing;
const arrival = ["/2025/01/01/arrival/index.html", "Arrival while the reader is scrolled down"];
const atTopArrival = ["/2025/01/01/at-top/index.html", "Arrival while the reader is at the top"];

let newsdesk;
let standin;

async function openNews(context, path = "/news") {
  const page = await watchedPage(context);
  // Stories open on their own sites: answer them here, so that opening one is seen and cheap.
  await context.route("https://*.cnn.com/**", (route) => route.fulfill({ contentType: "text/html", body: "<title>story</title><p>story</p>" }));
  const response = await page.goto(`${newsdesk.base}${path}`, { waitUntil: "load" });
  assert(response.status() === 200, `${path} answered ${response.status()}`);
  await page.locator("#live").filter({ hasText: "live" }).waitFor({ state: "visible", timeout: 10000 }).catch((e) => {
    throw new Error(`${e.message}\n${page.problems.join("\n")}`);
  });
  return page;
}

// What has the focus: "skip", "headline N" (its place in the list), "search", or its tag.
function focused(page) {
  return page.evaluate(() => {
    const e = document.activeElement;
    if (e.matches(".skip-link")) return "skip";
    // Its place among every headline on the page, in the Top stories cards and in the list.
    if (e.matches("main [data-id] > a.story")) return `headline ${Array.from(document.querySelectorAll("main [data-id]")).indexOf(e.parentElement)}`;
    if (e.matches('.search input[name="q"]')) return "search";
    return e.tagName.toLowerCase() + (e.className ? "." + e.className : "");
  });
}

async function storiesFirst(browser) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await openNews(context);
  const heading = page.locator("#top-stories-heading");
  assert((await heading.textContent()) === "Top stories", "the page opens with the top stories");
  const card = page.locator(".top-story", { has: page.locator("a.story", { hasText: shared }) });
  assert((await card.count()) === 1, `one card holds the shared story (${await card.count()})`);
  const told = await card.locator("a.story").allTextContents();
  assert(told.length === 2 && told.every((t) => t === shared), `the card holds both sites' headlines: ${JSON.stringify(told)}`);
  const bySite = await card.locator("[data-id]").evaluateAll((items) => items.map((e) => e.dataset.site).sort());
  assert(JSON.stringify(bySite) === JSON.stringify(["alpha", "beta"]), `one from each site: ${bySite}`);
  assert((await card.locator(".lead .story").count()) === 1 && (await card.locator(".telling").count()) === 1, "a lead and the other site's headline beneath it");
  const leadSize = await card.locator(".lead .story").evaluate((e) => parseFloat(getComputedStyle(e).fontSize));
  const otherSize = await card.locator(".telling .story").evaluate((e) => parseFloat(getComputedStyle(e).fontSize));
  assert(leadSize > otherSize * 1.2, `the lead is large (${leadSize}px), the other small (${otherSize}px)`);
  const meta = (await card.locator(".story-meta").textContent()).trim();
  assert(/^2 sources · started (just now|\d+ min ago)/.test(meta), `the card says how many sites tell it and since when: "${meta}"`);
  assert(!Number.isNaN(Date.parse(await card.locator(".story-meta time").first().getAttribute("datetime"))), "in a <time> with its datetime");
  assert(!(await titles(page)).includes(shared), "the latest headlines leave out what the cards show");
  const cards = await page.locator(".top-story").count();
  assert(cards >= 1 && cards <= 12, `a few cards: ${cards}`);

  // The first screen shows headlines of most sites, however many each lists (and on a phone,
  // more than one).
  const sitesOnScreen = (p) => p.evaluate(() => [...new Set(Array.from(document.querySelectorAll("main [data-id]")).filter((e) => {
    const box = e.getBoundingClientRect();
    return box.top >= 0 && box.bottom <= innerHeight;
  }).map((e) => e.dataset.site))]);
  const onScreen = await sitesOnScreen(page);
  assert(onScreen.length >= 4, `the first screen at 1280x800 shows headlines of ${JSON.stringify(onScreen)}`);
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true });
  const small = await openNews(phone);
  const onPhone = await sitesOnScreen(small);
  assert(onPhone.length >= 2, `the first screen of a phone shows headlines of ${JSON.stringify(onPhone)}`);
  await small.screenshot({ path: join(artifacts, "front-page-stories-390.png") });
  await phone.close();

  // Calm cards: the page's surface, the site's colour a stripe or a dot; regular-weight titles.
  const [cardBg, boxBg, pageBg, weight] = await page.evaluate(() => [
    getComputedStyle(document.querySelector(".top-story")).backgroundColor,
    getComputedStyle(document.querySelector("#headlines > li")).backgroundColor,
    getComputedStyle(document.body).backgroundColor,
    getComputedStyle(document.querySelector("#headlines .story")).fontWeight,
  ]);
  assert(cardBg === boxBg && !["rgb(29, 78, 216)", "rgb(255, 212, 59)"].includes(boxBg), `neutral cards: ${cardBg}, ${boxBg} on ${pageBg}`);
  assert(weight === "400", `regular-weight titles: ${weight}`);

  // The skip link leads to the top stories; each of their headlines is one tab stop, in order,
  // then the list's first.
  const inCards = await page.locator(".top-story [data-id]").count();
  await page.keyboard.press("Tab");
  await page.keyboard.press("Enter");
  for (let i = 0; i <= inCards; ++i) {
    await page.keyboard.press("Tab");
    assert((await focused(page)) === `headline ${i}`, `Tab ${i + 1} after the skip link reaches ${await focused(page)}`);
  }
  assert((await page.evaluate(() => document.activeElement.closest("#headlines") !== null)), "after the cards, the list");
  await page.screenshot({ path: join(artifacts, "front-page-stories-1280.png") });

  // The compact list: one column, kept after a reload, and undone.
  const columns = () => page.evaluate(() => new Set(Array.from(document.querySelectorAll("#headlines > li"), (e) => e.getBoundingClientRect().x)).size);
  assert((await columns()) > 1, "the list is a grid of boxes");
  await page.locator("#compact").click();
  assert((await page.locator("#compact").getAttribute("aria-pressed")) === "true", "the button says the list is compact");
  assert((await columns()) === 1, "the compact list is one column");
  await page.reload({ waitUntil: "load" });
  assert((await columns()) === 1 && (await page.locator("#compact").getAttribute("aria-pressed")) === "true", "and stays so after a reload");
  await page.screenshot({ path: join(artifacts, "front-page-compact-1280.png") });
  await page.locator("#compact").click();
  assert((await columns()) > 1, "the button turns it off");
  assert(page.problems.length === 0, page.problems.join("\n"));
  await context.close();
}

async function keysAndReading(browser) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await openNews(context);
  const boxes = page.locator("main [data-id]");
  assert((await boxes.count()) === total, `${await boxes.count()} headlines`);
  assert((await page.title()) === `(${total}) newsdesk`, `the title counts every headline unread: "${await page.title()}"`);

  // The first Tab stop is the skip link, shown when focused; it leads to the headlines, and each
  // headline is one stop.
  await page.keyboard.press("Tab");
  assert((await focused(page)) === "skip", `the first Tab reaches ${await focused(page)}`);
  const skipLink = page.locator(".skip-link");
  assert((await skipLink.textContent()) === "Skip to headlines", "the skip link says where it goes");
  const skipBox = await skipLink.boundingBox();
  assert(skipBox && skipBox.y >= 0 && skipBox.y < 100, `the focused skip link is on screen (${JSON.stringify(skipBox)})`);
  await page.keyboard.press("Enter");
  await page.keyboard.press("Tab");
  assert((await focused(page)) === "headline 0", `after the skip link, Tab reaches ${await focused(page)}`);
  await page.keyboard.press("Tab");
  assert((await focused(page)) === "headline 1", `the next Tab reaches ${await focused(page)}, not a second link of the first headline`);

  // j and k move from headline to headline.
  await page.keyboard.press("j");
  assert((await focused(page)) === "headline 2", `j moves to ${await focused(page)}`);
  await page.keyboard.press("k");
  await page.keyboard.press("k");
  assert((await focused(page)) === "headline 0", `k k moves back to ${await focused(page)}`);
  await page.keyboard.press("j");
  assert((await focused(page)) === "headline 1", `j moves to ${await focused(page)}`);

  // m toggles read; the title counts the unread.
  const second = boxes.nth(1);
  await page.keyboard.press("m");
  assert(/\bis-read\b/.test(await second.getAttribute("class")), "m marks the headline read");
  assert((await page.title()) === `(${total - 1}) newsdesk`, `the title counts one read: "${await page.title()}"`);
  await page.keyboard.press("m");
  assert(!/\bis-read\b/.test(await second.getAttribute("class")), "m again marks it unread");
  assert((await page.title()) === `(${total}) newsdesk`, `and the title counts it again: "${await page.title()}"`);

  // o opens the focused headline: the browser asks for its story, and it is remembered as read.
  const href = await second.locator("a.story").getAttribute("href");
  const [request] = await Promise.all([page.waitForRequest(href, { timeout: 5000 }), page.keyboard.press("o")]);
  assert(request.isNavigationRequest(), "o navigates to the story");
  await page.waitForURL(href);
  await page.goBack({ waitUntil: "load" });
  await page.reload({ waitUntil: "load" });
  assert(/\bis-read\b/.test(await second.getAttribute("class")), "the opened headline is read after a reload");
  assert(!/\bis-read\b/.test(await boxes.nth(0).getAttribute("class")), "the one before it is not");
  assert((await boxes.nth(1).locator(".read-note").textContent()) === "read, ", "screen readers hear that it was read");
  assert((await page.title()) === `(${total - 1}) newsdesk`, `the title after a reload: "${await page.title()}"`);
  // s opens the focused headline's story as every site tells it ("N sources", out of the tab
  // order while the keys are on): from any headline of a card, and from a box of the list.
  const card = page.locator(".top-story").first();
  assert((await card.locator("a.sources").getAttribute("tabindex")) === "-1", "a card's \"N sources\" link is no tab stop while s is there");
  const coverage = await card.locator("a.sources").getAttribute("href");
  await card.locator(".telling a.story").first().focus();
  await Promise.all([page.waitForURL(`${newsdesk.base}${coverage}`), page.keyboard.press("s")]);
  assert((await page.locator("#headlines > li").count()) >= 2, "the story's coverage lists its headlines");
  await page.goBack({ waitUntil: "load" });
  const told = page.locator("#headlines > li:has(a.sources)").first();
  if ((await told.count()) === 1) {
    assert((await told.locator("a.sources").getAttribute("tabindex")) === "-1", "a box's \"N sources\" link is no tab stop while s is there");
    const its = await told.locator("a.sources").getAttribute("href");
    await told.locator("a.story").focus();
    await Promise.all([page.waitForURL(`${newsdesk.base}${its}`), page.keyboard.press("s")]);
    await page.goBack({ waitUntil: "load" });
  }

  // The whole box is the headline's link, but for the links on its meta line.
  const fourth = boxes.nth(3);
  const box = await fourth.boundingBox();
  await Promise.all([page.waitForURL(await fourth.locator("a.story").getAttribute("href")), fourth.click({ position: { x: box.width - 8, y: box.height - 8 } })]);
  await page.goBack({ waitUntil: "load" });
  assert(/\bis-read\b/.test(await fourth.getAttribute("class")), "a headline opened by a click on its box is read");
  await Promise.all([page.waitForURL(/\/news\?site=/), fourth.locator("a.source").click()]);
  await page.goBack({ waitUntil: "load" });

  const readBg = await second.evaluate((e) => getComputedStyle(e).backgroundColor);
  const unreadBg = await boxes.nth(0).evaluate((e) => getComputedStyle(e).backgroundColor);
  assert(readBg !== unreadBg, `a read headline is dimmed (${readBg} against ${unreadBg})`);

  // / focuses the search; keys typed there are text, not commands.
  await page.locator("body").click({ position: { x: 5, y: 5 } });
  await page.keyboard.press("/");
  assert((await focused(page)) === "search", `/ focuses ${await focused(page)}`);
  await page.keyboard.type("jom");
  assert((await page.locator('.search input[name="q"]').inputValue()) === "jom", "keys typed into the search are text");
  assert((await focused(page)) === "search", "and leave the focus there");
  await page.locator('.search input[name="q"]').fill("");

  // ? lists the keys; Escape closes the list.
  await page.locator("body").click({ position: { x: 5, y: 5 } });
  await page.keyboard.press("?");
  const keys = page.locator("#keys");
  await keys.waitFor({ state: "visible", timeout: 2000 });
  assert(/j.*next/.test(await keys.textContent()), "the list names the keys");
  await page.keyboard.press("Escape");
  await keys.waitFor({ state: "hidden", timeout: 2000 });

  // The keys can be turned off, and stay off after a reload.
  await page.locator("#show-keys").click();
  await page.locator("#keys-on").uncheck();
  await page.keyboard.press("Escape");
  await page.reload({ waitUntil: "load" });
  await page.locator("body").click({ position: { x: 5, y: 5 } });
  await page.keyboard.press("j");
  assert((await focused(page)) === "body", `with the keys off, j does nothing (focus on ${await focused(page)})`);
  assert((await page.locator("main a.sources").first().getAttribute("tabindex")) === "0", "with the keys off, \"N sources\" is a tab stop again");
  await page.locator("#show-keys").click();
  assert(!(await page.locator("#keys-on").isChecked()), "the keys stay off after a reload");
  await page.locator("#keys-on").check();
  await page.keyboard.press("Escape");

  // Mark all read: every headline, kept after a reload; the title counts none.
  await page.locator("#mark-all-read").click();
  assert((await page.locator("main [data-id].is-read").count()) === total, "every headline is read");
  assert((await page.title()) === "newsdesk", `the title counts nothing unread: "${await page.title()}"`);
  await page.reload({ waitUntil: "load" });
  assert((await page.locator("main [data-id].is-read").count()) === total, "every headline is still read after a reload");
  assert((await page.title()) === "newsdesk", `and the title still counts none: "${await page.title()}"`);

  // A search from one site's view offers the same search of every site.
  await page.goto(`${newsdesk.base}/news?site=alpha`, { waitUntil: "load" });
  await page.locator('.search input[name="q"]').fill("report");
  await Promise.all([page.waitForURL(/q=report/), page.locator(".search button").click()]);
  const all = page.locator("#headlines-heading a", { hasText: "Search all sites" });
  assert((await all.count()) === 1, "a search of one site offers the same search of all");
  await Promise.all([page.waitForURL(/\/news\?q=report$/), all.click()]);
  assert((await titles(page)).length === numbered, "which finds every site's headlines");
  assert((await page.locator("#headlines-heading a", { hasText: "Search all sites" }).count()) === 0, "and offers it no more");

  assert(page.problems.length === 0, page.problems.join("\n"));
  await context.close();
}

// The headline under a point of the viewport, and where it is.
function underPoint(page, point) {
  return page.evaluate(({ x, y }) => {
    const e = document.elementFromPoint(x, y);
    const item = e && e.closest("#headlines > li");
    const box = item && item.getBoundingClientRect();
    return item && { id: item.dataset.id, title: item.querySelector(".story").textContent, x: box.x, y: box.y, scrollY: window.scrollY };
  }, point);
}

async function arrivalsWhileScrolled(browser) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await openNews(context);
  const boxes = page.locator("#headlines > li");
  const count = await boxes.count();
  const all = await page.locator("main [data-id]").count(); // the cards' headlines too
  const inCards = all - count;
  await page.evaluate(() => window.scrollTo(0, (document.documentElement.scrollHeight - innerHeight) / 2));
  // The point: the middle of the box nearest the viewport's middle (its middle may be a gap).
  const point = await page.evaluate(() => {
    const distance = (box) => Math.hypot(box.x + box.width / 2 - innerWidth / 2, box.y + box.height / 2 - innerHeight / 2);
    const boxes = Array.from(document.querySelectorAll("#headlines > li"), (e) => e.getBoundingClientRect());
    const box = boxes.reduce((a, b) => (distance(b) < distance(a) ? b : a));
    return { x: box.x + box.width / 2, y: box.y + box.height / 2 };
  });
  const before = await underPoint(page, point);
  assert(before && before.scrollY > 200, `scrolled to the middle: ${JSON.stringify(before)}`);

  const alpha = sites[0];
  await standin.setPage(urlOf(alpha), cnnPage(storiesOf(alpha, [arrival])));
  await newsdesk.refresh(alpha.name);
  const button = page.locator("#arrivals");
  await button.waitFor({ state: "visible", timeout: 15000 });
  assert((await button.textContent()).trim() === "↑ 1 new headline", `the button says "${await button.textContent()}"`);
  assert((await page.locator(".arrivals").getAttribute("aria-live")) === "polite", "it is announced politely");
  const after = await underPoint(page, point);
  assert(JSON.stringify(after) === JSON.stringify(before), `the element under the viewport's middle stays: ${JSON.stringify(before)} then ${JSON.stringify(after)}`);
  assert((await boxes.count()) === count, "nothing is inserted meanwhile");
  assert(!(await titles(page)).includes(arrival[1]), "the arrival waits");
  assert((await page.title()) === `(${all + 1}) newsdesk`, `the title counts it: "${await page.title()}"`);
  const axe = await new AxeBuilder({ page }).include(".arrivals").withTags(["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"]).analyze();
  assert(axe.violations.length === 0, `axe on the arrivals button: ${axe.violations.map((v) => `${v.id}: ${v.help}`).join("\n")}`);
  await page.screenshot({ path: join(artifacts, "front-page-arrival-waiting-1280.png") });

  // The button inserts it, scrolls to the top and puts the focus on it.
  await button.click();
  assert((await page.evaluate(() => window.scrollY)) === 0, "the page is at the top");
  assert((await titles(page))[0] === arrival[1], `the arrival is first: ${(await titles(page))[0]}`);
  assert((await focused(page)) === `headline ${inCards}`, `the focus is on ${await focused(page)}, the list's first after the cards' ${inCards}`);
  assert((await boxes.first().locator(".badge").textContent()) === "new", "it is marked new");
  assert(await button.isHidden(), "the button is gone");
  assert((await boxes.count()) === count + 1, "one headline was added");

  // At the top, an arrival goes in at once.
  await standin.setPage(urlOf(alpha), cnnPage(storiesOf(alpha, [arrival, atTopArrival])));
  await newsdesk.refresh(alpha.name);
  await eventually("the arrival at the top", async () => (await titles(page))[0] === atTopArrival[1]);
  assert(await button.isHidden(), "without a button");
  assert(page.problems.length === 0, page.problems.join("\n"));
  await context.close();
}

async function failureToldOnce(browser) {
  for (const s of sites) {
    await standin.setError(urlOf(s), 404); // Splash's 404: "is SPLASH_URL pointing at a Splash server?"
    await newsdesk.refresh(s.name);
  }
  await eventually("both sites failed by the renderer", async () =>
    (await newsdesk.json()).sites.every((s) => s.failure === "renderer_down"), 20000);
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await watchedPage(context);
  // The page follows the JSON once rebuilt, and one failed site is enough for the notice: wait
  // for every site's chip to say it too.
  await eventually("the page to tell it", async () => {
    await page.goto(`${newsdesk.base}/news`, { waitUntil: "load" });
    return (await page.locator(".problems").count()) === 1 &&
      (await page.locator(".chip.chip-renderer").count()) === sites.length;
  });
  const text = await page.evaluate(() => document.body.innerText);
  const told = text.split("the page renderer isn’t answering").length - 1;
  assert(told === 1, `the renderer's failure is told ${told} times:\n${text}`);
  assert(/Check Splash: is it running/.test(text), "the notice says what to check");
  assert((await page.locator(".problems > ul > li").count()) === 1, "one notice");
  assert((await page.locator("#headlines > li.is-stale, .stale-note, .chip-failed, .chip-stale").count()) === 0, "no headline or chip is marked loudly");
  assert((await page.locator(".chip.chip-renderer").count()) === sites.length, "each site's chip is marked quietly");
  // The chip keeps its site's colour (#ffd43b, darkened until it stands out 3:1 from the light
  // page), not the failure's.
  const chipBg = await page.locator('.chip[data-site="beta"]').evaluate((e) => getComputedStyle(e).backgroundColor);
  const [r, g, b] = chipBg.match(/\d+/g).map(Number);
  assert(r > g && g > b && b < r / 2, `the chip keeps its site's colour, a yellow: ${chipBg}`);
  assert((await page.locator("main [data-id]").count()) >= total, "the headlines stay");
  await page.screenshot({ path: join(artifacts, "front-page-renderer-down-1280.png") });
  assert(page.problems.length === 0, page.problems.join("\n"));
  await context.close();
}

async function liveIndicator(browser) {
  const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
  const page = await openNews(context);
  const live = page.locator("#live");
  assert(/\bconnected\b/.test(await live.getAttribute("class")), "live while the stream is open");
  await newsdesk.stop();
  await eventually("the indicator to stop saying live", async () => !/\blive\b/.test(await live.textContent()), 10000);
  const words = (await live.textContent()).trim();
  assert(/^● (reconnecting…|offline)/.test(words), `the indicator says "${words}"`);
  assert(/\bdisconnected\b/.test(await live.getAttribute("class")), `its class: "${await live.getAttribute("class")}"`);
  await page.screenshot({ path: join(artifacts, "front-page-disconnected-390.png") });
  await context.close();
}

await run(async () => {
  standin = await startStandin();
  for (const s of sites) await standin.setPage(urlOf(s), cnnPage(storiesOf(s)));
  newsdesk = await startNewsdesk(standin.splashUrl, {
    // Every page this test opens, reloads and goes back to is one more /events stream from
    // 127.0.0.1 while the server notices the last one closed: more than the default 16 at once.
    http: { max_streams_per_ip: 0 },
    refresh: { manual_min_interval: 0, jitter: 0, retries: 0 },
    sites: sites.map((s) => ({ name: s.name, scraper: "cnn", url: urlOf(s), display_name: s.display_name, colour: s.colour })),
  });
  await eventually("every headline in /news.json", async () => (await newsdesk.json()).headlines.length === total, 30000);
  // The page is built after the JSON (each view answers with its previous bytes until its next
  // ones are ready, and a sanitized build is slow): wait until /news has the shared story and
  // every site's headlines too (each site's come in one refresh: its last one stands for all).
  await eventually("the shared story and every site's headlines on /news", async () => {
    const html = await (await fetch(`${newsdesk.base}/news`)).text();
    return html.includes('class="top-story') && html.includes(shared) &&
      sites.every((s) => html.includes(titleOf(s, s.count - 1)));
  }, 30000);
  const browser = await launchBrowser();
  await storiesFirst(browser);
  await keysAndReading(browser);
  await arrivalsWhileScrolled(browser);
  await failureToldOnce(browser);
  await liveIndicator(browser);
  console.log(`ok: top stories first, in calm cards, skip link, one tab stop per headline, keys, read marks after a reload, search of all sites, arrivals that wait while scrolled, a renderer's failure told once, the live indicator; screenshots in ${artifacts}`);
}, { log: () => (newsdesk ? newsdesk.log() : "") });

// Accessibility and layout of /news, as readers get it: axe-core (@axe-core/playwright) checks the
// page against WCAG 2.2 A and AA and axe's best practices in light and dark, on a 1280x800 desktop
// and on a 390x844 phone, with every kind of site on it (dark and light site colours, a failed
// site, a stale one, a right-to-left title), headlines read and new since the last visit, and the
// problem details opened, and a story two sites tell in a "Top stories" card (the list compact on
// the dark desktop); then again with the list of keys open. Any violation fails the test.
// It also checks what axe does not: the layout on a phone (one line of site chips, no sideways
// scrolling of the page), the search button's contrast with the page, the headings, right-to-left
// titles, and every focus ring, reached by Tab: it must show, and contrast at least 3:1 with the
// background it is drawn on (WCAG 2.4.7, 1.4.11), as must the "new" ring; each headline is one
// tab stop. The shared story's card shows its lead's picture, made and served by newsdesk (its
// size and alt said), and the browser asks no other host for anything. Screenshots of each go to
// $NEWSDESK_ARTIFACTS.
import { assert, artifacts, cnnPage, eventually, join, launchBrowser, loadAxe, run, startNewsdesk, startStandin, watchedPage } from "./harness.mjs";

const AxeBuilder = await loadAxe();

const sites = [
  { name: "blue", colour: "#1d4ed8", display_name: "Blue Desk", stories: ["Markets rally as inflation cools", "Storm heads for the coast, thousands evacuate"] },
  // Blue's lead too: the store groups identical titles into one story, which gets a card.
  { name: "yellow", colour: "#ffd43b", display_name: "Yellow Post", stories: ["Crewed launch lifts off after two delays", "Museum returns looted bronzes", "Markets rally as inflation cools"] },
  // Near the colour where black and white text contrast the same: the hardest case.
  { name: "middle", colour: "#767676", display_name: "Grey Times", stories: ["Underdogs reach the cup final"] },
  { name: "arabic", colour: "#0f766e", display_name: "الجزيرة", stories: ["نهاية الحرب في الشمال بعد محادثات طويلة"] },
  { name: "stale", colour: "#b91c1c", display_name: "Stale Herald", stories: ["Leaders meet for climate summit talks"] },
  { name: "broken", colour: "#7c3aed", display_name: "Broken Wire", stories: [] },
  { name: "down", colour: "#be185d", display_name: "Down Daily", stories: [] },
];
// Sites on an internal address, so that newsdesk may fetch their pictures from the stand-in (a
// site on a public address gets pictures from public addresses only); their links are CNN's.
const urlOf = (s) => `http://127.0.0.1/${s.name}/`;
// Each site's lead story has a picture (its card's <img>): /origin/<site>.jpg on the stand-in.
const pictures = {};
const pageOf = (s) => cnnPage(s.stories.map((t, i) => [`https://${s.name}.cnn.com/2025/01/01/${s.name}-${i}/index.html`, t, pictures[s.name] && t === shared ? pictures[s.name] : undefined]));
const shared = "Markets rally as inflation cools";

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

const axeTags = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"];
function explain(violations) {
  return violations.map((v) => `${v.impact} ${v.id}: ${v.help}\n  ${v.nodes.map((n) => `${n.target.join(" ")}: ${n.failureSummary}`).join("\n  ")}`).join("\n");
}

// The rings' bands (colours) of what has the focus, and the background they are drawn on: the
// nearest opaque one outside the control (for a headline, outside its box: the title's link
// draws the ring round the box).
function focusRing() {
  const e = document.activeElement;
  // A title's link draws the ring round its box: a list's box, a card's other headline, or the
  // whole card for its lead.
  const story = e.matches("main a.story");
  const style = getComputedStyle(e, story ? "::after" : null);
  let outside = (story ? e.closest(".telling, .top-story, #headlines > li") : e).parentElement;
  while (outside && getComputedStyle(outside).backgroundColor === "rgba(0, 0, 0, 0)") outside = outside.parentElement;
  const bands = [];
  if (style.outlineStyle !== "none" && parseFloat(style.outlineWidth) >= 2) bands.push(style.outlineColor);
  for (const m of style.boxShadow.matchAll(/rgba?\([^)]*\)[^,]*?(\d+(\.\d+)?)px(?=,|$)/g)) if (parseFloat(m[1]) >= 2) bands.push(m[0].match(/rgba?\([^)]*\)/)[0]);
  const name = (e.getAttribute("aria-label") || e.textContent || e.name || e.type || "").trim().slice(0, 40);
  const headline = e.closest("main [data-id]");
  return {
    what: `${e.tagName.toLowerCase()}${e.className ? "." + e.className.split(" ")[0] : ""} "${name}"`,
    bands,
    background: getComputedStyle(outside || document.body).backgroundColor,
    headline: headline ? headline.dataset.id : null,
  };
}

async function check(browser, colorScheme, width, height, marks) {
  const label = `${colorScheme} ${width}px`;
  const context = await browser.newContext({ colorScheme, viewport: { width, height } });
  // A reader who was here before: some headlines read, some new since that visit.
  // On the dark desktop, one who chose the compact list.
  const compact = colorScheme === "dark" && width > 500;
  await context.addInitScript(({ read, lastSeen, compact }) => {
    localStorage.setItem("newsdesk:read", JSON.stringify(read));
    localStorage.setItem("newsdesk:last-seen:all", String(lastSeen));
    if (compact) localStorage.setItem("newsdesk:compact", "on");
  }, { ...marks, compact });
  const page = await watchedPage(context);
  // Every request the page makes: to newsdesk, never to a site or its CDN.
  const elsewhere = [];
  page.on("request", (r) => {
    const url = r.url();
    if (!url.startsWith(`${newsdesk.base}/`) && !url.startsWith("data:")) elsewhere.push(url);
  });
  await page.goto(`${newsdesk.base}/news`, { waitUntil: "load" });
  await page.locator("#live").filter({ hasText: "live" }).waitFor({ state: "visible", timeout: 10000 });
  // Before the details are opened: headings by section; the page never scrolls sideways; the
  // chips are one row (those that do not fit behind "All N sites").
  assert((await page.locator("h1").count()) === 1, `${label}: one h1`);
  assert((await page.locator("h2").count()) >= 3, `${label}: a heading per section`);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert(overflow <= 0, `${label}: the page scrolls sideways by ${overflow}px`);
  const chips = await page.locator(".sites ul").boundingBox();
  assert(chips.height < 60, `${label}: the site chips take ${chips.height}px, more than one row`);
  const firstHeadline = await page.locator("main [data-id]").first().boundingBox();
  assert(firstHeadline.y < (width < 500 ? 420 : 300), `${label}: the first headline starts ${firstHeadline.y}px down`);

  // Every focus ring, by Tab from the top: visible, and one of its bands 3:1 against what is
  // around it. Each headline is one stop.
  const stops = [];
  for (let i = 0; i < 100; ++i) {
    await page.keyboard.press("Tab");
    const ring = await page.evaluate(focusRing);
    if (ring.what.startsWith("body") || (stops.length && ring.what === stops[0].what)) break;
    stops.push(ring);
  }
  assert(stops.length > 10 && stops[0].what.includes("Skip to headlines"), `${label}: the first stop is the skip link: ${stops.map((s) => s.what).join(", ")}`);
  let weakest = Infinity;
  for (const stop of stops) {
    const best = Math.max(...stop.bands.map((band) => contrast(band, stop.background)));
    assert(stop.bands.length > 0 && best >= 3, `${label}: the focus ring of ${stop.what} (${stop.bands.join(", ")}) is ${best.toFixed(2)}:1 against ${stop.background}`);
    weakest = Math.min(weakest, best);
  }
  const perHeadline = new Map();
  for (const stop of stops) if (stop.headline) perHeadline.set(stop.headline, (perHeadline.get(stop.headline) || 0) + 1);
  assert(perHeadline.size === await page.locator("main [data-id]").count() && [...perHeadline.values()].every((n) => n === 1),
         `${label}: each headline is one tab stop: ${JSON.stringify([...perHeadline])}`);

  // The "new" ring, inside each new box: one of its bands 3:1 against the site's colour, and one
  // against the page.
  const newRings = await page.locator("#headlines > li.is-new").evaluateAll((items) => items.map((e) => {
    const style = getComputedStyle(e);
    return { site: e.dataset.site, bands: [style.outlineStyle === "none" ? null : style.outlineColor, (style.boxShadow.match(/rgba?\([^)]*\)/) || [])[0]], box: style.backgroundColor, page: getComputedStyle(document.body).backgroundColor };
  }));
  let weakestNew = Infinity;
  for (const ring of newRings)
    for (const background of [ring.box, ring.page]) {
      const best = Math.max(...ring.bands.map((band) => (band ? contrast(band, background) : 0)));
      assert(ring.bands.every(Boolean) && best >= 3, `${label}: the new ring on ${ring.site} (${ring.bands.join(", ")}) is ${best.toFixed(2)}:1 against ${background}`);
      weakestNew = Math.min(weakestNew, best);
    }
  console.log(`${label}: ${stops.length} tab stops; the weakest focus ring contrasts ${weakest.toFixed(2)}:1 with its background, the weakest new ring ${weakestNew.toFixed(2)}:1`);

  for (const summary of await page.locator(".problems summary").all()) await summary.click();
  await page.waitForTimeout(300);

  assert((await page.locator("main [data-id].is-read").count()) === marks.read.length, `${label}: the read headlines are marked`);
  assert((await page.locator("main [data-id].is-new").count()) > 0, `${label}: headlines new since the last visit are marked`);
  // The story both sites tell: one card, both headlines, "2 sources".
  const card = page.locator(".top-story", { has: page.locator("a.story", { hasText: "Markets rally as inflation cools" }) });
  assert((await card.count()) === 1 && (await card.locator("a.story").count()) === 2, `${label}: the shared story is one card with both headlines`);
  assert(/^2 sources/.test((await card.locator(".story-meta").textContent()).trim()), `${label}: the card says 2 sources`);
  // Its lead's picture: newsdesk's, 480 x 270 (the 1600 x 900 original made small), the title
  // as its alt, loaded, and laid out at its ratio (its room kept from its attributes).
  const picture = card.locator(".lead > img.lead-picture");
  assert((await picture.count()) === 1, `${label}: the card's lead has a picture`);
  const shown = await picture.evaluate((img) => ({ src: img.getAttribute("src"), width: img.getAttribute("width"), height: img.getAttribute("height"), alt: img.alt, natural: [img.naturalWidth, img.naturalHeight], complete: img.complete, box: img.getBoundingClientRect().toJSON() }));
  assert(/^\/pictures\/[0-9a-f]{32}\.webp$/.test(shown.src), `${label}: the picture is served by newsdesk: ${shown.src}`);
  assert(shown.width === "480" && shown.height === "270", `${label}: the picture says its size: ${shown.width} x ${shown.height}`);
  assert(shown.alt === shared, `${label}: the picture's alt is the title: ${shown.alt}`);
  assert(shown.complete && shown.natural[0] === 480 && shown.natural[1] === 270, `${label}: the picture loaded at 480 x 270: ${shown.natural}`);
  const expected = Math.min(shown.box.width * 270 / 480, 16 * 16); // at its ratio, at most 16rem
  assert(Math.abs(shown.box.height - expected) < 2, `${label}: the picture is laid out ${shown.box.width} x ${shown.box.height}, not ${expected} high`);
  assert(elsewhere.length === 0, `${label}: the page asked other hosts: ${elsewhere.join(", ")}`);
  assert((await page.locator("body.compact").count()) === (compact ? 1 : 0), `${label}: the list is ${compact ? "" : "not "}compact`);
  const results = await new AxeBuilder({ page }).withTags(axeTags).analyze();
  await page.screenshot({ path: join(artifacts, `news-${colorScheme}-${width}.png`), fullPage: true });
  assert(results.violations.length === 0, `${label}: axe violations:\n${explain(results.violations)}`);
  console.log(`${label}: axe: ${results.passes.length} rules passed, no violation`);

  // The list of keys, open.
  await page.locator("body").click({ position: { x: 5, y: 5 } });
  await page.keyboard.press("?");
  await page.locator("#keys").waitFor({ state: "visible", timeout: 2000 });
  const dialog = await new AxeBuilder({ page }).withTags(axeTags).analyze();
  await page.screenshot({ path: join(artifacts, `news-keys-${colorScheme}-${width}.png`) });
  assert(dialog.violations.length === 0, `${label}: axe violations with the keys listed:\n${explain(dialog.violations)}`);
  await page.keyboard.press("Escape");

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
}

await run(async () => {
  const standin = await startStandin();
  for (const name of ["blue", "yellow"]) pictures[name] = await standin.setImage(`${name}.jpg`, 1600, 900);
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
  // The page is built after the JSON (each view answers with its previous bytes until its next
  // ones are ready): wait until /news shows the stale site too, the last change.
  await eventually("the stale site on /news", async () => (await (await fetch(`${newsdesk.base}/news`)).text()).includes("is-stale"));
  // The shared story's card has its picture once newsdesk has made it.
  await eventually("the card's picture on /news", async () => (await (await fetch(`${newsdesk.base}/news`)).text()).includes('class="lead-picture"'));

  // Two headlines read, the newest three new since the last visit.
  const ids = (await newsdesk.json()).headlines.map((h) => h.id).sort((a, b) => a - b);
  const marks = { read: ids.slice(0, 2), lastSeen: ids[ids.length - 4] };
  const browser = await launchBrowser();
  for (const scheme of ["light", "dark"])
    for (const [width, height] of [[1280, 800], [390, 844]]) await check(browser, scheme, width, height, marks);
  console.log(`ok: no axe violation in light and dark at 1280x800 and 390x844, focus rings and new rings at least 3:1; screenshots in ${artifacts}`);
}, { log: () => (newsdesk ? newsdesk.log() : "") });

// Browser test of MQTT over WebSockets (issue 48): MQTT.js (npm's mqtt, its browser bundle) in
// headless Chromium connects to ws://HOST/mqtt on newsdesk's HTTP port with the `mqtt`
// subprotocol, subscribes to newsdesk/headlines/+, and receives a headline the moment a refresh
// finds it, as a dashboard in a browser would. Run by ctest (tests/browser/CMakeLists.txt).
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { assert, cnnPage, eventually, launchBrowser, run, skip, startNewsdesk, startStandin, watchedPage } from "./harness.mjs";

const siteUrl = "https://live.cnn.com/";
const first = [["/2025/01/01/markets-rally/index.html", "Markets rally as inflation cools"]];
const fresh = ["/2025/01/01/bridge-opens/index.html", "River bridge opens to traffic a year early"];

let bundle;
try {
  // The package maps mqtt/dist/NAME to dist/NAME.js: its browser bundle.
  bundle = createRequire(import.meta.url).resolve("mqtt/dist/mqtt.min");
} catch (e) {
  skip("mqtt (MQTT.js) is not installed: run `npm ci --prefix tests/browser` (scripts/test does)");
}

let newsdesk;

async function main() {
  const standin = await startStandin();
  await standin.setPage(siteUrl, cnnPage(first));
  newsdesk = await startNewsdesk(standin.splashUrl, {
    refresh: { manual_min_interval: 0, jitter: 0 },
    sites: [{ name: "live", scraper: "cnn", url: siteUrl }],
  });
  await eventually("the first round's headline in /news.json", async () =>
    (await newsdesk.json()).headlines.length === first.length);

  const browser = await launchBrowser();
  // A dashboard of another origin, as a browser client would be: a page of its own on a local
  // HTTP server of the test's, loading MQTT.js's browser bundle. (Served from the local machine:
  // Chromium blocks a public page's connections to a local address, Local Network Access.) The
  // broker takes any origin: MQTT's users and topics decide what a client may do, as on its port.
  const dashboard = createServer((req, res) => {
    if (req.url === "/mqtt.min.js") {
      res.writeHead(200, { "content-type": "text/javascript" });
      return res.end(readFileSync(bundle));
    }
    res.writeHead(200, { "content-type": "text/html" });
    res.end('<!doctype html><title>dashboard</title><script src="/mqtt.min.js"></script>');
  });
  await new Promise((resolve) => dashboard.listen(0, "127.0.0.1", resolve));
  const page = await watchedPage(await browser.newContext());
  await page.goto(`http://127.0.0.1:${dashboard.address().port}/`, { waitUntil: "load" });
  assert(await page.evaluate(() => typeof mqtt === "object" || typeof mqtt === "function"), "MQTT.js did not load");
  const wsUrl = newsdesk.base.replace(/^http/, "ws") + "/mqtt";
  const subscribed = await page.evaluate((url) => new Promise((resolve) => {
    window.received = [];
    window.client = mqtt.connect(url, { protocolVersion: 5, clientId: "browser-dashboard", reconnectPeriod: 0 });
    window.client.on("error", (e) => resolve(`error: ${e.message}`));
    window.client.on("close", () => resolve("closed before SUBACK"));
    setTimeout(() => resolve("no SUBACK within 10 s"), 10000);
    window.client.on("message", (topic, payload) => window.received.push({ topic, text: payload.toString() }));
    window.client.on("connect", () =>
      window.client.subscribe("newsdesk/headlines/+", { qos: 1 }, (err, granted) =>
        resolve(err ? `subscribe: ${err.message}` : granted.map((g) => g.qos).join(","))));
  }), wsUrl);
  assert(subscribed === "1", `MQTT.js over ${wsUrl}: ${subscribed}`);
  // The browser's own WebSocket: the server answers with the subprotocol `mqtt`, and refuses a
  // WebSocket that does not offer it.
  const opened = (protocols) => page.evaluate(([url, offered]) => new Promise((resolve) => {
    const ws = new WebSocket(url, offered);
    ws.onopen = () => { resolve(`open ${ws.protocol}`); ws.close(); };
    ws.onerror = () => resolve("refused");
  }), [wsUrl, protocols]);
  const withMqtt = await opened(["mqtt"]);
  assert(withMqtt === "open mqtt", `a WebSocket offering mqtt: ${withMqtt}`);
  const without = await opened(["chat"]);
  assert(without === "refused", `a WebSocket offering only chat: ${without}`);

  // A new story on the site: the refresh publishes it, and the page's client receives it.
  await standin.setPage(siteUrl, cnnPage([...first, fresh]));
  await newsdesk.refresh("live");
  await eventually("the new headline over MQTT in the browser", async () => {
    const got = await page.evaluate(() => window.received);
    return got.some((m) => m.topic === "newsdesk/headlines/live" && JSON.parse(m.text).title === fresh[1]);
  });
  const got = await page.evaluate(() => window.received);
  assert(got.every((m) => m.topic === "newsdesk/headlines/live"), `only the site's topic: ${JSON.stringify(got.map((m) => m.topic))}`);
  await page.evaluate(() => new Promise((resolve) => window.client.end(false, {}, resolve)));
  // The refused WebSocket is the one problem the page may report.
  const others = page.problems.filter((p) => !p.includes("WebSocket connection"));
  assert(others.length === 0, `the page saw problems:\n${others.join("\n")}`);
  dashboard.close();
}

await run(main, { log: () => (newsdesk ? newsdesk.log() : "") });

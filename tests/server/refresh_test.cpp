// End-to-end tests of the background refresh, the headline store, feeds and live events: the
// real newsdesk binary, the Splash stand-in and real sockets.
#include "tests/support/harness.hpp"
#include "tests/support/http_get.hpp"
#include "tests/support/sse_client.hpp"

#include <doctest/doctest.h>

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>

using namespace newsdesk::testing;
using namespace std::chrono_literals;

TEST_CASE("200 concurrent views during a refresh cause one render per site") {
  splash_standin splash;
  splash.set("https://one.cnn.com/",
             standin_page::page(cnn_page({{"/a/index.html", "One story"}}), 700ms));
  splash.set("https://two.cnn.com/",
             standin_page::page(cnn_page({{"/b/index.html", "Two story"}}), 700ms));
  newsdesk_process nd(json{
      {"splash_url", splash.base_url()},
      {"sites",
       {site("one", "cnn", "https://one.cnn.com/"), site("two", "cnn", "https://two.cnn.com/")}}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());

  std::atomic<int> ok{0};
  std::mutex failed_mutex;
  std::string first_failed; // what the first view that failed saw, to say why
  std::vector<std::thread> views;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 200; ++i)
    views.emplace_back([&] {
      auto page = http_get(nd.port, "/news");
      // Every view waited for the cold start: none is answered with no headline. (Known issue,
      // to fix: under TSan a view answered in the very milliseconds the cold start ends has
      // been seen to hold one site's headline but not yet the other's; the readiness reaches
      // the serving path before the last site's headlines do.)
      if (page.status == 200 && (page.body.find(">One story</a>") != std::string::npos ||
                                 page.body.find(">Two story</a>") != std::string::npos)) {
        ++ok;
        return;
      }
      const auto after = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - start);
      std::lock_guard lock(failed_mutex);
      if (first_failed.empty())
        first_failed = "status " + std::to_string(page.status) + " after " +
                       std::to_string(after.count()) + " ms: " + page.body.substr(0, 300);
    });
  for (auto& v : views)
    v.join();
  CHECK_MESSAGE(ok == 200, first_failed << "\n" << nd.log());
  CHECK(splash.renders("https://one.cnn.com/") == 1);
  CHECK(splash.renders("https://two.cnn.com/") == 1);
}

TEST_CASE("no more than max_concurrent_renders sites render at once") {
  splash_standin splash;
  json sites = json::array();
  for (int i = 0; i < 6; ++i) {
    const std::string url = "https://s" + std::to_string(i) + ".cnn.com/";
    splash.set(url, standin_page::page(cnn_page({{"/" + std::to_string(i) + "/index.html",
                                                  "Story " + std::to_string(i)}}),
                                       400ms));
    sites.push_back(site("s" + std::to_string(i), "cnn", url));
  }
  newsdesk_process nd(json{{"splash_url", splash.base_url()},
                           {"refresh", {{"max_concurrent_renders", 2}}},
                           {"sites", sites}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  // The cold start waits for all six, three rounds of two; but a view that arrives once the
  // first round is in is answered at once (a slow start is then no longer a cold one).
  json news;
  CHECK(eventually([&] {
    news = news_json(nd.port);
    return std::all_of(news.at("sites").begin(), news.at("sites").end(),
                       [](const json& s) { return s.at("ok") == true; });
  }));
  for (const auto& s : news.at("sites"))
    CHECK_MESSAGE(s.at("ok") == true, s.dump());
  CHECK(splash.peak_concurrent_renders() == 2);
}

TEST_CASE("a failed refresh keeps the last good headlines, marked stale") {
  splash_standin splash;
  splash.set("https://a.cnn.com/",
             standin_page::page(cnn_page({{"/a/index.html", "Kept headline"}})));
  newsdesk_process nd(
      json{{"splash_url", splash.base_url()},
           {"refresh", {{"retries", 0}, {"manual_min_interval", 0}}},
           {"sites", {site("a", "cnn", "https://a.cnn.com/", {{"display_name", "Site A"}})}}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  REQUIRE(news_json(nd.port).at("headlines").size() == 1);

  splash.set("https://a.cnn.com/", standin_page::error(504));
  auto trigger = send_request(nd.port, "POST", "/api/refresh?site=a");
  CHECK(trigger.status == 202);
  REQUIRE(eventually([&] { return site_of(news_json(nd.port), "a")->at("stale") == true; }));
  auto news = news_json(nd.port);
  CHECK(news.at("headlines").size() == 1);
  CHECK(news.at("headlines")[0].at("title") == "Kept headline");
  CHECK(site_of(news, "a")->at("error") == "Splash timed out after 30 s");
  http_answer page;
  CHECK(eventually([&] { // the page follows the JSON once its view is rebuilt
    page = http_get(nd.port, "/news");
    return page.body.find("isn’t updating") != std::string::npos;
  }));
  CHECK(page.body.find("Kept headline") != std::string::npos);
  CHECK(page.body.find("Site A isn’t updating (last updated just now): the site took too long "
                       "to load") != std::string::npos);
  CHECK(page.body.find("class=\"headline site-a is-stale\"") != std::string::npos);
  CHECK(page.body.find("Splash timed out after 30 s") != std::string::npos);
}

TEST_CASE("a restart serves the stored headlines at once") {
  splash_standin splash;
  splash.set("https://a.cnn.com/",
             standin_page::page(cnn_page({{"/a/index.html", "Remembered story"}})));
  temp_dir keep;
  auto store = (keep.path / "news.db").string();
  json cfg = {{"splash_url", splash.base_url()},
              {"sites", {site("a", "cnn", "https://a.cnn.com/")}}};
  {
    newsdesk_process first(cfg, {"--store", store});
    REQUIRE_MESSAGE(first.port != 0, first.log());
    REQUIRE(news_json(first.port).at("headlines").size() == 1);
    CHECK(first.process->stop(SIGTERM) == 0);
  }
  splash.set("https://a.cnn.com/", standin_page::hang()); // the site is down now
  newsdesk_process second(cfg, {"--store", store});
  REQUIRE_MESSAGE(second.port != 0, second.log());
  auto answer = http_get(second.port, "/news.json");
  // Without the store it would wait for the cold start (15 s); a loaded sanitized build may take
  // more than a second to build the view.
  CHECK(answer.elapsed < 5s);
  auto news = json::parse(answer.body);
  REQUIRE(news.at("headlines").size() == 1);
  CHECK(news.at("headlines")[0].at("title") == "Remembered story");
}

TEST_CASE("new headlines are marked new, go first, go out over /events, and replay after a "
          "reconnect") {
  splash_standin splash;
  splash.set("https://a.cnn.com/",
             standin_page::page(cnn_page({{"/old/index.html", "Old story"}})));
  newsdesk_process nd(
      json{{"splash_url", splash.base_url()},
           {"refresh", {{"manual_min_interval", 0}}},
           {"sites", {site("a", "cnn", "https://a.cnn.com/", {{"display_name", "Site A"}})}}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  auto before = news_json(nd.port);
  REQUIRE(before.at("headlines").size() == 1);
  CHECK(before.at("headlines")[0].at("new") == false); // a site's first refresh marks nothing new
  auto old_id = before.at("headlines")[0].at("id").get<std::int64_t>();

  sse_client live(nd.port);
  REQUIRE(live.wait_for("retry: 3000"));
  CHECK(live.received.find("Content-Type: text/event-stream") != std::string::npos);

  splash.set(
      "https://a.cnn.com/",
      standin_page::page(cnn_page({{"/old/index.html", "Old story"},
                                   {"/new/index.html", "Breaking &lt;b&gt;story&lt;/b&gt;"}})));
  REQUIRE(send_request(nd.port, "POST", "/api/refresh").status == 202);
  REQUIRE_MESSAGE(live.wait_for("Breaking <b>story</b>"), nd.log());
  CHECK(live.received.find("event: headline") != std::string::npos);
  CHECK(live.received.find("\"site_display_name\":\"Site A\"") != std::string::npos);

  // Live events go out before the views are rebuilt: the JSON follows.
  json after;
  REQUIRE(eventually([&] {
    after = news_json(nd.port);
    return after.at("headlines").size() == 2;
  }));
  for (const auto& h : after.at("headlines"))
    CHECK(h.at("new") == (h.at("title") == "Breaking <b>story</b>"));
  // Newest first: the new headline heads the page, the JSON and the feeds.
  CHECK(after.at("headlines")[0].at("title") == "Breaking <b>story</b>");
  http_answer page;
  CHECK(eventually([&] { // the page follows the JSON once its view is rebuilt
    page = http_get(nd.port, "/news");
    return page.body.find("Breaking &lt;b&gt;story&lt;/b&gt;") != std::string::npos;
  }));
  CHECK(page.body.find("Breaking &lt;b&gt;story&lt;/b&gt;") < page.body.find("Old story"));
  auto atom = http_get(nd.port, "/news.atom");
  CHECK(atom.body.find("Breaking &lt;b&gt;story&lt;/b&gt;") < atom.body.find("Old story"));

  // A client that saw only the old headline reconnects and gets the new one replayed.
  sse_client replay(nd.port, "/events", std::to_string(old_id));
  CHECK(replay.wait_for("Breaking <b>story</b>"));
  CHECK(replay.received.find("Old story") == std::string::npos);
  sse_client from_page(nd.port, "/events?after=" + std::to_string(old_id));
  CHECK(from_page.wait_for("Breaking <b>story</b>"));
}

TEST_CASE("/events takes the page's site= and q=: a filtered stream hears only what it lists") {
  splash_standin splash;
  splash.set("https://a.cnn.com/", standin_page::page(cnn_page({{"/a0/index.html", "A first"}})));
  splash.set("https://b.cnn.com/", standin_page::page(cnn_page({{"/b0/index.html", "B first"}})));
  newsdesk_process nd(json{
      {"splash_url", splash.base_url()},
      {"refresh", {{"manual_min_interval", 0}}},
      {"sites", {site("a", "cnn", "https://a.cnn.com/"), site("b", "cnn", "https://b.cnn.com/")}}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  REQUIRE(eventually([&] { return news_json(nd.port).at("headlines").size() == 2; }));
  const auto first_id = news_json(nd.port).at("headlines")[0].at("id").get<std::int64_t>();

  sse_client only_b(nd.port, "/events?site=b");
  sse_client elysee(nd.port, "/events?q=elysee");
  sse_client everything(nd.port, "/events");
  for (auto* c : {&only_b, &elysee, &everything})
    REQUIRE(c->wait_for("retry: 3000"));
  CHECK(http_get(nd.port, "/events?site=nope").status == 400);

  splash.set("https://a.cnn.com/",
             standin_page::page(cnn_page({{"/a0/index.html", "A first"},
                                          {"/a1/index.html", "Talks at the \xC3\x89lys\xC3\xA9"
                                                             "e"}})));
  splash.set("https://b.cnn.com/", standin_page::page(cnn_page({{"/b0/index.html", "B first"},
                                                                {"/b1/index.html", "B second"}})));
  REQUIRE(send_request(nd.port, "POST", "/api/refresh?site=a").status == 202);
  REQUIRE(everything.wait_for("lys"));
  REQUIRE(send_request(nd.port, "POST", "/api/refresh?site=b").status == 202);
  REQUIRE(everything.wait_for("B second"));

  CHECK(only_b.wait_for("B second"));
  CHECK(elysee.wait_for("\xC3\x89lys\xC3\xA9"
                        "e"));
  // Give a wrongly sent event time to arrive, then check none did.
  CHECK_FALSE(only_b.wait_for("lys", 300ms));
  CHECK_FALSE(elysee.wait_for("B second", 300ms));
  CHECK(occurrences(only_b.received, "event: headline") == 1);
  CHECK(occurrences(elysee.received, "event: headline") == 1);
  CHECK(occurrences(everything.received, "event: headline") == 2);

  // A replay after a reconnect is filtered the same way.
  sse_client replay_b(nd.port, "/events?site=b&after=" + std::to_string(first_id));
  REQUIRE(replay_b.wait_for("B second"));
  CHECK_FALSE(replay_b.wait_for("lys", 300ms));
}

TEST_CASE("/events ids name the store; an id from another store starts the client over") {
  splash_standin splash;
  splash.set("https://a.cnn.com/", standin_page::page(cnn_page({{"/1/index.html", "One story"}})));
  newsdesk_process nd(json{{"splash_url", splash.base_url()},
                           {"refresh", {{"manual_min_interval", 0}}},
                           {"sites", {site("a", "cnn", "https://a.cnn.com/")}}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  REQUIRE(eventually([&] { return news_json(nd.port).at("headlines").size() == 1; }));

  sse_client live(nd.port);
  REQUIRE(live.wait_for("retry: 3000"));
  splash.set("https://a.cnn.com/", standin_page::page(cnn_page({{"/1/index.html", "One story"},
                                                                {"/2/index.html", "Two story"}})));
  REQUIRE(send_request(nd.port, "POST", "/api/refresh").status == 202);
  REQUIRE(live.wait_for("\"title\":\"Two story\""));
  // "id: EPOCH:ID", the epoch 32 hex digits made when the store was created.
  auto at = live.received.find("\nid: ");
  REQUIRE(at != std::string::npos);
  auto id = live.received.substr(at + 5, live.received.find('\n', at + 5) - at - 5);
  auto colon = id.find(':');
  REQUIRE(colon == 32);
  CHECK(id.find_first_not_of("0123456789abcdef") == colon);

  // The same id resumes: nothing missed, no headline again (a story's or a site's news that
  // came after the headline may follow: it is new).
  sse_client resumed(nd.port, "/events", id);
  REQUIRE(resumed.wait_for("retry: 3000"));
  CHECK_FALSE(resumed.wait_for("event: headline", 500ms));
  CHECK_FALSE(resumed.wait_for("event: reset", 10ms));
  // An id from another store cannot be replayed: a reset with every current headline.
  sse_client stranger(nd.port, "/events", std::string(32, 'f') + ":1");
  REQUIRE(stranger.wait_for("event: reset"));
  CHECK(stranger.wait_for("\"title\":\"Two story\""));
  CHECK(stranger.received.find("\"title\":\"One story\"") != std::string::npos);

  // An id past the newest (a browser open across a restore from a backup) and malformed ones
  // start over too, and then hear what comes next: never a silent stream.
  const auto epoch = id.substr(0, colon);
  std::vector<std::unique_ptr<sse_client>> others;
  for (const std::string& bad :
       {epoch + ":99999999", std::string("garbage"), epoch + ":abc", epoch + ":", epoch + ":-3"}) {
    others.push_back(std::make_unique<sse_client>(nd.port, "/events", bad));
    CAPTURE(bad);
    REQUIRE(others.back()->wait_for("event: reset"));
    CHECK(others.back()->wait_for("\"title\":\"Two story\""));
  }
  others.push_back(std::make_unique<sse_client>(nd.port, "/events?after="));
  REQUIRE(others.back()->wait_for("event: reset"));
  splash.set("https://a.cnn.com/",
             standin_page::page(cnn_page({{"/1/index.html", "One story"},
                                          {"/2/index.html", "Two story"},
                                          {"/3/index.html", "Three story"}})));
  REQUIRE(send_request(nd.port, "POST", "/api/refresh").status == 202);
  for (auto& other : others)
    CHECK(other->wait_for("event: headline"));
  CHECK(resumed.wait_for("\"title\":\"Three story\""));
}

TEST_CASE("a feed's descriptions reach the page as a line under a card's lead, and the stream") {
  splash_standin origin;
  temp_dir sites;
  // Two feeds telling one story, each with its own description (markup and all); one more
  // headline of one feed's own.
  auto feed = [](const std::string& name, const std::string& items) {
    return "<rss version=\"2.0\"><channel><title>" + name + "</title>" + items + "</channel></rss>";
  };
  auto item = [](const std::string& title, const std::string& link, const std::string& text) {
    return "<item><title>" + title + "</title><link>" + link + "</link><description>" + text +
           "</description></item>";
  };
  const std::string dam = "Dam bursts above Porto, valley evacuated";
  origin.set_origin("one.xml",
                    feed("one", item(dam, "https://one.example/dam",
                                     "&lt;p&gt;Thousands leave their homes as the Douro rises."
                                     "&lt;/p&gt;")));
  origin.set_origin("two.xml", feed("two", item(dam, "https://two.example/dam",
                                                "Rescue teams reach the villages of the valley.")));
  for (const std::string name : {"one", "two"})
    sites.write(
        name + ".json",
        json{{"name", name}, {"feed", origin.base_url() + "/origin/" + name + ".xml"}}.dump());
  newsdesk_process nd(
      json{{"site_files_dir", sites.path.string()}, {"refresh", {{"manual_min_interval", 0}}}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  REQUIRE(eventually([&] { return news_json(nd.port).at("headlines").size() == 2; }));

  // The card's lead carries its own feed's line (the other site's is beneath it, a title only).
  const auto page = http_get(nd.port, "/news");
  REQUIRE(page.status == 200);
  const auto card = page.body.find("<li class=\"top-story\"");
  REQUIRE_MESSAGE(card != std::string::npos, page.body);
  const auto summary = page.body.find("<p class=\"headline-summary\" dir=\"auto\">", card);
  REQUIRE(summary != std::string::npos);
  const auto line = page.body.substr(summary, 120);
  CHECK((line.find(">Thousands leave their homes as the Douro rises.</p>") != std::string::npos ||
         line.find(">Rescue teams reach the villages of the valley.</p>") != std::string::npos));
  CHECK(news_json(nd.port).at("headlines")[0].contains("summary"));

  // What arrives live carries its line too.
  sse_client live(nd.port);
  REQUIRE(live.wait_for("retry: 3000"));
  origin.set_origin("one.xml",
                    feed("one", item("Bridge reopens after repairs", "https://one.example/bridge",
                                     "Traffic resumes on the upper deck from Monday.") +
                                    item(dam, "https://one.example/dam", "Thousands leave.")));
  REQUIRE(send_request(nd.port, "POST", "/api/refresh?site=one").status == 202);
  REQUIRE_MESSAGE(live.wait_for("\"summary\":\"Traffic resumes on the upper deck from Monday.\""),
                  live.received << nd.log());
}

namespace {

// Two feed sites, "one" and "two", of 400 headlines each (800 held, more than a page of 500),
// served by `origin`; returns once newsdesk holds them all.
std::unique_ptr<newsdesk_process> with_two_feeds_of_400(splash_standin& origin, temp_dir& sites) {
  for (const std::string name : {"one", "two"}) {
    std::string feed = "<rss version=\"2.0\"><channel><title>" + name + "</title>";
    for (int i = 0; i < 400; ++i)
      feed += "<item><title>Item " + std::to_string(i) + " of feed " + name +
              "</title><link>https://" + name + ".example/" + std::to_string(i) + "</link></item>";
    origin.set_origin(name + ".xml", feed + "</channel></rss>");
    sites.write(
        name + ".json",
        json{{"name", name}, {"feed", origin.base_url() + "/origin/" + name + ".xml"}}.dump());
  }
  auto nd = std::make_unique<newsdesk_process>(json{{"site_files_dir", sites.path.string()}});
  REQUIRE_MESSAGE(nd->port != 0, nd->log());
  REQUIRE(eventually([&] {
    return news_json(nd->port, "?site=one").at("headlines").size() == 400 &&
           news_json(nd->port, "?site=two").at("headlines").size() == 400;
  }));
  return nd;
}

} // namespace

TEST_CASE("a reset carries what the page shows, at most a page of headlines, whatever the store "
          "holds") {
  splash_standin origin;
  temp_dir sites;
  auto owner = with_two_feeds_of_400(origin, sites);
  auto& nd = *owner;
  auto count = [](const std::string& text, const std::string& needle) {
    std::size_t n = 0;
    for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
      ++n;
    return n;
  };
  auto reset_of = [&](const std::string& target) {
    sse_client stranger(nd.port, target, std::string(32, 'f') + ":1");
    REQUIRE(stranger.wait_for("event: reset"));
    REQUIRE(stranger.wait_for("]\n\n"));
    const auto& text = stranger.received;
    const auto from = text.find("event: reset");
    return text.substr(from, text.find("]\n\n", from) - from);
  };
  // Every stranger gets the same page: the newest 500.
  const auto first = reset_of("/events");
  CHECK(count(first, "\"title\":") == 500); // news_query.hpp's page_size
  CHECK(reset_of("/events") == first);
  // A filtered stream's reset is its filter's page.
  CHECK(count(reset_of("/events?site=one"), "\"title\":") == 400);
  CHECK(count(reset_of("/events?q=feed+two"), "\"title\":") == 400);
}

TEST_CASE("a storm of reconnects with unknown ids, most of them over the streams' budget, leaves "
          "memory where it was") {
  splash_standin origin;
  temp_dir sites;
  auto nd = with_two_feeds_of_400(origin, sites);
  const auto pid = nd->process->pid();
  const auto before = process_memory_kib(pid, "VmRSS");
  // Clients that ask for a reset and leave at once, from one address: past its 16 streams
  // each is refused (the reset made for it must not wait for the next ping to be freed).
  std::atomic<int> sent{0};
  std::vector<std::thread> storm;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // Under a sanitizer RSS is not checked (below): a short storm, sparing the tests beside it.
  const auto length = 2s;
  const int threads = 2;
#else
  const auto length = 8s;
  const int threads = 4;
#endif
  const auto end = std::chrono::steady_clock::now() + length;
  for (int t = 0; t < threads; ++t)
    storm.emplace_back([&] {
      const std::string request =
          "GET /events HTTP/1.1\r\nHost: x\r\nLast-Event-ID: " + std::string(32, 'f') +
          ":1\r\n\r\n";
      while (std::chrono::steady_clock::now() < end) {
        int fd = connect_loopback(nd->port);
        if (fd < 0)
          continue;
        ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
        char some[4096];
        ::recv(fd, some, sizeof some, 0); // the head, or the refusal
        ::close(fd);
        ++sent;
      }
    });
  for (auto& t : storm)
    t.join();
  const auto after = process_memory_kib(pid, "VmRSS");
  MESSAGE(sent.load() << " reconnects; RSS " << before / 1024 << " MB -> " << after / 1024
                      << " MB");
  CHECK(sent.load() > 100);
  // Still serving.
  CHECK(http_get(nd->port, "/news").status == 200);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // Shadow memory and quarantine make RSS say nothing of the program's own use.
#else
  CHECK(after - before < 50 * 1024);
#endif
}

TEST_CASE("a site whose page stops giving what it used to is flagged on its chip, in /readyz, "
          "/metrics and one log line, and cleared when it recovers") {
  splash_standin splash;
  const std::string url = "https://a.cnn.com/";
  auto page_of = [](int stories) {
    std::vector<std::pair<std::string, std::string>> list;
    for (int i = 0; i < stories; ++i)
      list.push_back({"/" + std::to_string(i) + "/index.html",
                      "Story number " + std::to_string(i) + " of the day"});
    return cnn_page(list);
  };
  splash.set(url, standin_page::page(page_of(40)));
  newsdesk_process nd(json{{"splash_url", splash.base_url()},
                           {"refresh", {{"jitter", 0}}},
                           {"sites", {site("a", "cnn", url, {{"interval", 1}})}}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  // What is usual is learned first: five refreshes.
  REQUIRE(eventually([&] { return splash.renders(url) >= 6; }, 30s));
  CHECK(nd.log().find("site looks broken") == std::string::npos);
  // A markup change leaves three of the forty: after three such refreshes it is flagged.
  splash.set(url, standin_page::page(page_of(3)));
  REQUIRE(eventually(
      [&] { return nd.log().find("msg=\"site looks broken\" site=a") != std::string::npos; }, 30s));
  CHECK(nd.log().find("reason=\"found 3 headlines in its last 3 refreshes, where it usually "
                      "finds about 40\"") != std::string::npos);
  CHECK(count(nd.log(), "msg=\"site looks broken\"") == 1); // once, not every refresh
  CHECK(eventually([&] {
    return http_get(nd.port, "/metrics").body.find("newsdesk_site_health{site=\"a\"} 0") !=
           std::string::npos;
  }));
  auto ready = json::parse(http_get(nd.port, "/readyz").body);
  REQUIRE(ready.at("sites_looking_broken").size() == 1);
  CHECK(ready.at("sites_looking_broken")[0].at("site") == "a");
  // /metrics and /readyz read the snapshot; the JSON follows once its view is rebuilt.
  CHECK(eventually([&] { // null in the JSON built before the site was flagged
    const auto health = news_json(nd.port).at("sites")[0].at("health");
    return health.is_string() && health.get<std::string>().find("found 3") == 0;
  }));
  CHECK(eventually(
      [&] { return http_get(nd.port, "/news").body.find("chip-broken") != std::string::npos; }));
  // The page back as it was: one good refresh clears it.
  splash.set(url, standin_page::page(page_of(40)));
  CHECK(eventually(
      [&] { return nd.log().find("msg=\"site looks well again\" site=a") != std::string::npos; },
      30s));
  CHECK(eventually([&] {
    return http_get(nd.port, "/metrics").body.find("newsdesk_site_health{site=\"a\"} 1") !=
           std::string::npos;
  }));
}

TEST_CASE("a headline forged on the broker's port never reaches /events") {
  splash_standin splash;
  splash.set("https://a.cnn.com/", standin_page::page(cnn_page({{"/a/index.html", "Real story"}})));
  newsdesk_process nd(
      json{{"splash_url", splash.base_url()}, {"sites", {site("a", "cnn", "https://a.cnn.com/")}}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  REQUIRE(nd.broker_port != 0);
  news_json(nd.port);
  sse_client reader(nd.port);
  REQUIRE(reader.wait_for("retry: 3000"));
  json forged = json::array({{{"id", 999999},
                              {"title", "FORGED: Site compromised, log in again here"},
                              {"url", "https://evil.example/login"},
                              {"site", "a"}}});
  auto answer = raw_exchange(nd.broker_port,
                             frame("/null") + frame("/topic/headlines") + frame(forged.dump()), 2s);
  CHECK_FALSE(reader.wait_for("FORGED", 1s));
  auto broker = json::parse(http_get(nd.port, "/api/broker").body);
  CHECK(broker.at("disconnects").at("reserved_channel") == 1);
}

TEST_CASE("each new headline goes out on MQTT newsdesk/headlines/<site>, the latest retained") {
  // Mosquitto's own client (mosquitto-clients, installed by scripts/setup), not ours.
  const std::string sub_bin = "/usr/bin/mosquitto_sub";
  INFO("mosquitto_sub is missing: scripts/setup installs mosquitto-clients");
  REQUIRE(::access(sub_bin.c_str(), X_OK) == 0);
  splash_standin splash;
  splash.set("https://a.cnn.com/",
             standin_page::page(cnn_page(
                 {{"/a/one/index.html", "One story"}, {"/a/two/index.html", "Two story"}})));
  newsdesk_process nd(json{{"splash_url", splash.base_url()},
                           {"refresh", {{"manual_min_interval", 0}}},
                           {"sites", {site("a", "cnn", "https://a.cnn.com/")}}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  const auto mqtt_port = nd.process->wait_for_log("msg=listening service=mqtt address=127.0.0.1:");
  REQUIRE(mqtt_port);
  const auto news = news_json(nd.port);
  REQUIRE(news.at("headlines").size() == 2);
  // Subscribing after the first refresh, which is shown but not announced: the site's newest
  // headline is retained all the same and arrives at once.
  child_process sub(sub_bin, {"-h", "127.0.0.1", "-p", *mqtt_port, "-V", "mqttv5", "-t",
                              "newsdesk/headlines/+", "-v", "-F", "%r %t %p"});
  const auto line = sub.wait_for_line("1 newsdesk/headlines/a ", 20s);
  INFO(http_get(nd.port, "/api/broker").body);
  REQUIRE(line);
  const auto item = json::parse(*line);
  CHECK(item.at("site") == "a");
  CHECK(item.at("url").get<std::string>().find("https://a.cnn.com/a/") == 0);
  std::int64_t newest = 0;
  for (const auto& h : news.at("headlines"))
    newest = std::max(newest, h.at("id").get<std::int64_t>());
  CHECK(item.at("id") == newest);

  // A later refresh's new headline goes out live (RETAIN clear), and becomes the retained one.
  splash.set("https://a.cnn.com/",
             standin_page::page(cnn_page({{"/a/three/index.html", "Three story"},
                                          {"/a/one/index.html", "One story"},
                                          {"/a/two/index.html", "Two story"}})));
  REQUIRE(send_request(nd.port, "POST", "/api/refresh?site=a").status == 202);
  const auto live = sub.wait_for_line("0 newsdesk/headlines/a ", 20s);
  REQUIRE(live);
  CHECK(json::parse(*live).at("title") == "Three story");
  child_process late(sub_bin, {"-h", "127.0.0.1", "-p", *mqtt_port, "-t", "newsdesk/headlines/a",
                               "-C", "1", "-W", "20"});
  const auto kept = late.wait_for_line("{", 20s);
  REQUIRE(kept);
  CHECK(json::parse("{" + *kept).at("title") == "Three story");
}

TEST_CASE("site=, q= and limit= filter every output; bad values get 400") {
  splash_standin splash;
  splash.set("https://a.cnn.com/", standin_page::page(cnn_page({{"/1/index.html", "Apples fall"},
                                                                {"/2/index.html", "Pears rise"}})));
  splash.set("https://b.cnn.com/",
             standin_page::page(cnn_page({{"/3/index.html", "Apple harvest"}})));
  newsdesk_process nd(json{
      {"splash_url", splash.base_url()},
      {"sites", {site("a", "cnn", "https://a.cnn.com/"), site("b", "cnn", "https://b.cnn.com/")}}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  // A view that arrives once one site is in is answered at once: wait for both.
  REQUIRE(eventually([&] { return news_json(nd.port).at("headlines").size() == 3; }));
  CHECK(news_json(nd.port, "?site=b").at("headlines").size() == 1);
  CHECK(news_json(nd.port, "?site=b").at("sites").size() == 1);
  CHECK(news_json(nd.port, "?site=a,b&q=APPLE").at("headlines").size() == 2);
  CHECK(news_json(nd.port, "?q=apple+harvest").at("headlines").size() == 1);
  CHECK(news_json(nd.port, "?limit=1").at("headlines").size() == 1);
  auto page = http_get(nd.port, "/news?q=pears");
  CHECK(page.body.find("Pears rise") != std::string::npos);
  CHECK(page.body.find("Apples fall") == std::string::npos);
  CHECK(page.body.find("value=\"pears\"") != std::string::npos);
  CHECK(page.body.find("href=\"/news.atom?q=pears\"") != std::string::npos);
  auto atom = http_get(nd.port, "/news.atom?site=b");
  CHECK(atom.body.find("Apple harvest") != std::string::npos);
  CHECK(atom.body.find("Pears rise") == std::string::npos);
  CHECK(http_get(nd.port, "/news?site=nope").status == 400);
  CHECK(http_get(nd.port, "/news.json?limit=0").status == 400);
  CHECK(http_get(nd.port, "/news.json?limit=abc").status == 400);
  CHECK(http_get(nd.port, "/news.atom?q=" + std::string(300, 'x')).status == 400);
  // The page with every site's chip lists the same headlines.
  auto all_chips = http_get(nd.port, "/news?chips=all");
  CHECK(all_chips.status == 200);
  CHECK(all_chips.body.find("Pears rise") != std::string::npos);
  CHECK(http_get(nd.port, "/news?chips=some").status == 400);
}

TEST_CASE("the Atom and JSON feeds parse cleanly in a real feed reader") {
  // Debian's python3-feedparser belongs to /usr/bin/python3 (another python3 may come first
  // on PATH). A check that cannot run fails: scripts/setup installs it.
  REQUIRE_MESSAGE(std::system("/usr/bin/python3 -c 'import feedparser' 2>/dev/null") == 0,
                  "python3-feedparser is not installed (scripts/setup installs it)");
  splash_standin splash;
  splash.set("https://a.cnn.com/", standin_page::page(cnn_page(
                                       {{"/1/index.html", "Q&amp;A: &lt;tags&gt; &amp; \"quotes\""},
                                        {"/2/index.html", "Second story"}})));
  newsdesk_process nd(
      json{{"splash_url", splash.base_url()}, {"sites", {site("a", "cnn", "https://a.cnn.com/")}}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  news_json(nd.port);
  auto atom = http_get(nd.port, "/news.atom");
  CHECK(atom.header("Content-Type") == "application/atom+xml; charset=utf-8");
  auto feed = http_get(nd.port, "/news.feed.json");
  CHECK(feed.header("Content-Type") == "application/feed+json; charset=utf-8");
  auto atom_path = nd.dir.write("feed.atom", atom.body);
  auto json_path = nd.dir.write("feed.json", feed.body);
  auto script = nd.dir.write("check.py", R"(import feedparser, json, sys
d = feedparser.parse(sys.argv[1])
assert d.bozo == 0, d.get("bozo_exception")
assert d.version == "atom10", d.version
titles = sorted(e.title for e in d.entries)
assert titles == ['Q&A: <tags> & "quotes"', "Second story"], titles
assert all(e.id and e.link.startswith("https://a.cnn.com/") and e.published_parsed for e in d.entries)
f = json.load(open(sys.argv[2]))
assert f["version"] == "https://jsonfeed.org/version/1.1"
assert sorted(i["title"] for i in f["items"]) == titles
assert {i["id"] for i in f["items"]} == {e.id for e in d.entries}, "ids differ between the feeds"
)");
  CHECK(std::system(("/usr/bin/python3 " + script + " " + atom_path + " " + json_path).c_str()) ==
        0);
}

TEST_CASE("manual refreshes are rate limited per site") {
  splash_standin splash;
  splash.set("https://a.cnn.com/", standin_page::page(cnn_page({{"/a/index.html", "A story"}})));
  newsdesk_process nd(
      json{{"splash_url", splash.base_url()}, {"sites", {site("a", "cnn", "https://a.cnn.com/")}}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  news_json(nd.port);
  auto first = send_request(nd.port, "POST", "/api/refresh?site=a");
  CHECK(first.status == 202);
  CHECK(json::parse(first.body).at("started") == json::array({"a"}));
  // The stand-in counts a render when it arrives, before newsdesk has finished it; until
  // then a second request is answered "already_running", which is not what is tested here.
  http_answer second;
  CHECK(eventually([&] {
    second = send_request(nd.port, "POST", "/api/refresh?site=a");
    return json::parse(second.body).at("already_running").empty();
  }));
  CHECK(splash.renders("https://a.cnn.com/") == 2);
  CHECK(second.status == 429);
  CHECK(second.header("Retry-After") == "10");
  CHECK(send_request(nd.port, "POST", "/api/refresh?site=nope").status == 404);
  CHECK(send_request(nd.port, "GET", "/api/refresh").status == 405);
}

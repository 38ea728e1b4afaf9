// Several newsdesk instances on one PostgreSQL store: real binaries, a real PostgreSQL started
// by the test (tests/support/postgres_cluster.hpp), the Splash stand-in counting renders.
#include "tests/server/cluster_support.hpp"
#include "tests/support/harness.hpp"
#include "tests/support/http_get.hpp"
#include "tests/support/postgres_cluster.hpp"
#include "tests/support/sse_client.hpp"

#include <doctest/doctest.h>

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

using namespace newsdesk::testing;
using namespace std::chrono_literals;

namespace {

// The epoch:id of the newest headline an SSE stream has carried.
std::string last_event_id(const std::string& stream) {
  auto at = stream.rfind("\nid: ");
  REQUIRE(at != std::string::npos);
  auto end = stream.find('\n', at + 5);
  return stream.substr(at + 5, end - at - 5);
}

} // namespace

TEST_CASE("three instances on one PostgreSQL render each site once per interval and show the "
          "same headlines") {
  auto& pg = postgres_cluster::shared();
  const auto store = pg.fresh_database();
  splash_standin splash;
  splash.set("https://a.cnn.com/", standin_page::page(cnn_page({{"/a1/index.html", "A one"}})));
  splash.set("https://b.cnn.com/", standin_page::page(cnn_page({{"/b1/index.html", "B one"}})));
  const auto config = cluster_config(splash,
                                     {site("a", "cnn", "https://a.cnn.com/", {{"interval", 2}}),
                                      site("b", "cnn", "https://b.cnn.com/", {{"interval", 2}})},
                                     {});
  const auto started = std::chrono::steady_clock::now();
  std::vector<std::unique_ptr<newsdesk_process>> nds;
  for (int i = 0; i < 3; ++i)
    nds.push_back(instance(config, store));

  std::this_thread::sleep_for(7s);
  const auto seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  // One instance alone renders each site at start and then once per 2 s interval (plus render
  // time, and one of slack): three uncoordinated instances would render three times that.
  const auto most = static_cast<std::size_t>(seconds / 2.0) + 2;
  for (const char* url : {"https://a.cnn.com/", "https://b.cnn.com/"}) {
    INFO(url << " rendered " << splash.renders(url) << " times in " << seconds << " s");
    CHECK(splash.renders(url) >= 2);
    CHECK(splash.renders(url) <= most);
  }
  // Each instance's page follows the store's events once its views are rebuilt: waited for, not
  // left to the sleep above.
  for (auto& nd : nds)
    CHECK(eventually(
        [&] {
          return titles(nd->port) == std::set<std::string>{"A one", "B one"};
        },
        5s));

  // A change rendered by whichever instance holds the site reaches every instance's page and
  // SSE stream.
  sse_client live(nds[2]->port);
  REQUIRE(live.wait_for("retry: 3000"));
  splash.set("https://a.cnn.com/", standin_page::page(cnn_page({{"/a1/index.html", "A one"},
                                                                {"/a2/index.html", "A two"}})));
  CHECK(live.wait_for("A two", 10s));
  for (auto& nd : nds)
    CHECK(eventually([&] { return titles(nd->port).count("A two") == 1; }, 5s));
}

TEST_CASE("three instances on one PostgreSQL share the renders: each does a fair part, and each "
          "site still renders once per interval") {
  auto& pg = postgres_cluster::shared();
  const auto store = pg.fresh_database();
  splash_standin splash;
  json sites = json::array();
  std::vector<std::string> urls;
  for (int i = 1; i <= 6; ++i) {
    const auto name = "s" + std::to_string(i);
    urls.push_back("https://" + name + ".cnn.com/");
    splash.set(urls.back(),
               standin_page::page(cnn_page({{"/" + name + "/index.html", name + " story"}})));
    sites.push_back(site(name, "cnn", urls.back(), {{"interval", 2}}));
  }
  const auto config = cluster_config(splash, sites, {});
  const auto started = std::chrono::steady_clock::now();
  // Started one after the other, as a deploy does: the first is alone long enough to claim every
  // site, and then has to give its share away.
  std::vector<std::unique_ptr<newsdesk_process>> nds;
  for (int i = 0; i < 3; ++i)
    nds.push_back(instance(config, store));
  const auto rendered = [&] {
    std::vector<std::size_t> out;
    for (auto& nd : nds)
      out.push_back(count(nd->process->output(), "msg=\"site refreshed\""));
    return out;
  };
  const auto renders_of_every_site_reach = [&](std::size_t n) {
    return std::all_of(urls.begin(), urls.end(),
                       [&](const std::string& url) { return splash.renders(url) >= n; });
  };

  // Warm-up: the shares settle within a few intervals of the last start.
  REQUIRE(eventually([&] { return renders_of_every_site_reach(4); }, 60s));
  const auto before = rendered();
  std::size_t window_start = 0;
  for (const auto& url : urls)
    window_start = std::max(window_start, splash.renders(url));
  REQUIRE(eventually([&] { return renders_of_every_site_reach(window_start + 6); }, 90s));
  const auto after = rendered();
  std::size_t total = 0;
  std::vector<std::size_t> window;
  for (std::size_t i = 0; i < nds.size(); ++i) {
    window.push_back(after[i] - before[i]);
    total += window.back();
  }
  INFO("renders per instance in the window: " << window[0] << ", " << window[1] << ", "
                                              << window[2]);
  REQUIRE(total >= 30); // six rounds of six sites, less the lines of renders still being written
  // Even shares are a third each; an instance doing none, or all, is the failure this guards.
  for (auto n : window)
    CHECK(n * 100 >= total * 15);

  // Sharing never renders a site twice in an interval: one instance alone renders each site at
  // start and then once per 2 s (plus render time, and one of slack).
  const auto seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const auto most = static_cast<std::size_t>(seconds / 2.0) + 2;
  for (const auto& url : urls) {
    INFO(url << " rendered " << splash.renders(url) << " times in " << seconds << " s");
    CHECK(splash.renders(url) <= most);
  }
}

TEST_CASE("a killed lease holder's site is taken over within the lease time") {
  auto& pg = postgres_cluster::shared();
  const auto store = pg.fresh_database();
  splash_standin splash;
  // The first render hangs: the instance that claims it holds the lease while it dies.
  splash.set("https://a.cnn.com/", standin_page::hang());
  auto config =
      cluster_config(splash, {site("a", "cnn", "https://a.cnn.com/", {{"interval", 600}})},
                     {{"lease", 3}, {"retries", 0}});
  config["log_level"] = "debug"; // the refused claim's line
  auto holder = instance(config, store);
  REQUIRE(eventually([&] { return splash.renders("https://a.cnn.com/") == 1; }, 10s));
  auto other = instance(config, store);
  // The second instance tries its claim and is told the site is leased: it does not render.
  REQUIRE_MESSAGE(other->process->wait_for_log("msg=\"claim not granted\" site=a status=leased"),
                  other->log());
  CHECK(splash.renders("https://a.cnn.com/") == 1);

  splash.set("https://a.cnn.com/", standin_page::page(cnn_page({{"/a/index.html", "Taken over"}})));
  const auto killed = std::chrono::steady_clock::now();
  REQUIRE(holder->process->stop(SIGKILL) == 128 + SIGKILL);
  REQUIRE(eventually([&] { return splash.renders("https://a.cnn.com/") == 2; }, 10s));
  const auto took = std::chrono::steady_clock::now() - killed;
  INFO("taken over after " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                           << " ms");
  CHECK(took <= 3s + 1s);
  CHECK_MESSAGE(eventually([&] { return titles(other->port).count("Taken over") == 1; }, 5s),
                other->log());
}

TEST_CASE("an instance whose LISTEN connection is cut reconnects and misses nothing") {
  auto& pg = postgres_cluster::shared();
  const auto store = pg.fresh_database();
  splash_standin splash;
  splash.set("https://a.cnn.com/",
             standin_page::page(cnn_page({{"/a1/index.html", "First story"}})));
  const auto config =
      cluster_config(splash, {site("a", "cnn", "https://a.cnn.com/", {{"interval", 600}})}, {});
  auto a = instance(config, store);
  auto b = instance(config, store);
  REQUIRE(eventually([&] { return titles(b->port).count("First story") == 1; }));
  sse_client live(b->port);
  REQUIRE(live.wait_for("retry: 3000"));
  REQUIRE(b->process->wait_for_log("msg=\"change listener: listening\""));

  // Cut b's listener, then commit a change at once, while b is away.
  const auto cut = pg.exec(store.substr(store.rfind('/') + 1),
                           "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE "
                           "application_name = 'newsdesk-listen-" +
                               std::to_string(b->process->pid()) + "'");
  REQUIRE(cut == "1");
  splash.set("https://a.cnn.com/",
             standin_page::page(cnn_page(
                 {{"/a1/index.html", "First story"}, {"/a2/index.html", "Second story"}})));
  REQUIRE(send_request(a->port, "POST", "/api/refresh").status == 202);
  // On a loaded machine a's refresh of the start may still hold the site (the request is then
  // "already running" and refreshes nothing): asked again until a has the change.
  REQUIRE(eventually(
      [&] {
        if (titles(a->port).count("Second story") == 1)
          return true;
        std::this_thread::sleep_for(200ms);
        (void)send_request(a->port, "POST", "/api/refresh");
        return false;
      },
      15s));

  CHECK(live.wait_for("Second story", 10s));
  CHECK(occurrences(live.received, "\"title\":\"Second story\"") == 1);
  // Live events go out first; the page follows when its views are rebuilt.
  CHECK(eventually([&] { return titles(b->port).count("Second story") == 1; }, 5s));
  CHECK(b->process->wait_for_log("msg=\"change listener: connection lost\"", 1s));
  CHECK(b->process->wait_for_log("recovered=true", 5s));
  // What the server said as it cut the connection is a log line (logged before the loss was),
  // not libpq's raw stderr.
  CHECK(b->process->output().find(
            "level=warn msg=\"postgres notice\" connection=listener severity=FATAL") !=
        std::string::npos);
  CHECK(b->log().find("FATAL:  terminating connection") == std::string::npos);
}

TEST_CASE("an SSE client moving from one instance to another with Last-Event-ID gets what it "
          "missed, once each") {
  auto& pg = postgres_cluster::shared();
  const auto store = pg.fresh_database();
  splash_standin splash;
  splash.set("https://a.cnn.com/", standin_page::page(cnn_page({{"/1/index.html", "One story"}})));
  const auto config =
      cluster_config(splash, {site("a", "cnn", "https://a.cnn.com/", {{"interval", 600}})}, {});
  auto a = instance(config, store);
  auto b = instance(config, store);
  REQUIRE(eventually([&] { return titles(a->port).count("One story") == 1; }));

  std::string resume_from;
  {
    sse_client on_a(a->port);
    REQUIRE(on_a.wait_for("retry: 3000"));
    splash.set("https://a.cnn.com/",
               standin_page::page(
                   cnn_page({{"/1/index.html", "One story"}, {"/2/index.html", "Two story"}})));
    REQUIRE(send_request(a->port, "POST", "/api/refresh").status == 202);
    REQUIRE(on_a.wait_for("\"title\":\"Two story\""));
    REQUIRE(on_a.wait_for("\n\n"));
    resume_from = last_event_id(on_a.received);
  } // the browser loses its connection to a

  // While it is away, two more headlines arrive.
  splash.set("https://a.cnn.com/", standin_page::page(cnn_page({{"/1/index.html", "One story"},
                                                                {"/2/index.html", "Two story"},
                                                                {"/3/index.html", "Three story"},
                                                                {"/4/index.html", "Four story"}})));
  // Asked again until a has them: the request can meet the refresh of "Two story" still finishing,
  // and a refresh already running is not repeated.
  REQUIRE(eventually(
      [&] {
        if (titles(a->port).count("Four story") == 1)
          return true;
        std::this_thread::sleep_for(200ms);
        (void)send_request(a->port, "POST", "/api/refresh");
        return false;
      },
      15s));
  REQUIRE(eventually([&] { return titles(b->port).count("Four story") == 1; }));

  sse_client on_b(b->port, "/events", resume_from);
  REQUIRE(on_b.wait_for("\"title\":\"Four story\""));
  // And one more, live, after the replay.
  splash.set("https://a.cnn.com/", standin_page::page(cnn_page({{"/1/index.html", "One story"},
                                                                {"/2/index.html", "Two story"},
                                                                {"/3/index.html", "Three story"},
                                                                {"/4/index.html", "Four story"},
                                                                {"/5/index.html", "Five story"}})));
  REQUIRE(send_request(b->port, "POST", "/api/refresh").status == 202);
  REQUIRE(on_b.wait_for("\"title\":\"Five story\""));
  std::this_thread::sleep_for(300ms);
  on_b.wait_for("never", 200ms);
  CHECK(occurrences(on_b.received, "\"title\":\"One story\"") == 0);
  CHECK(occurrences(on_b.received, "\"title\":\"Two story\"") == 0);
  CHECK(occurrences(on_b.received, "\"title\":\"Three story\"") == 1);
  CHECK(occurrences(on_b.received, "\"title\":\"Four story\"") == 1);
  CHECK(occurrences(on_b.received, "\"title\":\"Five story\"") == 1);

  // An id from another store starts the client over with what is current.
  sse_client stranger(b->port, "/events", "0123456789abcdef:5");
  CHECK(stranger.wait_for("event: reset"));
  CHECK(stranger.wait_for("\"title\":\"Five story\""));
}

// Several newsdesk instances on one PostgreSQL store: real binaries, a real PostgreSQL started
// by the test (tests/support/postgres_cluster.hpp), the Splash stand-in counting renders.
#include "tests/support/harness.hpp"
#include "tests/support/http_get.hpp"
#include "tests/support/postgres_cluster.hpp"
#include "tests/support/sse_client.hpp"

#include <doctest/doctest.h>

#include <signal.h>

#include <memory>
#include <set>
#include <thread>

using namespace newsdesk::testing;
using namespace std::chrono_literals;

namespace {

json cluster_config(const splash_standin& splash, json sites, json refresh) {
  json r = {{"jitter", 0}, {"manual_min_interval", 0}, {"cold_start_wait", 5}};
  if (refresh.is_object())
    r.update(refresh);
  return json{{"splash_url", splash.base_url()}, {"refresh", r}, {"sites", std::move(sites)}};
}

std::unique_ptr<newsdesk_process> instance(const json& config, const std::string& store) {
  auto nd = std::make_unique<newsdesk_process>(config, std::vector<std::string>{"--store", store});
  REQUIRE_MESSAGE(nd->port != 0, nd->log());
  return nd;
}

json news_json(unsigned short port) {
  auto answer = http_get(port, "/news.json");
  REQUIRE_MESSAGE(answer.status == 200, answer.body);
  return json::parse(answer.body);
}

std::set<std::string> titles(unsigned short port) {
  std::set<std::string> out;
  const auto news = news_json(port); // kept: a range-for over a temporary's member dangles
  for (const auto& h : news.at("headlines"))
    out.insert(h.at("title").get<std::string>());
  return out;
}

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
  for (auto& nd : nds)
    CHECK(titles(nd->port) == std::set<std::string>{"A one", "B one"});

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

TEST_CASE("a killed lease holder's site is taken over within the lease time") {
  auto& pg = postgres_cluster::shared();
  const auto store = pg.fresh_database();
  splash_standin splash;
  // The first render hangs: the instance that claims it holds the lease while it dies.
  splash.set("https://a.cnn.com/", standin_page::hang());
  const auto config =
      cluster_config(splash, {site("a", "cnn", "https://a.cnn.com/", {{"interval", 600}})},
                     {{"lease", 3}, {"retries", 0}});
  auto holder = instance(config, store);
  REQUIRE(eventually([&] { return splash.renders("https://a.cnn.com/") == 1; }, 10s));
  auto other = instance(config, store);
  std::this_thread::sleep_for(1s); // the second instance tried its claim and was told to wait
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

TEST_CASE("with PostgreSQL down an instance keeps serving, says it is not ready, and catches "
          "up when the database returns") {
  postgres_cluster pg; // its own: this test stops it
  const auto store = pg.fresh_database();
  splash_standin splash;
  splash.set("https://a.cnn.com/",
             standin_page::page(cnn_page({{"/1/index.html", "Before story"}})));
  const auto config = cluster_config(
      splash, {site("a", "cnn", "https://a.cnn.com/", {{"interval", 1}})}, {{"retries", 0}});
  auto a = instance(config, store);
  auto b = instance(config, store);
  REQUIRE(eventually([&] { return titles(b->port).count("Before story") == 1; }));
  REQUIRE(eventually([&] { return http_get(b->port, "/readyz").status == 200; }));

  pg.stop();
  CHECK(eventually([&] { return http_get(b->port, "/readyz").status == 503; }, 10s));
  auto page = http_get(b->port, "/news");
  CHECK(page.status == 200);
  CHECK(page.body.find("Before story") != std::string::npos);
  CHECK(eventually([&] {
    return news_json(a->port).value("notice", "").find("database") != std::string::npos;
  }));

  splash.set("https://a.cnn.com/",
             standin_page::page(
                 cnn_page({{"/1/index.html", "Before story"}, {"/2/index.html", "After story"}})));
  pg.start();
  CHECK(eventually([&] { return titles(b->port).count("After story") == 1; }, 15s));
  CHECK(eventually([&] { return titles(a->port).count("After story") == 1; }, 5s));
  CHECK(eventually([&] { return http_get(b->port, "/readyz").status == 200; }, 10s));
  CHECK(news_json(a->port).value("notice", "").empty());
}

TEST_CASE("an unreachable PostgreSQL at start stops newsdesk with a message naming it") {
  auto port = unused_port();
  newsdesk_process nd(
      json{{"sites", json::array()}},
      {"--store", "postgresql://nobody:secret@127.0.0.1:" + std::to_string(port) + "/newsdesk"});
  CHECK(nd.port == 0);
  CHECK(nd.process->wait_exit() == 1);
  auto log = nd.log();
  CHECK(log.find("127.0.0.1:" + std::to_string(port)) != std::string::npos);
  CHECK(log.find("secret") == std::string::npos); // the password is never printed
}

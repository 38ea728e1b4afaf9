// /metrics, /readyz, the logs and the threads, against the real binary.
#include "tests/support/harness.hpp"
#include "tests/support/http_get.hpp"

#include <doctest/doctest.h>

#include <sched.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace newsdesk::testing;
using namespace std::chrono_literals;

namespace {
// The value of one sample line ("name{labels} value"), or -1 when absent.
double metric(const std::string& text, const std::string& series) {
  auto at = text.find("\n" + series + " ");
  if (at == std::string::npos)
    return -1;
  return std::stod(text.substr(at + series.size() + 2));
}
} // namespace

TEST_CASE("/metrics counts requests, refreshes, site state and the broker in Prometheus format") {
  splash_standin splash;
  splash.set("https://a.cnn.com/", standin_page::page(cnn_page({{"/a/index.html", "A story"},
                                                                {"/b/index.html", "B story"}})));
  splash.set("https://down.cnn.com/", standin_page::error(502));
  newsdesk_process nd(json{
      {"splash_url", splash.base_url()},
      {"refresh", {{"retries", 0}}},
      {"sites",
       {site("a", "cnn", "https://a.cnn.com/"), site("down", "cnn", "https://down.cnn.com/")}}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  for (int i = 0; i < 3; ++i)
    REQUIRE(http_get(nd.port, "/news").status == 200);
  http_get(nd.port, "/nope");
  // A refresh is counted once the page shows it: the page may answer a moment before.
  REQUIRE(eventually([&] {
    auto m = http_get(nd.port, "/metrics").body;
    return m.find("newsdesk_fetch_errors_total{site=\"down\"") != std::string::npos &&
           m.find("newsdesk_fetch_duration_seconds_count{site=\"a\"}") != std::string::npos;
  }));

  auto answer = http_get(nd.port, "/metrics");
  REQUIRE(answer.status == 200);
  CHECK(answer.header("Content-Type") == "text/plain; version=0.0.4; charset=utf-8");
  const auto& m = answer.body;
  CHECK(metric(m, "newsdesk_http_requests_total{route=\"/news\",status=\"200\"}") == 3);
  CHECK(metric(m, "newsdesk_http_requests_total{route=\"other\",status=\"404\"}") == 1);
  CHECK(metric(m, "newsdesk_http_request_duration_seconds_count") >= 4);
  CHECK(metric(m, "newsdesk_http_request_duration_seconds_bucket{le=\"+Inf\"}") ==
        metric(m, "newsdesk_http_request_duration_seconds_count"));
  CHECK(metric(m, "newsdesk_fetch_duration_seconds_count{site=\"a\"}") == 1);
  CHECK(metric(m, "newsdesk_fetch_errors_total{site=\"down\",kind=\"site_unreachable\"}") == 1);
  CHECK(metric(m, "newsdesk_site_headlines{site=\"a\"}") == 2);
  CHECK(metric(m, "newsdesk_site_up{site=\"a\"}") == 1);
  CHECK(metric(m, "newsdesk_site_up{site=\"down\"}") == 0);
  CHECK(metric(m, "newsdesk_site_last_success_timestamp_seconds{site=\"a\"}") > 1.7e9);
  CHECK(metric(m, "newsdesk_sse_clients") == 0);
  // /events takes typed headlines from the news service, not a broker subscription.
  CHECK(metric(m, "newsdesk_broker_subscribers") == 0);
  CHECK(metric(m, "newsdesk_broker_drops_total{reason=\"queue_full\"}") == 0);
  CHECK(m.find("# TYPE newsdesk_http_request_duration_seconds histogram") != std::string::npos);

  // The access log has a line per request, on stdout (written before the response, but read
  // from the pipe by another thread: wait for it rather than look once).
  CHECK(nd.process->wait_for_log("msg=access method=GET path=\"/nope\" status=404"));
}

TEST_CASE("/readyz says why it is not ready until a site has refreshed") {
  splash_standin splash;
  splash.set("https://a.cnn.com/", standin_page::hang());
  newsdesk_process nd(
      json{{"splash_url", splash.base_url()},
           {"refresh", {{"retries", 0}, {"manual_min_interval", 0}}},
           {"sites", {site("a", "cnn", "https://a.cnn.com/", {{"timeout", 2}, {"wait", 0}})}}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  auto not_ready = send_request(nd.port, "GET", "/readyz");
  CHECK(not_ready.status == 503);
  auto body = json::parse(not_ready.body);
  CHECK(body.at("ready") == false);
  CHECK(body.at("reasons")[0] == "no site has refreshed within its interval yet");
  CHECK(http_get(nd.port, "/healthz").status == 200); // alive all the same

  splash.set("https://a.cnn.com/", standin_page::page(cnn_page({{"/a/index.html", "A story"}})));
  // Until the hanging render times out (2 s + grace, later on a slow sanitized build) a manual
  // refresh only finds it running; ask until one starts.
  REQUIRE(eventually(
      [&] {
        auto refresh = send_request(nd.port, "POST", "/api/refresh");
        return refresh.status == 202 &&
               json::parse(refresh.body).at("started") == json::array({"a"});
      },
      20s));
  CHECK(eventually([&] { return http_get(nd.port, "/readyz").status == 200; }));
}

TEST_CASE("a restarted instance is ready only once its page is built: the first /news after "
          "/readyz says 200 is answered from built bytes") {
  splash_standin splash;
  json sites = json::array();
  for (int s = 0; s < 20; ++s) {
    const auto name = "s" + std::to_string(s);
    std::vector<std::pair<std::string, std::string>> stories;
    for (int i = 0; i < 100; ++i)
      stories.push_back({"/" + name + "/" + std::to_string(i) + "/index.html",
                         "Story " + std::to_string(i) + " of " + name + " about the vote"});
    splash.set("https://" + name + ".cnn.com/", standin_page::page(cnn_page(stories)));
    sites.push_back(site(name, "cnn", "https://" + name + ".cnn.com/", {{"interval", 3600}}));
  }
  const json config{{"splash_url", splash.base_url()}, {"sites", sites}};
  temp_dir kept;
  const auto store = (kept.path / "store.db").string();
  {
    newsdesk_process first(config, {"--store", store});
    REQUIRE_MESSAGE(first.port != 0, first.log());
    REQUIRE(eventually(
        [&] { return news_json(first.port, "?limit=5000").at("headlines").size() == 2000; }, 60s));
  }
  // Started again on what it stored: its snapshot is ready at once, its page a build later.
  newsdesk_process again(config, {"--store", store});
  REQUIRE_MESSAGE(again.port != 0, again.log());
  http_answer ready;
  REQUIRE(eventually(
      [&] {
        ready = http_get(again.port, "/readyz");
        return ready.status == 200;
      },
      30s));
  // Prebuild rounds count misses of their own whenever the snapshot moves, so the request is
  // told by the hits: one answered from built bytes counts one, one that waited counts none.
  const auto hits = scrape_metric(again.port, "newsdesk_representation_hits_total");
  REQUIRE(hits);
  const auto page = http_get(again.port, "/news");
  CHECK(page.status == 200);
  MESSAGE("first /news after /readyz 200: " << page.elapsed.count() << " ms");
  // Nobody waited for a build: the page the balancer's first request gets is already made.
  CHECK(scrape_metric(again.port, "newsdesk_representation_hits_total") == *hits + 1);
}

TEST_CASE("metrics can be turned off") {
  newsdesk_process nd(json{
      {"renderer", "direct"}, {"sites", json::array()}, {"metrics", false}, {"access_log", false}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  CHECK(http_get(nd.port, "/metrics").status == 404);
  CHECK(nd.log().find("msg=access") == std::string::npos);
}

TEST_CASE("each thread is named for its role, and the background ones run below serving") {
  newsdesk_process nd(json{
      {"renderer", "direct"}, {"sites", json::array()}, {"threads", 2}, {"event_loops", true}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  struct thread_seen {
    int nice = 0;
    int policy = 0;
    bool main = false;
  };
  // Each thread names itself as it starts: read /proc until all have.
  std::multimap<std::string, thread_seen> threads;
  const auto task_dir = std::filesystem::path("/proc") / std::to_string(nd.process->pid()) / "task";
  const auto read_threads = [&] {
    threads.clear();
    for (const auto& task : std::filesystem::directory_iterator(task_dir)) {
      auto name = read_file((task.path() / "comm").string());
      name.erase(name.find_last_not_of('\n') + 1);
      // /proc/<pid>/task/<tid>/stat: after the command's closing parenthesis come the fields
      // from the state (field 3) on: nice is field 19, the policy field 41.
      const auto stat = read_file((task.path() / "stat").string());
      const auto end_of_name = stat.rfind(')');
      if (end_of_name == std::string::npos)
        continue; // the thread ended meanwhile
      std::istringstream fields(stat.substr(end_of_name + 1));
      std::vector<std::string> f{std::istream_iterator<std::string>(fields), {}};
      if (f.size() < 39)
        continue;
      const bool main = task.path().filename() == std::to_string(nd.process->pid());
      threads.emplace(name, thread_seen{std::stoi(f[19 - 3]), std::stoi(f[41 - 3]), main});
    }
    return threads.count("nd-net") == 1 && threads.count("nd-log") == 1 &&
           threads.count("nd-connections") == 2 && threads.count("nd-filtered") == 2;
  };
  CHECK(http_get(nd.port, "/healthz").status == 200); // something logged: the writer started
  CHECK(eventually(read_threads, 5s));
  std::string names;
  for (const auto& [name, seen] : threads)
    names += name + " ";
  INFO("threads: " << names);
  // The main thread keeps the program's name (pidof, pkill) and is one of the network threads.
  // (A sanitizer's own thread inherits it too.)
  const auto main =
      std::find_if(threads.begin(), threads.end(), [](const auto& t) { return t.second.main; });
  REQUIRE(main != threads.end());
  CHECK(main->first == "newsdesk");
  CHECK(threads.count("nd-net") == 1);
  CHECK(threads.count("nd-connections") == 2);
  CHECK(threads.count("nd-worker") == 2);
  CHECK(threads.count("nd-parse") == 2);
  CHECK(threads.count("nd-build") == 1);
  CHECK(threads.count("nd-filtered") == 2);
  CHECK(threads.count("nd-log") == 1);
  // Nice values relative to the main thread's (the test itself may run niced).
  const int base = main->second.nice;
  constexpr int sched_other = 0, sched_idle = 5;
  for (const auto& [name, seen] : threads) {
    CAPTURE(name);
    if (name == "nd-parse" || name == "nd-build") {
      CHECK(seen.nice == std::max(base, 10));
      CHECK(seen.policy == sched_other);
    } else if (name == "nd-filtered") {
      CHECK(seen.policy == sched_idle);
    } else {
      CHECK(seen.nice == base);
      CHECK(seen.policy == sched_other);
    }
  }
}

TEST_CASE("with threads unset, one thread of each pool per core the process may run on") {
  // The child inherits the CPU affinity of the thread that starts it: one core (as taskset or a
  // container's cpuset gives), then the test's own again.
  cpu_set_t own;
  REQUIRE(::sched_getaffinity(0, sizeof own, &own) == 0);
  int first = 0;
  while (!CPU_ISSET(first, &own))
    ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  REQUIRE(::sched_setaffinity(0, sizeof one, &one) == 0);
  std::unique_ptr<newsdesk_process> pinned;
  try {
    pinned =
        std::make_unique<newsdesk_process>(json{{"renderer", "direct"}, {"sites", json::array()}});
  } catch (...) {
    ::sched_setaffinity(0, sizeof own, &own);
    throw;
  }
  REQUIRE(::sched_setaffinity(0, sizeof own, &own) == 0);
  REQUIRE_MESSAGE(pinned->port != 0, pinned->log());
  CHECK_MESSAGE(pinned->process->output().find(" threads=1\n") != std::string::npos, pinned->log());

  newsdesk_process unpinned(json{{"renderer", "direct"}, {"sites", json::array()}});
  REQUIRE_MESSAGE(unpinned.port != 0, unpinned.log());
  const auto cores = " threads=" + std::to_string(CPU_COUNT(&own)) + "\n";
  CHECK_MESSAGE(unpinned.process->output().find(cores) != std::string::npos, unpinned.log());
}

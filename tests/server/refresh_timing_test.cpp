// End-to-end tests of the refresh's timing (intervals, retry backoff, the cold start wait) and of
// a live-event reader that must keep up with a 5 MB burst: the real newsdesk binary, the Splash
// stand-in and real sockets. They run alone (RUN_SERIAL in CMakeLists.txt): their windows are
// seconds wide, and beside another suite on a busy 2-core machine the reader fell behind and was
// cut off as stalled. The rest of the refresh tests are in refresh_test.cpp.
#include "tests/support/harness.hpp"
#include "tests/support/http_get.hpp"
#include "tests/support/sse_client.hpp"

#include <doctest/doctest.h>

#include <signal.h>

#include <thread>

using namespace newsdesk::testing;
using namespace std::chrono_literals;

TEST_CASE("each site refreshes on its own interval") {
  splash_standin splash;
  splash.set("https://fast.cnn.com/",
             standin_page::page(cnn_page({{"/a/index.html", "Fast story"}})));
  splash.set("https://slow.cnn.com/",
             standin_page::page(cnn_page({{"/b/index.html", "Slow story"}})));
  newsdesk_process nd(json{{"splash_url", splash.base_url()},
                           {"refresh", {{"jitter", 0}}},
                           {"sites",
                            {site("fast", "cnn", "https://fast.cnn.com/", {{"interval", 1}}),
                             site("slow", "cnn", "https://slow.cnn.com/", {{"interval", 60}})}}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  const auto started = std::chrono::steady_clock::now();
  // The next refresh waits an interval after the last one ended, so a slow (sanitized) build
  // fits fewer into a fixed time: wait for the third, watch for 3.5 s at least, and bound the
  // count by the time that took (one at start, at most one a second after).
  CHECK(eventually([&] { return splash.renders("https://fast.cnn.com/") >= 3; }, 30s));
  std::this_thread::sleep_until(started + 3500ms);
  const auto whole_seconds = (std::chrono::steady_clock::now() - started) / 1s;
  const auto fast = splash.renders("https://fast.cnn.com/");
  CHECK(fast >= 3);
  CHECK(fast <= static_cast<std::size_t>(whole_seconds) + 2); // 5 after 3.5 s
  CHECK(splash.renders("https://slow.cnn.com/") == 1);
}

TEST_CASE("transient failures are retried with backoff a bounded number of times") {
  splash_standin splash;
  splash.set("https://down.cnn.com/", standin_page::error(502));
  splash.set("https://bad.cnn.com/", standin_page::error(400));
  newsdesk_process nd(json{{"splash_url", splash.base_url()},
                           {"refresh", {{"retries", 3}, {"retry_base", 0.1}, {"retry_max", 0.4}}},
                           {"sites",
                            {site("down", "cnn", "https://down.cnn.com/", {{"interval", 60}}),
                             site("bad", "cnn", "https://bad.cnn.com/", {{"interval", 60}})}}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  // 1 try + 3 retries, each waiting at most 0.1, 0.2, 0.4 s.
  CHECK(eventually([&] { return splash.renders("https://down.cnn.com/") == 4; }, 3s));
  // The last try's failure is recorded after the stand-in counted it, and the JSON follows once
  // rebuilt.
  json down;
  CHECK(eventually([&] {
    down = *site_of(news_json(nd.port), "down");
    return !down.at("error").is_null();
  }));
  CHECK(down.at("ok") == false);
  CHECK(down.at("error") == "Splash could not load the page: Connection refused");
  // Once the failure is recorded, the retries are over: another would come within retry_max
  // (0.4 s); none comes in twice that and more.
  std::this_thread::sleep_for(1s);
  CHECK(splash.renders("https://down.cnn.com/") == 4); // it waits for the next interval
  CHECK(splash.renders("https://bad.cnn.com/") == 1);  // a refused request is not retried
}

TEST_CASE("during a cold start each view waits cold_start_wait from its own arrival; a shutdown "
          "answers the ones waiting") {
  splash_standin splash;
  splash.set("https://a.cnn.com/", standin_page::hang()); // Splash never answers
  newsdesk_process nd(json{{"splash_url", splash.base_url()},
                           {"timeout", 60},
                           {"refresh", {{"cold_start_wait", 1.5}, {"retries", 0}}},
                           {"sites", {site("a", "cnn", "https://a.cnn.com/")}}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  auto first = http_get(nd.port, "/news.json");
  CHECK(first.status == 200);
  CHECK(first.elapsed < 3s);
  // Arriving later, while the render still hangs, it still waits only its own 1.5 s.
  std::this_thread::sleep_for(2s);
  auto later = http_get(nd.port, "/news.json");
  CHECK(later.status == 200);
  CHECK(later.elapsed >= 1s);
  CHECK(later.elapsed < 3s);

  // A view waiting when SIGTERM comes gets an answer, not a closed connection.
  std::thread waiting([&] {
    std::this_thread::sleep_for(300ms);
    ::kill(nd.process->pid(), SIGTERM);
  });
  auto during = http_get(nd.port, "/news.json");
  waiting.join();
  CHECK(during.status == 200);
  CHECK(during.elapsed < 1400ms);
}

TEST_CASE("a stalled /events client is cut off while others get every event") {
  // Twenty sites whose second refresh finds 450 new headlines each, with long titles and links:
  // about 9 MB of events, 450 KB a site.
  splash_standin splash;
  const std::vector<std::string> names{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j",
                                       "k", "l", "m", "n", "o", "p", "q", "r", "s", "t"};
  json sites = json::array();
  for (const auto& n : names) {
    splash.set("https://" + n + ".cnn.com/",
               standin_page::page(cnn_page({{"/" + n + "/first/index.html", "First story"}})));
    sites.push_back(site(n, "cnn", "https://" + n + ".cnn.com/"));
  }
  newsdesk_process nd(json{{"splash_url", splash.base_url()}, {"sites", sites}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  REQUIRE(
      eventually([&] { return news_json(nd.port).at("headlines").size() == names.size(); }, 10s));

  // The stalled client never reads, and a small receive buffer stops the kernel from absorbing
  // megabytes on its behalf (receive buffers autotune up to 32 MB here).
  sse_client stalled(nd.port, "/events", {}, 8 * 1024);
  sse_client reader(nd.port);
  REQUIRE(reader.wait_for("retry: 3000"));
  REQUIRE(stalled.wait_for("retry: 3000"));
  auto sse_clients = [&] {
    auto m = http_get(nd.port, "/metrics").body;
    auto at = m.find("\nnewsdesk_sse_clients ");
    return at == std::string::npos ? -1 : std::stoi(m.substr(at + 22));
  };
  REQUIRE(sse_clients() == 2);

  // More than the server's send buffer (4 MB) and the client's 256 KiB backlog together, one
  // site's refresh after another, as a reader that keeps up takes them.
  // A title past 300 characters reads as a summary, so much of the bulk is in the links.
  const std::string title_padding(200, 'x');
  const std::string link_padding(700, 'y');
  for (const auto& n : names) {
    std::vector<std::pair<std::string, std::string>> stories;
    for (int i = 0; i < 450; ++i)
      stories.push_back({"/" + n + "/" + std::to_string(i) + "/" + link_padding + "/index.html",
                         "Item " + n + std::to_string(i) + " " + title_padding});
    splash.set("https://" + n + ".cnn.com/", standin_page::page(cnn_page(stories)));
    REQUIRE(send_request(nd.port, "POST", "/api/refresh?site=" + n).status == 202);
    CHECK(reader.wait_for("Item " + n + "449 ", 30s));
  }
  // The stalled client was cut off; the reader is still connected.
  CHECK(eventually([&] { return sse_clients() == 1; }, 5s));
}

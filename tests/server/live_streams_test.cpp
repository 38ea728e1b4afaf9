// /events against hostile and crowded clients (issue 46, item 4; issue 47, readers): a storm of
// reconnects that each start over, a network of addresses holding streams, and refusals counted
// as the 503s they are. Against the real binary.
#include "tests/support/harness.hpp"
#include "tests/support/http_get.hpp"
#include "tests/support/splash_standin.hpp"
#include "tests/support/sse_client.hpp"

#include <doctest/doctest.h>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

using namespace newsdesk::testing;
using namespace std::chrono_literals;

namespace {

long rss_kib(int pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stol(line.substr(6));
  return 0;
}

// Opens a stream from `from` (any loopback address) and reads its answer's status line: 200
// for a stream, 503 for a refusal. The socket stays open (the stream held) in `fd`.
int open_stream(unsigned short port, const char* from, int& fd,
                const std::string& last_event_id = {}) {
  fd = connect_loopback(port, 0, from);
  if (fd < 0)
    return 0;
  std::string request = "GET /events HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n";
  if (!last_event_id.empty())
    request += "Last-Event-ID: " + last_event_id + "\r\n";
  request += "\r\n";
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string head;
  char buf[4096];
  while (head.find("\r\n") == std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 10'000) <= 0)
      return 0;
    const auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0)
      return 0;
    head.append(buf, static_cast<std::size_t>(n));
  }
  return std::stoi(head.substr(9, 3));
}

// Twenty sites of a hundred headlines each: a reset carries 2,000 of them (about 700 KB).
json crowded_config(splash_standin& splash) {
  json sites = json::array();
  for (int s = 0; s < 20; ++s) {
    const auto name = "s" + std::to_string(s);
    std::vector<std::pair<std::string, std::string>> stories;
    for (int i = 0; i < 100; ++i)
      stories.push_back({"/" + name + "/" + std::to_string(i) + "/index.html",
                         "Story " + std::to_string(i) + " of site " + name +
                             " on the harbour bridge vote and what the council said of it"});
    const auto url = "https://" + name + ".cnn.com/";
    splash.set(url, standin_page::page(cnn_page(stories)));
    sites.push_back(site(name, "cnn", url, {{"interval", 3600}}));
  }
  // As behind a proxy: every reader has one address, so the per-address limits are off.
  return json{{"splash_url", splash.base_url()},
              {"access_log", false},
              {"http", {{"max_streams_per_ip", 0}, {"max_streams_per_range", 0}}},
              {"sites", sites}};
}

} // namespace

TEST_CASE("a storm of /events reconnects that each start over shares one reset and ends with "
          "the memory it began with") {
  splash_standin splash;
  newsdesk_process nd(crowded_config(splash));
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  REQUIRE(eventually(
      [&] { return news_json(nd.port, "?limit=5000").at("headlines").size() == 2000; }, 60s));
  // Warm: one reset made, the views built.
  {
    sse_client warm(nd.port, "/events", "another-store:5");
    REQUIRE(warm.wait_for("event: reset"));
  }
  std::this_thread::sleep_for(1s);
  const auto before = rss_kib(nd.process->pid());

  // Waves of 200 streams at once, each starting over (an id of another store), held while the
  // reset reaches them, then all dropped: the reconnects of a page's readers after a restart.
  const auto storm_end = std::chrono::steady_clock::now() + 20s;
  std::size_t opened = 0, reset = 0;
  long peak = before;
  while (std::chrono::steady_clock::now() < storm_end) {
    std::vector<int> fds;
    for (int i = 0; i < 200; ++i) {
      int fd = -1;
      if (open_stream(nd.port, nullptr, fd, "another-store:" + std::to_string(i)) == 200)
        ++opened;
      fds.push_back(fd);
    }
    // Each reads a little of its reset, not all: the rest waits on the server's side.
    for (int fd : fds) {
      char buf[16384];
      pollfd p{fd, POLLIN, 0};
      if (fd >= 0 && ::poll(&p, 1, 2000) > 0 && ::recv(fd, buf, sizeof buf, 0) > 0)
        ++reset;
    }
    peak = std::max(peak, rss_kib(nd.process->pid()));
    for (int fd : fds)
      if (fd >= 0)
        ::close(fd);
  }
  MESSAGE("RSS " << before / 1024 << " MB before, peak " << peak / 1024 << " MB, " << opened
                 << " streams opened");
  CHECK(opened >= 400);
  CHECK(reset >= opened * 9 / 10);
  // The streams are gone at once (their clients left), and their memory with them: within a
  // heartbeat (15 s), when many ended.
  CHECK(eventually([&] { return scrape_metric(nd.port, "newsdesk_sse_clients") == 0; }, 5s));
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // A sanitizer's shadow memory and quarantine say nothing of the program's own use.
#else
  CHECK_MESSAGE(eventually([&] { return rss_kib(nd.process->pid()) < before + 50 * 1024; }, 20s),
                "RSS " << rss_kib(nd.process->pid()) / 1024 << " MB");
  // Shared, not copied: 200 resets of 700 KB held at once would be 140 MB.
  CHECK(peak < before + 100 * 1024);
#endif
}

TEST_CASE("a few dozen addresses of one network cannot fill the streams' budget, and refused "
          "streams are counted as the 503s they are") {
  splash_standin splash;
  splash.set("https://a.cnn.com/", standin_page::page(cnn_page({{"/1/index.html", "One story"}})));
  // 100 streams at most, 16 per address (the default), 64 per /24.
  newsdesk_process nd(json{{"splash_url", splash.base_url()},
                           {"http", {{"max_streams", 100}, {"max_streams_per_range", 64}}},
                           {"sites", {site("a", "cnn", "https://a.cnn.com/")}}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  REQUIRE(eventually([&] { return news_json(nd.port).at("headlines").size() == 1; }));

  // Ten addresses of 127.0.0.0/24, sixteen streams each, every one held.
  std::vector<int> held;
  int accepted = 0, refused = 0;
  for (int a = 10; a < 20; ++a) {
    const auto from = "127.0.0." + std::to_string(a);
    for (int i = 0; i < 16; ++i) {
      int fd = -1;
      const int status = open_stream(nd.port, from.c_str(), fd);
      accepted += status == 200;
      refused += status == 503;
      held.push_back(fd);
    }
  }
  CHECK(accepted == 64);
  CHECK(refused == 96);
  // A reader of another network still gets its stream.
  sse_client reader(nd.port, "/events", {}, 0, "127.0.1.7");
  CHECK(reader.wait_for("HTTP/1.1 200"));
  CHECK(reader.wait_for("retry: 3000"));

  // Refusals are 503s in /metrics, and not streams.
  CHECK(scrape_metric(nd.port, "newsdesk_http_requests_total{route=\"/events\",status=\"503\"}") ==
        96);
  CHECK(scrape_metric(nd.port, "newsdesk_http_requests_total{route=\"/events\",status=\"200\"}") ==
        65);
  CHECK(scrape_metric(nd.port, "newsdesk_sse_clients") == 65);
  for (int fd : held)
    if (fd >= 0)
      ::close(fd);
  CHECK(eventually([&] { return scrape_metric(nd.port, "newsdesk_sse_clients") == 1; }, 5s));
}

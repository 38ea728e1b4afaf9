// Graceful shutdown under load: the real binary, many keep-alive clients on raw sockets, SIGTERM
// in the middle. A client may be refused at connect once the listener is closed; a request that
// reached newsdesk must get a complete 200.
#include "tests/support/harness.hpp"
#include "tests/support/http_get.hpp"
#include "tests/support/splash_standin.hpp"

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

using namespace newsdesk::testing;
using namespace std::chrono_literals;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

using clock_type = std::chrono::steady_clock;

// A connected socket, or fd -1 with the connect error.
struct socket_fd {
  int fd = -1;
  int error = 0;
  explicit socket_fd(unsigned short port) {
    fd = connect_loopback(port);
    if (fd < 0)
      error = errno;
  }
  ~socket_fd() {
    if (fd >= 0)
      ::close(fd);
  }
  socket_fd(const socket_fd&) = delete;
  socket_fd& operator=(const socket_fd&) = delete;
};

bool write_all(int fd, const std::string& bytes) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    auto n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0)
      return false;
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

struct response {
  bool complete = false;
  int status = 0;
  bool close = false;             // "Connection: close"
  std::size_t bytes_received = 0; // of this response, complete or not
  std::string error;              // why it is incomplete
};

std::string lower(std::string s) {
  for (auto& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Reads one response (headers, then a Content-Length body) within `timeout`.
response read_response(int fd, std::chrono::milliseconds timeout) {
  response r;
  std::string data;
  auto deadline = clock_type::now() + timeout;
  std::size_t header_end = std::string::npos, need = std::string::npos;
  for (;;) {
    if (header_end == std::string::npos &&
        (header_end = data.find("\r\n\r\n")) != std::string::npos) {
      auto head = lower(data.substr(0, header_end));
      r.status = std::atoi(data.c_str() + data.find(' ') + 1);
      r.close = head.find("\r\nconnection: close") != std::string::npos;
      auto at = head.find("\r\ncontent-length:");
      if (at == std::string::npos) {
        r.error = "no Content-Length";
        return r;
      }
      need = header_end + 4 + std::stoul(head.substr(at + 17));
    }
    if (need != std::string::npos && data.size() >= need) {
      r.complete = data.size() == need; // nothing may follow: one request in flight at a time
      if (!r.complete)
        r.error = "bytes after the response";
      return r;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) == 0) {
      r.error = "timed out";
      return r;
    }
    char chunk[16384];
    auto n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) {
      r.error = n == 0 ? "closed" : std::strerror(errno);
      return r;
    }
    data.append(chunk, static_cast<std::size_t>(n));
    r.bytes_received = data.size();
  }
}

struct tally {
  std::mutex mutex;
  std::atomic<int> ok{0};
  int ok_after_term = 0;
  int refused = 0;             // connect refused after SIGTERM: allowed
  int reset_before_accept = 0; // see below: allowed after SIGTERM
  int write_failed = 0;        // the request never reached newsdesk: allowed after SIGTERM
  std::vector<std::string> failures;

  void fail(std::string what) {
    std::lock_guard lock(mutex);
    failures.push_back(std::move(what));
  }
};

} // namespace

TEST_CASE("SIGTERM under load: every request newsdesk accepted gets a complete 200, then exit 0" *
          doctest::timeout(240)) {
  // Both ways connections can run: on strands shared by the network threads, or each on one
  // thread's event loop.
  bool event_loops = false;
  SUBCASE("connections on strands") {}
  SUBCASE("connections on event loops") {
    event_loops = true;
  }
  CAPTURE(event_loops);
  splash_standin splash;
  splash.set("https://one.cnn.com/",
             standin_page::page(cnn_page({{"/2015/11/17/world/a/index.html", "First story"},
                                          {"/2015/11/17/world/b/index.html", "Second story"}})));
  splash.set("https://two.cnn.com/",
             standin_page::page(cnn_page({{"/2015/11/17/us/c/index.html", "Story from two"}})));
  // A long read timeout: without closing idle connections at stop, shutdown would wait for the
  // 10 s deadline instead.
  newsdesk_process nd(json{
      {"splash_url", splash.base_url()},
      {"event_loops", event_loops},
      {"http", {{"read_timeout", 60}}},
      {"sites",
       {site("one", "cnn", "https://one.cnn.com/"), site("two", "cnn", "https://two.cnn.com/")}}});
  REQUIRE_MESSAGE(nd.port != 0, nd.log());
  REQUIRE(http_get(nd.port, "/news").status == 200); // the first refresh is done

  // A browser that loaded a page and keeps its connection open, idle.
  socket_fd idle(nd.port);
  REQUIRE(idle.fd >= 0);
  REQUIRE(write_all(idle.fd, "GET /healthz HTTP/1.1\r\nHost: newsdesk\r\n\r\n"));
  REQUIRE(read_response(idle.fd, 10s).status == 200);

  const std::vector<std::string> targets{"/news", "/static/news.css", "/news.json",
                                         "/static/news.js", "/healthz"};
  std::atomic<bool> term_sent{false}, finished{false};
  tally t;
  auto client = [&](unsigned id) {
    std::mt19937 random(id);
    unsigned n = 0;
    while (!finished) {
      socket_fd s(nd.port);
      if (s.fd < 0) {
        if (!term_sent || s.error != ECONNREFUSED)
          t.fail("connect failed before SIGTERM or not refused: " +
                 std::string(std::strerror(s.error)));
        else {
          std::lock_guard lock(t.mutex);
          ++t.refused;
        }
        return; // the listener is closed: done
      }
      // Some connections carry one request, some many.
      auto budget = std::uniform_int_distribution<int>(1, 30)(random);
      for (int i = 0; i < budget; ++i) {
        const auto& target = targets[n++ % targets.size()];
        bool last = i + 1 == budget;
        bool after_term = term_sent;
        if (!write_all(s.fd, "GET " + target + " HTTP/1.1\r\nHost: newsdesk\r\n" +
                                 (last ? "Connection: close\r\n" : "") + "\r\n")) {
          // Not written, so not a request newsdesk saw (it closed the connection first).
          if (after_term) {
            std::lock_guard lock(t.mutex);
            ++t.write_failed;
          } else
            t.fail("write failed before SIGTERM: " + target);
          break;
        }
        auto r = read_response(s.fd, 20s);
        if (r.complete && r.status == 200) {
          ++t.ok;
          if (after_term) {
            std::lock_guard lock(t.mutex);
            ++t.ok_after_term;
          }
          if (r.close)
            break;
          continue;
        }
        // The one exception: a connection the kernel completed but newsdesk never accepted
        // (the listen backlog, reset when the listener closes) looks like a connected socket
        // reset before any byte came back. newsdesk accepts its backlog before closing, so
        // this is a narrow race; it can only hit a connection's first request after SIGTERM.
        if (i == 0 && r.bytes_received == 0 && term_sent && r.error != "timed out") {
          std::lock_guard lock(t.mutex);
          ++t.reset_before_accept;
          break;
        }
        t.fail(target + " (request " + std::to_string(i + 1) + " on its connection, " +
               (after_term ? "after" : "before") + " SIGTERM): " +
               (r.complete ? "status " + std::to_string(r.status)
                           : r.error + " after " + std::to_string(r.bytes_received) + " bytes"));
        break;
      }
    }
  };

  std::vector<std::thread> clients;
  for (unsigned i = 0; i < 16; ++i)
    clients.emplace_back(client, i);

  // Load first: at least 300 answered requests (or 5 s on a slow, sanitized build).
  auto load_until = clock_type::now() + 5s;
  while (t.ok < 300 && clock_type::now() < load_until)
    std::this_thread::sleep_for(10ms);
  const int ok_before = t.ok;
  const auto wal = nd.dir.path / "store.db-wal";
  CHECK_MESSAGE(fs::exists(wal), "the store writes through its WAL while running");

  auto sent_at = clock_type::now();
  term_sent = true;
  REQUIRE(::kill(nd.process->pid(), SIGTERM) == 0);
  // The idle connection is closed by newsdesk within its stop grace (0.5 s), not left to its
  // 60 s read timeout.
  auto idle_end = read_response(idle.fd, 5s);
  auto idle_closed_after = clock_type::now() - sent_at;
  auto code = nd.process->wait_exit(20s);
  auto took = clock_type::now() - sent_at;
  finished = true;
  for (auto& c : clients)
    c.join();

  MESSAGE("answered before SIGTERM "
          << ok_before << ", in all " << t.ok.load() << ", sent after SIGTERM and answered "
          << t.ok_after_term << "; refused " << t.refused << ", reset in the backlog "
          << t.reset_before_accept << ", write failed " << t.write_failed << "; exit after "
          << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms");
  CHECK(ok_before >= 100);
  for (const auto& f : t.failures)
    FAIL_CHECK(f);
  CHECK(t.failures.empty());
  REQUIRE(code.has_value());
  CHECK(*code == 0);
  // Well inside the 10 s deadline: idle connections did not hold shutdown up.
  CHECK(took < 8s);
  auto log = nd.log();
  CHECK_MESSAGE(log.find("shutdown deadline passed") == std::string::npos, log);
  CHECK(log.find("newsdesk stopped") != std::string::npos);
  CHECK(idle_end.bytes_received == 0);
  CHECK(idle_end.error != "timed out");
  CHECK(idle_closed_after < 4s);
  // The store was closed: SQLite checkpoints and removes the WAL when its last connection
  // closes, so a store left open (or a process killed) keeps it.
  CHECK(fs::exists(nd.dir.path / "store.db"));
  CHECK_MESSAGE(!fs::exists(wal), "store.db-wal is left: the store was not closed");
}

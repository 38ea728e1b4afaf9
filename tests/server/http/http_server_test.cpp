#include "server/http/event_loops.hpp"
#include "server/http/http_server.hpp"
#include "server/http/representation.hpp"
#include "tests/support/harness.hpp"
#include "tests/support/http_get.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

using namespace newsdesk::server;
using namespace newsdesk::testing;
using namespace std::chrono_literals;

namespace {
// `size` bytes that differ from one position to the next, so a misplaced chunk shows.
std::string pattern(std::size_t size) {
  std::string out(size, '\0');
  for (std::size_t i = 0; i < size; ++i)
    out[i] = static_cast<char>('a' + (i * 7 + i / 251) % 26);
  return out;
}

// Identifies the calling thread in a response body.
std::string thread_name() {
  return std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
}

// A server on 127.0.0.1:0 run by two threads (its connections on strands of theirs, or on
// `loop_count` event loops); the handler echoes method, target and body.
struct echo_server {
  boost::asio::io_context ioc;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{ioc.get_executor()};
  std::optional<event_loops> loops; // after ioc: a connection's last owner may be on a loop
  // Threads answering /later. Joined before the server and its io_context go: a responder holds
  // its connection, and the last one released (on that thread, after the client already has its
  // answer) closes the connection's socket, which must not race the io_context's destruction.
  std::mutex later_mutex;
  std::vector<std::thread> later;
  std::vector<std::shared_ptr<event_stream>> streams; // closed before the server stops
  http_server server;
  std::vector<std::thread> threads;
  std::vector<std::string> server_threads; // thread_name() of each of `threads`

  explicit echo_server(http_server_limits limits = {}, unsigned loop_count = 0)
      : loops(loop_count ? std::optional<event_loops>(std::in_place, loop_count) : std::nullopt)
      , server(
            ioc,
            [this](http_request req, responder respond) {
              if (req.path() == "/thread") {
                respond(text_response(200, thread_name()));
                return;
              }
              if (req.path() == "/big") {
                respond(text_response(200, std::string(32 * 1024 * 1024, 'b')));
                return;
              }
              if (req.path() == "/file") {
                // A body from an in-memory file, of the size asked for: small ones go out with
                // their head in one write, large ones with sendfile(2).
                http_response res;
                res.content_type = "application/octet-stream";
                res.file_body = memory_file::create(pattern(std::stoul(std::string(req.query()))));
                respond(std::move(res));
                return;
              }
              if (req.path() == "/split") {
                // A header value that would end the head early and smuggle in another header.
                http_response res;
                res.body = "ok";
                respond(std::move(res.with_header("X-Evil", "a\r\nSet-Cookie: stolen=1")
                                      .with_header("X-Fine", "yes")));
                return;
              }
              if (req.path() == "/stream") {
                // A streamed body that stays open, as /events does.
                http_response res;
                res.content_type = "text/event-stream";
                res.stream = std::make_shared<event_stream>(1024);
                res.stream->push(": open\n\n");
                std::lock_guard lock(later_mutex);
                streams.push_back(res.stream);
                respond(std::move(res));
                return;
              }
              if (req.path() == "/later") {
                // Answer from another thread, as /news does after its renders.
                std::lock_guard lock(later_mutex);
                later.emplace_back([respond] {
                  std::this_thread::sleep_for(50ms);
                  respond(text_response(200, "later"));
                });
                return;
              }
              http_response res;
              res.content_type = "text/plain; charset=utf-8";
              res.body = req.method + " " + req.target + " " + req.body;
              respond(std::move(res));
            },
            limits, loops ? &*loops : nullptr) {
    server.listen("127.0.0.1", 0);
    server.start();
    for (int i = 0; i < 2; ++i)
      threads.emplace_back([this] {
        {
          std::lock_guard lock(later_mutex);
          server_threads.push_back(thread_name());
        }
        ioc.run();
      });
  }
  ~echo_server() {
    {
      std::lock_guard lock(later_mutex);
      for (auto& t : later)
        t.join();
      for (auto& st : streams)
        st->close();
    }
    server.stop();
    work.reset();
    ioc.stop();
    for (auto& t : threads)
      t.join();
    if (loops)
      loops->stop();
  }
  unsigned short port() const { return server.port(); }
};

int connect_raw(unsigned short port) {
  int fd = connect_loopback(port);
  REQUIRE(fd >= 0);
  return fd;
}

// True when the server closes the connection within `within`.
bool closed_within(int fd, std::chrono::milliseconds within) {
  auto deadline = std::chrono::steady_clock::now() + within;
  char buf[4096];
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) > 0 && ::recv(fd, buf, sizeof buf, 0) <= 0)
      return true;
  }
  return false;
}
} // namespace

TEST_CASE("keep-alive: several requests on one connection, answered in order") {
  echo_server s;
  auto raw = raw_exchange(s.port(), "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
                                    "GET /b HTTP/1.1\r\nHost: x\r\n\r\n"
                                    "GET /c HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  auto answers = parse_answers(raw);
  REQUIRE(answers.size() == 3);
  CHECK(answers[0].body == "GET /a ");
  CHECK(answers[1].body == "GET /b ");
  CHECK(answers[2].body == "GET /c ");
  CHECK(answers[2].header("Connection") == "close");
}

TEST_CASE("HEAD gets the headers and Content-Length of the GET, without a body") {
  echo_server s;
  auto head = send_request(s.port(), "HEAD", "/x");
  CHECK(head.status == 200);
  CHECK(head.header("Content-Length") == std::to_string(std::string("HEAD /x ").size()));
  CHECK(head.body.empty());
}

TEST_CASE("file bodies arrive whole, whether written with their head or sent from the file") {
  echo_server s;
  for (std::size_t size : {0ul, 1ul, 10'000ul, 65'536ul, 65'537ul, 300'000ul, 3'000'000ul}) {
    CAPTURE(size);
    auto answer = send_request(s.port(), "GET", "/file?" + std::to_string(size));
    CHECK(answer.status == 200);
    CHECK(answer.header("Content-Length") == std::to_string(size));
    CHECK(answer.body == pattern(size));
    auto head = send_request(s.port(), "HEAD", "/file?" + std::to_string(size));
    CHECK(head.header("Content-Length") == std::to_string(size));
    CHECK(head.body.empty());
  }
  // Several on one kept-alive connection: each response ends where the next begins.
  keep_alive_connection connection(s.port());
  for (std::size_t size : {300'000ul, 10ul, 200'000ul}) {
    auto answer = connection.get("/file?" + std::to_string(size));
    CHECK(answer.body == pattern(size));
  }
}

TEST_CASE("every answer carries Date and Server; a header that would split the head is left out") {
  echo_server s;
  auto answer = send_request(s.port(), "GET", "/split");
  CHECK(answer.status == 200);
  CHECK(answer.body == "ok");
  CHECK(answer.header("Set-Cookie").empty());
  CHECK(answer.header("X-Evil").empty());
  CHECK(answer.header("X-Fine") == "yes");
  CHECK(answer.header("Server") == "newsdesk");
  // An HTTP-date of now ("Wed, 25 Nov 2026 17:02:03 GMT").
  const auto date = answer.header("Date");
  REQUIRE(date.size() == 29);
  CHECK(date.substr(25) == " GMT");
  const auto sent = parse_http_date(date);
  REQUIRE(sent);
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  CHECK(std::llabs(*sent - now) < 5'000);
}

TEST_CASE("a handler may answer later from another thread") {
  echo_server s;
  auto a = http_get(s.port(), "/later");
  CHECK(a.status == 200);
  CHECK(a.body == "200 later\n");
}

TEST_CASE("on event loops, each connection stays on one loop's thread for its whole life") {
  echo_server s({}, 2);
  std::set<std::string> loop_threads;
  for (int c = 0; c < 4; ++c) {
    keep_alive_connection connection(s.port());
    const auto first = connection.get("/thread").body;
    for (int i = 0; i < 3; ++i)
      CHECK(connection.get("/thread").body == first);
    loop_threads.insert(first);
  }
  CHECK(loop_threads.size() == 2); // handed out in turn
  {
    std::lock_guard lock(s.later_mutex);
    CHECK_FALSE(s.server_threads.empty()); // the listener ran, so its threads said who they are
    for (const auto& t : s.server_threads)
      CHECK(loop_threads.count("200 " + t + "\n") == 0); // not on the listener's threads
  }
  // What the connections do on strands works the same on a loop: answers from other threads,
  // bodies sent from a file with waits for the socket, kept-alive requests in order.
  CHECK(http_get(s.port(), "/later").body == "200 later\n");
  auto big = send_request(s.port(), "GET", "/file?3000000");
  CHECK(big.body == pattern(3'000'000));
  auto answers = parse_answers(raw_exchange(s.port(), "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
                                                      "GET /b HTTP/1.1\r\nHost: x\r\n"
                                                      "Connection: close\r\n\r\n"));
  REQUIRE(answers.size() == 2);
  CHECK(answers[1].body == "GET /b ");
}

TEST_CASE("oversized headers get 431, oversized bodies 413, garbage 400; each closes") {
  http_server_limits limits;
  limits.max_header_bytes = 1024;
  limits.max_body_bytes = 100;
  echo_server s(limits);
  auto big_header = raw_exchange(
      s.port(), "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(4000, 'a') + "\r\n\r\n");
  CHECK(big_header.rfind("HTTP/1.1 431", 0) == 0);
  auto big_body =
      raw_exchange(s.port(), "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n" +
                                 std::string(1000, 'b'));
  CHECK(big_body.rfind("HTTP/1.1 413", 0) == 0);
  auto garbage = raw_exchange(s.port(), "\x01\x02 not http at all\r\n\r\n");
  CHECK(garbage.rfind("HTTP/1.1 400", 0) == 0);
  auto bad_length =
      raw_exchange(s.port(), "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n");
  CHECK(bad_length.rfind("HTTP/1.1 400", 0) == 0);
  // The server still serves others.
  CHECK(http_get(s.port(), "/ok").status == 200);
}

TEST_CASE("a client trickling its headers is cut off at the read deadline") {
  http_server_limits limits;
  limits.read_timeout = 300ms;
  echo_server s(limits);
  int fd = connect_raw(s.port());
  ::send(fd, "GET / HTTP/1.1\r\nHost", 20, MSG_NOSIGNAL);
  auto started = std::chrono::steady_clock::now();
  CHECK(closed_within(fd, 2s));
  CHECK(std::chrono::steady_clock::now() - started < 1500ms);
  ::close(fd);
  CHECK(http_get(s.port(), "/still-serving").status == 200);
}

TEST_CASE("a client that stops reading its response is cut off at the write deadline") {
  http_server_limits limits;
  limits.write_timeout = 300ms;
  echo_server s(limits);
  // A 4 KiB receive buffer: the 32 MiB answer cannot fit in the kernel's buffers.
  int fd = connect_loopback(s.port(), 4096);
  REQUIRE(fd >= 0);
  const std::string request = "GET /big HTTP/1.1\r\nHost: x\r\n\r\n";
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  // The answer's first bytes arrive (its write, and with it the deadline, has begun: the handler
  // copying 32 MiB takes seconds under ThreadSanitizer); then nothing is read, well past the
  // deadline.
  pollfd first{fd, POLLIN, 0};
  REQUIRE(::poll(&first, 1, 30'000) == 1);
  std::this_thread::sleep_for(1s);
  // What was sent before the deadline can still be read; then the connection ends.
  std::size_t received = 0;
  char buf[65536];
  bool ended = false;
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!ended && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0)
      continue;
    auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0)
      ended = true;
    else
      received += static_cast<std::size_t>(n);
  }
  ::close(fd);
  CHECK(ended);
  CHECK(received < 32u * 1024 * 1024);
  CHECK(http_get(s.port(), "/still-serving").status == 200);
}

namespace {
// Sends a GET for `target` on `fd` and returns what arrives within a second (the head, at least).
std::string ask(int fd, const std::string& target) {
  const std::string request = "GET " + target + " HTTP/1.1\r\nHost: x\r\n\r\n";
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string got;
  auto deadline = std::chrono::steady_clock::now() + 1s;
  char buf[4096];
  while (got.find("\r\n\r\n") == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) > 0) {
      auto n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0)
        break;
      got.append(buf, static_cast<std::size_t>(n));
    }
  }
  return got;
}
} // namespace

TEST_CASE("connections over the cap get 503 with Retry-After while existing ones keep working") {
  http_server_limits limits;
  limits.max_connections = 2;
  limits.max_connections_per_ip = 0;
  echo_server s(limits);
  int a = connect_raw(s.port());
  int b = connect_raw(s.port());
  // Both accepted before the third arrives, however slowly the server runs.
  REQUIRE(eventually([&] { return s.server.open_connections() == 2; }));
  int c = connect_raw(s.port());
  auto refused = ask(c, "/a");
  CHECK(refused.rfind("HTTP/1.1 503", 0) == 0);
  CHECK(refused.find("Retry-After: 5") != std::string::npos);
  CHECK(closed_within(c, 1s));
  ::close(c);
  CHECK(ask(a, "/a").rfind("HTTP/1.1 200", 0) == 0);
  CHECK(s.server.refused() == 1);
  ::close(a);
  ::close(b);
  // A slot freed is a slot again.
  REQUIRE(eventually([&] { return s.server.open_connections() == 0; }));
  int d = connect_raw(s.port());
  CHECK(ask(d, "/a").rfind("HTTP/1.1 200", 0) == 0);
  ::close(d);
}

TEST_CASE("one client address cannot take every connection") {
  http_server_limits limits;
  limits.max_connections_per_ip = 3;
  echo_server s(limits);
  std::vector<int> held;
  for (int i = 0; i < 3; ++i)
    held.push_back(connect_raw(s.port()));
  REQUIRE(eventually([&] { return s.server.open_connections() == 3; }));
  int over = connect_raw(s.port());
  CHECK(ask(over, "/a").rfind("HTTP/1.1 503", 0) == 0);
  ::close(over);
  for (int fd : held)
    CHECK(ask(fd, "/a").rfind("HTTP/1.1 200", 0) == 0);
  for (int fd : held)
    ::close(fd);
}

TEST_CASE("streams have their own budget: held streams leave ordinary requests their slots") {
  http_server_limits limits;
  limits.max_connections = 4;
  limits.max_connections_per_ip = 0;
  limits.max_streams = 20;
  limits.max_streams_per_ip = 0;
  echo_server s(limits);
  std::vector<int> streams;
  for (int i = 0; i < 20; ++i) {
    streams.push_back(connect_raw(s.port()));
    CHECK(ask(streams.back(), "/stream").rfind("HTTP/1.1 200", 0) == 0);
  }
  CHECK(s.server.open_streams() == 20);
  // Twenty streams open, four plain slots: ordinary requests still get in.
  for (int i = 0; i < 4; ++i) {
    int fd = connect_raw(s.port());
    CHECK(ask(fd, "/a").rfind("HTTP/1.1 200", 0) == 0);
    ::close(fd);
  }
  // The 21st stream is refused, with a time to come back.
  int extra = connect_raw(s.port());
  auto refused = ask(extra, "/stream");
  CHECK(refused.rfind("HTTP/1.1 503", 0) == 0);
  CHECK(refused.find("Retry-After:") != std::string::npos);
  ::close(extra);
  for (int fd : streams)
    ::close(fd);
}

TEST_CASE("one client address gets at most max_streams_per_ip streams") {
  http_server_limits limits;
  limits.max_streams_per_ip = 2;
  echo_server s(limits);
  int a = connect_raw(s.port()), b = connect_raw(s.port()), c = connect_raw(s.port());
  CHECK(ask(a, "/stream").rfind("HTTP/1.1 200", 0) == 0);
  CHECK(ask(b, "/stream").rfind("HTTP/1.1 200", 0) == 0);
  CHECK(ask(c, "/stream").rfind("HTTP/1.1 503", 0) == 0);
  ::close(a);
  ::close(b);
  ::close(c);
}

namespace {
// A connection to the loopback server from `source` (any 127.x.y.z reaches it).
int connect_from(unsigned short port, const char* source) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  REQUIRE(::inet_pton(AF_INET, source, &from.sin_addr) == 1);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) == 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0);
  return fd;
}
} // namespace

TEST_CASE("one address range (an IPv4 /24) gets at most max_streams_per_range streams, whatever "
          "its number of addresses; another range still gets its own") {
  http_server_limits limits;
  limits.max_streams = 100;
  limits.max_streams_per_ip = 2;
  limits.max_streams_per_range = 3;
  echo_server s(limits);
  std::vector<int> fds;
  auto stream_from = [&](const char* source) {
    fds.push_back(connect_from(s.port(), source));
    return ask(fds.back(), "/stream").substr(0, 12);
  };
  CHECK(stream_from("127.0.9.2") == "HTTP/1.1 200");
  CHECK(stream_from("127.0.9.3") == "HTTP/1.1 200");
  CHECK(stream_from("127.0.9.4") == "HTTP/1.1 200");
  // A fourth address of the same /24 finds its range full.
  CHECK(stream_from("127.0.9.5") == "HTTP/1.1 503");
  CHECK(stream_from("127.0.10.2") == "HTTP/1.1 200");
  // And an address's own limit still holds within a range with room.
  CHECK(stream_from("127.0.10.2") == "HTTP/1.1 200");
  CHECK(stream_from("127.0.10.2") == "HTTP/1.1 503");
  for (int fd : fds)
    ::close(fd);
  fds.clear(); // their numbers may be the servers' own sockets' now

  // Derived (0): an eighth of max_streams, at least max_streams_per_ip.
  limits.max_streams_per_range = 0;
  limits.max_streams = 16;
  limits.max_streams_per_ip = 1;
  echo_server derived(limits);
  std::vector<std::string> answers;
  for (const char* source : {"127.0.11.2", "127.0.11.3", "127.0.11.4"}) {
    fds.push_back(connect_from(derived.port(), source));
    answers.push_back(ask(fds.back(), "/stream").substr(0, 12));
  }
  CHECK(answers == std::vector<std::string>{"HTTP/1.1 200", "HTTP/1.1 200", "HTTP/1.1 503"});
  for (int fd : fds)
    ::close(fd);
}

TEST_CASE("HTTP/1.1 without Host is a 400; an absolute-form target is served as its path") {
  echo_server s;
  CHECK(raw_exchange(s.port(), "GET /a HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 400", 0) == 0);
  CHECK(raw_exchange(s.port(), "GET /a HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n")
            .rfind("HTTP/1.1 400", 0) == 0);
  CHECK(raw_exchange(s.port(), "GET /a HTTP/1.0\r\n\r\n").rfind("HTTP/1.0 200", 0) == 0);
  auto absolute = raw_exchange(
      s.port(), "GET http://news.example:8080/a?b=1 HTTP/1.1\r\nConnection: close\r\n\r\n");
  CHECK(absolute.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(absolute.find("GET /a?b=1 ") != std::string::npos);
  CHECK(read_requests("GET /x HTTP/1.1\r\n\r\n", 4, {}, [](http_request) {}) == 400);
}

TEST_CASE("after stop() a kept-alive connection's next request is answered with Connection: "
          "close, and an idle one is closed within the grace, not at the read deadline") {
  http_server_limits limits;
  limits.read_timeout = 30s;
  limits.stop_idle_grace = 200ms;
  echo_server s(limits);
  const std::string keep = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n";
  int busy = connect_raw(s.port());
  int idle = connect_raw(s.port());
  char buf[512];
  for (int fd : {busy, idle}) {
    ::send(fd, keep.data(), keep.size(), MSG_NOSIGNAL);
    REQUIRE(::recv(fd, buf, sizeof buf, 0) > 0); // one small answer, kept alive
  }
  s.server.stop();
  auto stopped = std::chrono::steady_clock::now();
  // A request arriving after stop() on a kept-alive connection is still answered.
  timeval five_seconds{5, 0}; // the read loop below ends even if the server never closes
  ::setsockopt(busy, SOL_SOCKET, SO_RCVTIMEO, &five_seconds, sizeof five_seconds);
  ::send(busy, keep.data(), keep.size(), MSG_NOSIGNAL);
  std::string answer;
  for (ssize_t n; (n = ::recv(busy, buf, sizeof buf, 0)) > 0;)
    answer.append(buf, static_cast<std::size_t>(n)); // until the server closes
  auto answers = parse_answers(answer);
  REQUIRE(answers.size() == 1);
  CHECK(answers[0].status == 200);
  CHECK(answers[0].header("Connection") == "close");
  CHECK(closed_within(idle, 5s));
  CHECK(std::chrono::steady_clock::now() - stopped < 3s);
  ::close(busy);
  ::close(idle);
}

TEST_CASE("listening on a port in use throws a message naming the address") {
  echo_server s;
  boost::asio::io_context ioc;
  http_server other(ioc, [](http_request, responder) {});
  CHECK_THROWS_WITH_AS(
      other.listen("127.0.0.1", s.port()),
      doctest::Contains(("cannot listen on 127.0.0.1:" + std::to_string(s.port())).c_str()),
      std::runtime_error);
  CHECK_THROWS_WITH_AS(other.listen("not-an-ip", 80), doctest::Contains("not an IP address"),
                       std::runtime_error);
}

TEST_CASE("read_requests parses pipelined bytes as a connection does and maps errors to statuses") {
  std::vector<std::string> targets;
  auto collect = [&](http_request req) { targets.push_back(req.target); };
  CHECK(read_requests("GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\nConnection: "
                      "close\r\n\r\nGET /c HTTP/1.1\r\n\r\n",
                      3, {}, collect) == 0);
  CHECK(targets == std::vector<std::string>{"/a", "/b"});
  CHECK(read_requests("", 1, {}, collect) == 0);
  CHECK(read_requests("garbage\r\n\r\n", 1, {}, collect) == 400);
  CHECK(read_requests("GET / HTTP/1.1\r\nHost: x\r\n", 5, {}, collect) == 400);
  http_server_limits small;
  small.max_header_bytes = 64;
  small.max_body_bytes = 4;
  CHECK(read_requests("GET / HTTP/1.1\r\nX: " + std::string(100, 'a') + "\r\n\r\n", 7, small,
                      collect) == 431);
  CHECK(read_requests("POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123456789", 64, small,
                      collect) == 413);
  CHECK(targets.size() == 2);
}

TEST_CASE("an event stream is cut off when its backlog passes one chunk and the limit, not by a "
          "small event behind a large batch") {
  event_stream stream(1024);
  CHECK(stream.push(std::string(4096, 'a'))); // a batch larger than the limit is taken
  CHECK(stream.push("event: site\n\n"));      // a status right behind it is no sign of a stall
  CHECK_FALSE(stream.push(std::string(2048, 'b'))); // the reader never took the batch: cut
  CHECK(stream.closed());

  event_stream reading(1024);
  CHECK(reading.push(std::string(4096, 'a')));
  const auto taken = reading.take(); // the connection wrote it
  REQUIRE(taken.size() == 1);
  CHECK(taken.front()->size() == 4096);
  CHECK(reading.push(std::string(512, 'b')));
  CHECK(reading.push(std::string(1024, 'c'))); // 512 + the limit waiting: not past it
  CHECK_FALSE(reading.push("d"));
}

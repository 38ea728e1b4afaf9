// Integration tests of broker::server over real sockets on 127.0.0.1:0.

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/resource.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support.hpp"
#include "tests/support/logfmt.hpp"

using namespace newsdesk::broker;
using namespace newsdesk::broker::test;

namespace {

std::string msg(int i) {
  // Appending instead of "m" + to_string(i): GCC 12 at -O3 reports a false -Wrestrict on
  // operator+(const char*, string&&).
  std::string s = "m";
  s += std::to_string(i);
  return s;
}

int num(const std::string& s) {
  return std::stoi(s.substr(1));
}

// Publishes `count` messages m0..m{count-1} to `channel` in one write.
void publish_many(client& pub, std::string_view channel, int count, std::size_t pad = 0) {
  std::string out;
  for (int i = 0; i < count; ++i) {
    append_frame(out, channel);
    std::string m = msg(i);
    if (pad > m.size())
      m.append(pad - m.size(), '.');
    append_frame(out, m);
  }
  pub.send_raw(out);
}

std::string strip(std::string s) {
  const auto dot = s.find('.');
  return dot == std::string::npos ? s : s.substr(0, dot);
}

// m<i> padded with dots to `pad` bytes, as a channel frame plus a data frame.
void append_message(std::string& out, std::string_view channel, int i, std::size_t pad) {
  append_frame(out, channel);
  std::string m = msg(i);
  if (pad > m.size())
    m.append(pad - m.size(), '.');
  append_frame(out, m);
}

// Feeds a stream of messages m0..m{total-1} through a non-blocking socket and counts the bytes
// the kernel accepted, so a test can see sends stop completing (EAGAIN) and start again.
class nonblocking_publisher {
 public:
  nonblocking_publisher(client& c, std::string channel, int total, std::size_t pad)
      : c_(c)
      , channel_(std::move(channel))
      , total_(total)
      , pad_(pad) {
    ::fcntl(c_.fd(), F_SETFL, ::fcntl(c_.fd(), F_GETFL) | O_NONBLOCK);
  }

  // Sends until the kernel says EAGAIN or everything is sent; true if it hit EAGAIN.
  bool send_until_blocked() {
    for (;;) {
      if (off_ == out_.size()) {
        if (next_ == total_)
          return false;
        out_.clear();
        off_ = 0;
        for (int k = 0; k < 256 && next_ < total_; ++k)
          append_message(out_, channel_, next_++, pad_);
      }
      const auto n = ::send(c_.fd(), out_.data() + off_, out_.size() - off_, MSG_NOSIGNAL);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return true;
      if (n <= 0)
        throw std::runtime_error(std::string("send: ") + std::strerror(errno));
      off_ += static_cast<std::size_t>(n);
      accepted_ += static_cast<std::size_t>(n);
    }
  }

  // Sends everything, waiting for writability in between; false if stuck for `timeout`.
  bool send_all(std::chrono::milliseconds timeout) {
    while (send_until_blocked()) {
      pollfd p{c_.fd(), POLLOUT, 0};
      if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0)
        return false;
    }
    return true;
  }

  std::size_t accepted() const { return accepted_; }

 private:
  client& c_;
  std::string channel_;
  int total_;
  std::size_t pad_;
  int next_ = 0;
  std::string out_;
  std::size_t off_ = 0;
  std::size_t accepted_ = 0;
};

// True if the peer closed with FIN (recv returns 0) within `timeout`, not with a reset.
bool closed_with_fin(int fd, std::chrono::milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0)
    return false;
  char byte = 0;
  return ::recv(fd, &byte, 1, 0) == 0;
}

} // namespace

TEST_CASE("every subscriber of a /topic channel gets every message, the publisher too") {
  running_broker b;
  std::vector<std::unique_ptr<client>> subs;
  for (int i = 0; i < 3; ++i) {
    subs.push_back(std::make_unique<client>(b.port()));
    subs.back()->send_frame("/topic/news");
  }
  client pub(b.port());
  pub.send_frame("/topic/news");
  REQUIRE(b.wait_subscribers(4));
  publish_many(pub, "/topic/news", 200);
  for (auto* c : {subs[0].get(), subs[1].get(), subs[2].get(), &pub})
    for (int i = 0; i < 200; ++i) {
      const auto m = c->read_frame();
      REQUIRE(m);
      REQUIRE(*m == msg(i));
    }
  CHECK(b.stats().messages_in == 200);
  CHECK(b.stats().deliveries == 800);
}

TEST_CASE("more connections than one batch of the reactor, ready at once, are all served") {
  running_broker b;
  // 300 > the reactor's batch of 256 (reactor.hpp): the subscribe frames, and later the done
  // frames, are sent in a burst, so the reactor likely finds more ready than it takes at once.
  constexpr int n = 300;
  std::vector<std::unique_ptr<client>> subs;
  for (int i = 0; i < n; ++i)
    subs.push_back(std::make_unique<client>(b.port()));
  for (auto& s : subs)
    s->send_frame("/topic/crowd");
  REQUIRE(b.wait_subscribers(n));
  client pub(b.port());
  pub.send_frame("/null");
  publish_many(pub, "/topic/crowd", 3);
  for (auto& s : subs)
    for (int i = 0; i < 3; ++i)
      CHECK(s->read_frame() == msg(i));
  for (auto& s : subs)
    s->send_frame(""); // done: each is closed by the broker after its queue is written
  for (auto& s : subs)
    CHECK(s->wait_closed());
  CHECK(eventually([&] { return b.stats().connections_current == 1; }));
}

TEST_CASE("a channel name without /topic or /queue fans out like /topic") {
  running_broker b;
  client a(b.port()), c(b.port()), pub(b.port());
  a.send_frame("chat");
  c.send_frame("chat");
  pub.send_frame("/null");
  REQUIRE(b.wait_subscribers(3));
  publish_many(pub, "chat", 10);
  for (int i = 0; i < 10; ++i) {
    CHECK(a.read_frame() == msg(i));
    CHECK(c.read_frame() == msg(i));
  }
}

TEST_CASE("a /queue channel hands out messages round-robin: each of N gets every Nth") {
  for (int n = 2; n <= 4; ++n) {
    CAPTURE(n);
    running_broker b;
    const std::string channel = "/queue/jobs" + std::to_string(n);
    std::vector<std::unique_ptr<client>> subs;
    for (int i = 0; i < n; ++i) {
      subs.push_back(std::make_unique<client>(b.port()));
      subs.back()->send_frame(channel);
      REQUIRE(b.wait_subscribers(static_cast<std::uint64_t>(i + 1))); // fixes the turn order
    }
    client pub(b.port());
    pub.send_frame("/null");
    const int total = 30 * n;
    publish_many(pub, channel, total);
    for (int s = 0; s < n; ++s)
      for (int k = s; k < total; k += n) {
        const auto m = subs[static_cast<std::size_t>(s)]->read_frame();
        REQUIRE(m);
        CHECK(*m == msg(k));
      }
    for (auto& s : subs)
      CHECK_FALSE(s->read_frame(50ms)); // nothing extra: no duplicates
  }
}

TEST_CASE("a /queue message with no subscriber waits in the backlog for a late subscriber") {
  running_broker b;
  client pub(b.port());
  pub.send_frame("/null");
  publish_many(pub, "/queue/late", 50);
  REQUIRE(eventually([&] { return b.stats().backlog_messages == 50; }));
  CHECK(b.stats().channels_current == 2);
  client late(b.port());
  late.send_frame("/queue/late");
  for (int i = 0; i < 50; ++i)
    REQUIRE(late.read_frame() == msg(i));
  CHECK(eventually([&] { return b.stats().backlog_messages == 0; }));
  CHECK(b.stats().drops.backlog_full == 0);
}

TEST_CASE("a full /queue backlog stops reading the publisher until a subscriber drains it") {
  auto cfg = test_config();
  cfg.backlog_max_messages = 100;
  running_broker b(cfg);
  client pub(b.port());
  pub.send_frame("/null");
  // A small send buffer so the kernel's buffering ends well before the message stream does.
  const int sndbuf = 32 * 1024;
  ::setsockopt(pub.fd(), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
  const int total = 50000;
  nonblocking_publisher feed(pub, "/queue/bp", total, 100);
  REQUIRE(feed.send_until_blocked()); // TCP pushed back before the 5 MB were accepted
  REQUIRE(eventually([&] { return b.stats().publishers_paused == 1; }));
  // Once the broker stopped reading, the kernel buffers fill (the receive window may open a
  // little more for a while) and then no send completes: three probes 100 ms apart in a row.
  std::size_t stalled_at = 0;
  int still = 0;
  for (int probe = 0; probe < 50 && still < 3; ++probe) {
    std::this_thread::sleep_for(100ms);
    REQUIRE(feed.send_until_blocked());
    still = feed.accepted() == stalled_at ? still + 1 : 0;
    stalled_at = feed.accepted();
  }
  CHECK(still == 3);
  CHECK(stalled_at < 5 * 1024 * 1024 / 2); // far from everything
  CHECK(b.stats().backlog_messages == 100);
  // The rest is held back, not dropped. The pause is counted before the paused run's messages_in
  // (separate relaxed counters): waited for, not assumed.
  CHECK(eventually([&] { return b.stats().messages_in == 100; }));

  client sub(b.port());
  sub.send_frame("/queue/bp");
  std::thread reader([&] {
    for (int i = 0; i < total; ++i) {
      const auto m = sub.read_frame();
      REQUIRE(m);
      REQUIRE(strip(*m) == msg(i));
    }
  });
  const bool sent_all = feed.send_all(5000ms); // sends complete again, to the last byte
  reader.join();
  CHECK(sent_all);
  CHECK(feed.accepted() > stalled_at);
  const auto e = b.stats();
  CHECK(e.messages_in == static_cast<std::uint64_t>(total));
  CHECK(e.publishers_paused == 0);
  CHECK(e.drops.backlog_full == 0);
}

TEST_CASE("a /topic message with no subscriber is dropped and counted") {
  running_broker b;
  client pub(b.port());
  pub.send_frame("/null");
  publish_many(pub, "/topic/nobody", 7);
  REQUIRE(eventually([&] { return b.stats().drops.no_subscriber == 7; }));
  CHECK(b.stats().channels_current == 1); // only /null; nothing kept for /topic/nobody
}

TEST_CASE("a subscriber that never reads does not slow others: they get everything") {
  auto cfg = test_config();
  cfg.queue_max_bytes = 512 * 1024;
  cfg.queue_max_messages = 10000;
  cfg.hard_limit_bytes = 0;
  running_broker b(cfg);
  client stuck(b.port(), 4096);
  stuck.send_frame("/topic/t");
  client fast(b.port());
  fast.send_frame("/topic/t");
  client pub(b.port());
  pub.send_frame("/null");
  REQUIRE(b.wait_subscribers(3));
  // The publisher runs one batch ahead of the fast reader, so only the stuck queue overflows.
  const int total = 30000;
  const int batch = 1000;
  std::atomic<int> read_count{0};
  std::thread reader([&] {
    for (int i = 0; i < total; ++i) {
      const auto m = fast.read_frame();
      REQUIRE(m);
      REQUIRE(strip(*m) == msg(i));
      read_count = i + 1;
    }
  });
  for (int start = 0; start < total; start += batch) {
    REQUIRE(eventually([&] { return read_count >= start - batch; }));
    std::string out;
    for (int i = start; i < start + batch; ++i) {
      append_frame(out, "/topic/t");
      append_frame(out, msg(i) + std::string(100, '.'));
    }
    pub.send_raw(out);
  }
  reader.join();
  const auto s = b.stats();
  CHECK(s.drops.queue_full > 0);
  CHECK(s.messages_in == static_cast<std::uint64_t>(total));
  CHECK(s.queued_bytes <= cfg.queue_max_bytes + 64 * 1024);
}

TEST_CASE("a subscriber owing more than the hard limit is disconnected") {
  auto cfg = test_config();
  cfg.queue_max_bytes = 64 * 1024;
  cfg.hard_limit_bytes = 512 * 1024;
  running_broker b(cfg);
  client stuck(b.port(), 4096);
  stuck.send_frame("/topic/h");
  client pub(b.port());
  pub.send_frame("/null");
  REQUIRE(b.wait_subscribers(2));
  publish_many(pub, "/topic/h", 20000, 100);
  REQUIRE(eventually([&] { return b.stats().disconnects.hard_limit == 1; }));
  CHECK(stuck.wait_closed());
  // The connection closes before the strand drops its subscription.
  CHECK(eventually([&] { return b.stats().subscribers_current == 1; }));
}

TEST_CASE("a subscriber making no write progress within the write deadline is disconnected") {
  auto cfg = test_config();
  cfg.hard_limit_bytes = 0;
  cfg.write_deadline = 300ms;
  running_broker b(cfg);
  client stuck(b.port(), 4096);
  stuck.send_frame("/topic/w");
  client pub(b.port());
  pub.send_frame("/null");
  REQUIRE(b.wait_subscribers(2));
  publish_many(pub, "/topic/w", 20000, 200);
  REQUIRE(eventually([&] { return b.stats().disconnects.write_timeout == 1; }, 5000ms));
  // The disconnect is counted before the strand drops the connection's queue.
  CHECK(eventually([&] { return b.stats().queued_bytes == 0; }));
}

TEST_CASE("the disconnect policy closes a subscriber as soon as its queue is full") {
  auto cfg = test_config();
  cfg.slow_consumer = slow_consumer_policy::disconnect;
  cfg.queue_max_messages = 10;
  running_broker b(cfg);
  client stuck(b.port(), 4096);
  stuck.send_frame("/topic/d");
  client pub(b.port());
  pub.send_frame("/null");
  REQUIRE(b.wait_subscribers(2));
  publish_many(pub, "/topic/d", 5000, 200);
  REQUIRE(eventually([&] { return b.stats().disconnects.slow_consumer == 1; }));
  CHECK(stuck.wait_closed());
}

TEST_CASE("a /queue message skips a subscriber whose queue is full and goes to the next") {
  auto cfg = test_config();
  cfg.queue_max_messages = 20;
  running_broker b(cfg);
  client stuck(b.port(), 4096);
  stuck.send_frame("/queue/q");
  REQUIRE(b.wait_subscribers(1));
  client live(b.port());
  live.send_frame("/queue/q");
  REQUIRE(b.wait_subscribers(2));
  client pub(b.port());
  pub.send_frame("/null");
  const int total = 5000;
  publish_many(pub, "/queue/q", total, 200);
  std::vector<int> got_live, got_stuck;
  while (auto m = live.read_frame(300ms))
    got_live.push_back(num(strip(*m)));
  while (auto m = stuck.read_frame(300ms))
    got_stuck.push_back(num(strip(*m)));
  CHECK(got_live.size() + got_stuck.size() == static_cast<std::size_t>(total));
  CHECK(got_stuck.size() < static_cast<std::size_t>(total / 4)); // far from alternating
  CHECK(std::is_sorted(got_live.begin(), got_live.end()));
  CHECK(std::is_sorted(got_stuck.begin(), got_stuck.end()));
  std::set<int> all(got_live.begin(), got_live.end());
  all.insert(got_stuck.begin(), got_stuck.end());
  CHECK(all.size() == static_cast<std::size_t>(total));
}

TEST_CASE("an oversized length prefix closes that connection only") {
  running_broker b;
  client good(b.port());
  good.send_frame("/topic/ok");
  client bad(b.port());
  bad.send_raw(std::string("\xff\xff\xff\xff", 4)); // 4 GiB announced as the first frame
  CHECK(bad.wait_closed());
  client bad2(b.port());
  bad2.send_frame("/topic/ok");
  std::string big(4, '\0');
  write_length(big.data(), 2 * 1024 * 1024); // data frame of 2 MiB > 1 MiB limit
  std::string out;
  append_frame(out, "/topic/ok");
  bad2.send_raw(out + big + "xyz");
  CHECK(bad2.wait_closed());
  CHECK(b.stats().disconnects.frame_too_large == 2);
  client pub(b.port());
  pub.send_frame("/null");
  REQUIRE(b.wait_subscribers(2));
  pub.publish("/topic/ok", "still here");
  CHECK(good.read_frame() == "still here");
}

TEST_CASE("a channel name above the limit closes the connection") {
  auto cfg = test_config();
  cfg.max_channel_name = 16;
  running_broker b(cfg);
  client c(b.port());
  c.send_frame(std::string(17, 'x'));
  CHECK(c.wait_closed());
  client p(b.port());
  p.send_frame("/null");
  p.publish(std::string(40, 'y'), "data");
  CHECK(p.wait_closed());
  CHECK(b.stats().disconnects.channel_name_too_long == 2);
}

TEST_CASE("garbage bytes close only the connection that sent them") {
  running_broker b;
  client good(b.port());
  good.send_frame("/topic/g");
  std::mt19937 rng(42);
  for (int round = 0; round < 20; ++round) {
    client junk(b.port());
    std::string bytes(512, '\0');
    for (auto& ch : bytes)
      ch = static_cast<char>(rng());
    bytes[0] = '\x7f'; // make the first length certainly too large
    junk.send_raw(bytes);
    CHECK(junk.wait_closed());
  }
  client pub(b.port());
  pub.send_frame("/null");
  REQUIRE(b.wait_subscribers(2));
  pub.publish("/topic/g", "fine");
  CHECK(good.read_frame() == "fine");
  CHECK(b.stats().connections_current == 2);
}

TEST_CASE("a client vanishing mid-frame closes only its connection") {
  running_broker b;
  client good(b.port());
  good.send_frame("/topic/v");
  {
    client half(b.port());
    half.send_raw(std::string("\0\0\0\x64/top", 8)); // 100-byte name, 4 bytes sent
  }
  {
    client half(b.port());
    half.send_frame("/null");
    std::string out;
    append_frame(out, "/topic/v");
    half.send_raw(out + std::string("\0\0\0\x20partial", 11)); // data frame cut short
    half.abort();
  }
  REQUIRE(eventually([&] { return b.stats().disconnects.truncated_frame == 2; }));
  client pub(b.port());
  pub.send_frame("/null");
  REQUIRE(b.wait_subscribers(2));
  pub.publish("/topic/v", "after");
  CHECK(good.read_frame() == "after"); // the half message was never delivered
}

TEST_CASE("a half-sent frame followed by silence is closed after the partial-frame timeout") {
  auto cfg = test_config();
  cfg.partial_frame_timeout = 200ms;
  running_broker b(cfg);
  client c(b.port());
  c.send_raw(std::string("\0\0\0\x10/to", 7));
  CHECK(c.wait_closed(3000ms));
  CHECK(b.stats().disconnects.partial_frame_timeout == 1);
}

TEST_CASE("a connection that never completes its first frame is closed at first_frame_timeout") {
  auto cfg = test_config();
  cfg.first_frame_timeout = 200ms;
  running_broker b(cfg);
  client silent(b.port());
  client partial(b.port());
  partial.send_raw(std::string("\0\0\0\x10/to", 7)); // partial_frame_timeout is 30 s
  client sub(b.port());
  sub.send_frame("/topic/ff");
  CHECK(silent.wait_closed(3000ms));
  CHECK(partial.wait_closed(3000ms));
  CHECK(eventually([&] { return b.stats().disconnects.first_frame_timeout == 2; }));
  CHECK(nlohmann::json(b.stats()).at("disconnects").at("first_frame_timeout") == 2);
  // The one that said who it is stays, well past the timeout, and is served.
  std::this_thread::sleep_for(400ms);
  CHECK(b.stats().connections_current == 1);
  b.srv().publish("/topic/ff", "still here");
  CHECK(sub.read_frame() == "still here");
}

TEST_CASE("with a token, the token is the first frame that stops the first-frame timeout") {
  auto cfg = test_config();
  cfg.token = "secret";
  cfg.first_frame_timeout = 200ms;
  running_broker b(cfg);
  client silent(b.port());
  client sub(b.port());
  sub.send_frame("secret");
  CHECK(silent.wait_closed(3000ms));
  std::this_thread::sleep_for(400ms);
  sub.send_frame("/topic/tok");
  REQUIRE(b.wait_subscribers(1));
  CHECK(b.stats().disconnects.first_frame_timeout == 1);
}

TEST_CASE("silent connections cannot lock a real subscriber out: it connects, subscribes and "
          "receives") {
  newsdesk::testing::log_capture log;
  auto cfg = test_config();
  cfg.max_connections = 20;
  cfg.max_unidentified_connections = 10;
  cfg.first_frame_timeout = 0ms; // the bound alone must keep room
  running_broker b(cfg);
  std::vector<std::unique_ptr<client>> silent;
  for (int i = 0; i < 40; ++i)
    silent.push_back(std::make_unique<client>(b.port()));
  REQUIRE(eventually([&] { return b.stats().connections_total == 40; }));
  CHECK(b.stats().connections_current == 10);
  CHECK(b.stats().disconnects.unidentified_limit == 30);
  CHECK(b.stats().connections_rejected == 0);

  client sub(b.port());
  sub.send_frame("/topic/real");
  REQUIRE(b.wait_subscribers(1));
  b.srv().publish("/topic/real", "news");
  CHECK(sub.read_frame() == "news");
  // More silent ones only ever replace silent ones; the subscriber keeps its slot.
  for (int i = 0; i < 20; ++i)
    silent.push_back(std::make_unique<client>(b.port()));
  REQUIRE(eventually([&] { return b.stats().connections_total == 61; }));
  CHECK(b.stats().connections_current == 11);
  b.srv().publish("/topic/real", "more news");
  CHECK(sub.read_frame() == "more news");

  const auto lines = log.lines_with("broker: connections refused");
  REQUIRE(lines.size() == 1); // rate-limited: one line for the whole burst
  CHECK(lines[0].find("level=warn") != std::string::npos);
  CHECK(lines[0].find("unidentified_closed=1") != std::string::npos);
  CHECK(lines[0].find("max_unidentified_connections=10") != std::string::npos);
}

TEST_CASE("an idle subscriber is pinged with zero-length frames and stays past every timeout") {
  auto cfg = test_config();
  cfg.ping_interval = 100ms;
  cfg.first_frame_timeout = 100ms;
  cfg.partial_frame_timeout = 100ms;
  cfg.write_deadline = 300ms;
  running_broker b(cfg);
  client sub(b.port());
  sub.send_frame("/topic/idle");
  REQUIRE(b.wait_subscribers(1));
  int pings = 0;
  const auto end = std::chrono::steady_clock::now() + 1200ms;
  while (std::chrono::steady_clock::now() < end) {
    const auto f = sub.read_frame(100ms);
    if (f) {
      CHECK(f->empty());
      ++pings;
    }
  }
  CHECK(pings >= 3);
  CHECK(b.stats().pings >= 3);
  CHECK(b.stats().connections_current == 1);
  CHECK(b.stats().deliveries == 0); // a ping is no message
  b.srv().publish("/topic/idle", "awake");
  std::optional<std::string> got;
  while ((got = sub.read_frame()) && got->empty())
    ;
  CHECK(got == "awake");
}

TEST_CASE("a subscriber that keeps receiving messages gets no pings") {
  auto cfg = test_config();
  // A message every 20 ms for 1.6 s against a 1 s interval: a loaded machine may stall a
  // sender for a tenth of a second, never for the whole interval.
  cfg.ping_interval = 1000ms;
  running_broker b(cfg);
  client sub(b.port());
  sub.send_frame("/topic/busy");
  REQUIRE(b.wait_subscribers(1));
  for (int i = 0; i < 80; ++i) {
    b.srv().publish("/topic/busy", msg(i));
    REQUIRE(sub.read_frame() == msg(i));
    std::this_thread::sleep_for(20ms);
  }
  CHECK(b.stats().pings == 0);
}

TEST_CASE("a zero-length channel frame makes the broker flush what it owes, then close") {
  running_broker b;
  client c(b.port());
  c.send_frame("/topic/self");
  std::string out;
  for (int i = 0; i < 100; ++i) {
    append_frame(out, "/topic/self");
    append_frame(out, msg(i));
  }
  append_frame(out, "");
  c.send_raw(out);
  for (int i = 0; i < 100; ++i)
    REQUIRE(c.read_frame() == msg(i));
  CHECK(c.wait_closed());
  CHECK(b.stats().disconnects.done == 1);
  CHECK(eventually([&] { return b.stats().channels_current == 0; }));
}

TEST_CASE("a zero-length first frame closes the connection cleanly, subscribing to nothing") {
  running_broker b;
  client c(b.port());
  c.send_frame("");
  CHECK(closed_with_fin(c.fd(), 5000ms));
  CHECK(eventually([&] { return b.stats().connections_current == 0; }));
  CHECK(b.stats().disconnects.done == 1);
  CHECK(eventually([&] { return b.stats().subscribers_current == 0; }));
  CHECK(eventually([&] { return b.stats().channels_current == 0; }));
}

TEST_CASE("a zero-length data frame is delivered as a zero-length frame") {
  running_broker b;
  client topic(b.port()), queue(b.port()), pub(b.port());
  topic.send_frame("/topic/z");
  queue.send_frame("/queue/z");
  pub.send_frame("/null");
  REQUIRE(b.wait_subscribers(3));
  std::string out;
  append_frame(out, "/topic/z");
  append_frame(out, "");
  append_frame(out, "/queue/z");
  append_frame(out, "");
  append_frame(out, "/topic/z");
  append_frame(out, "after");
  pub.send_raw(out);
  CHECK(topic.read_frame() == std::optional<std::string>(""));
  CHECK(topic.read_frame() == "after");
  CHECK(queue.read_frame() == std::optional<std::string>(""));
  CHECK(b.stats().deliveries == 3);
}

TEST_CASE("channels match by exact name: /topic, /topicfoo, /topic/a, /topic/ab are separate") {
  running_broker b;
  const std::vector<std::string> names = {"/topic",    "/topicfoo", "/topic/a",
                                          "/topic/ab", "/queue",    "/queuefoo"};
  std::vector<std::unique_ptr<client>> subs;
  for (const auto& n : names) {
    subs.push_back(std::make_unique<client>(b.port()));
    subs.back()->send_frame(n);
  }
  client pub(b.port());
  pub.send_frame("/null");
  REQUIRE(b.wait_subscribers(names.size() + 1));
  std::string out;
  for (const auto& n : names) {
    append_frame(out, n);
    append_frame(out, "for " + n);
  }
  pub.send_raw(out);
  for (std::size_t i = 0; i < names.size(); ++i) {
    CAPTURE(names[i]);
    CHECK(subs[i]->read_frame() == "for " + names[i]);
    CHECK_FALSE(subs[i]->read_frame(50ms)); // nothing meant for a name it merely prefixes
  }
  CHECK(b.stats().channels_current == names.size() + 1);
}

TEST_CASE("at max_channels a subscribe to a new channel is closed and a new /queue dropped") {
  auto cfg = test_config();
  cfg.max_channels = 3;
  running_broker b(cfg);
  client a(b.port());
  a.send_frame("/topic/a");
  client pub(b.port());
  pub.send_frame("/null");
  REQUIRE(b.wait_subscribers(2));
  publish_many(pub, "/queue/kept", 1); // the third channel: a backlog
  REQUIRE(eventually([&] { return b.stats().backlog_messages == 1; }));
  publish_many(pub, "/queue/refused", 5);
  REQUIRE(eventually([&] { return b.stats().drops.channel_limit == 5; }));
  client extra(b.port());
  extra.send_frame("/topic/new");
  CHECK(extra.wait_closed());
  CHECK(eventually([&] { return b.stats().disconnects.channel_limit == 1; }));
  CHECK(eventually([&] { return b.stats().channels_current == 3; }));
  // Existing channels keep working at the limit.
  client late(b.port());
  late.send_frame("/queue/kept");
  CHECK(late.read_frame() == msg(0));
  pub.publish("/topic/a", "still fine");
  CHECK(a.read_frame() == "still fine");
}

TEST_CASE("backlogs spread over many /queue channels stop at the broker-wide cap") {
  auto cfg = test_config();
  cfg.backlog_total_max_bytes = 64 * 1024;
  running_broker b(cfg);
  client pub(b.port());
  pub.send_frame("/null");
  // One 1000-byte message to each of 1000 channels: 1 MB if nothing capped the sum.
  const int channels = 1000;
  std::string out;
  for (int i = 0; i < channels; ++i)
    append_message(out, "/queue/h" + std::to_string(i), i, 1000);
  // Non-blocking: whatever the kernel does not take once the broker pauses stays unsent.
  ::fcntl(pub.fd(), F_SETFL, ::fcntl(pub.fd(), F_GETFL) | O_NONBLOCK);
  for (std::size_t off = 0; off < out.size();) {
    const auto n = ::send(pub.fd(), out.data() + off, out.size() - off, MSG_NOSIGNAL);
    if (n <= 0)
      break;
    off += static_cast<std::size_t>(n);
  }
  REQUIRE(eventually([&] { return b.stats().publishers_paused == 1; }));
  // The pause is counted before the paused run's messages_in: wait until every message read is
  // counted, all of them in backlogs (paused, nothing dropped).
  REQUIRE(eventually([&] {
    const auto now = b.stats();
    return now.messages_in == now.backlog_messages;
  }));
  const auto s = b.stats();
  CHECK(s.backlog_bytes <= cfg.backlog_total_max_bytes);
  CHECK(s.backlog_messages > 10);
  CHECK(s.messages_in == s.backlog_messages); // paused, nothing dropped
  // /null, one channel per backlogged message, and the one the paused publisher waits on.
  CHECK(s.channels_current == s.backlog_messages + 2);
  // In-process publishes cannot wait: dropped, and they leave no empty channel behind.
  b.srv().publish("/queue/inproc", std::string(1000, 'i'));
  REQUIRE(eventually([&] { return b.stats().drops.backlog_full == 1; }));
  // The drop is counted before its channel is erased.
  CHECK(eventually([&] { return b.stats().channels_current == s.channels_current; }));
  // Draining one channel makes room: the publisher resumes and takes the next message.
  client sub(b.port());
  sub.send_frame("/queue/h0");
  CHECK(strip(sub.read_frame().value_or("")) == msg(0));
  CHECK(eventually([&] { return b.stats().messages_in > s.messages_in; }));
  CHECK(eventually([&] { return b.stats().publishers_paused == 1; })); // paused again
  CHECK(b.stats().backlog_bytes <= cfg.backlog_total_max_bytes);
}

TEST_CASE("in-process publish checks the channel name like the network path") {
  auto cfg = test_config();
  cfg.max_channel_name = 16;
  running_broker b(cfg);
  CHECK_THROWS_AS(b.srv().publish(std::string(17, 'x'), "data"), std::length_error);
  CHECK_THROWS_AS(b.srv().publish("", "data"), std::invalid_argument);
  CHECK_NOTHROW(b.srv().publish(std::string(16, 'x'), "data"));
  CHECK(eventually([&] { return b.stats().drops.no_subscriber == 1; }));
  CHECK(b.stats().messages_in == 1);
}

TEST_CASE("graceful shutdown delivers what is queued to a live subscriber, then closes") {
  running_broker b;
  client slow(b.port(), 8192);
  slow.send_frame("/topic/s");
  client pub(b.port());
  pub.send_frame("/null");
  REQUIRE(b.wait_subscribers(2));
  const int total = 3000;
  publish_many(pub, "/topic/s", total, 1000);
  REQUIRE(eventually([&] { return b.stats().messages_in == total; }));
  REQUIRE(b.stats().queued_bytes > 0); // the kernel buffers are full, the rest is queued
  bool finished = false;
  std::thread stopper([&] { finished = b.shutdown(5000ms); });
  for (int i = 0; i < total; ++i) {
    const auto m = slow.read_frame();
    REQUIRE(m);
    REQUIRE(strip(*m) == msg(i));
  }
  CHECK(slow.wait_closed());
  stopper.join();
  CHECK(finished);
  CHECK(b.stats().connections_current == 0);
  CHECK(b.stats().drops.disconnected == 0);
}

TEST_CASE("graceful shutdown gives up on a subscriber that never reads at the deadline") {
  auto cfg = test_config();
  cfg.shutdown_deadline = 300ms;
  running_broker b(cfg);
  client stuck(b.port(), 4096);
  stuck.send_frame("/topic/x");
  client pub(b.port());
  pub.send_frame("/null");
  REQUIRE(b.wait_subscribers(2));
  publish_many(pub, "/topic/x", 2000, 1000);
  REQUIRE(eventually([&] { return b.stats().queued_bytes > 0; }));
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(b.shutdown(3000ms));
  CHECK(std::chrono::steady_clock::now() - t0 < 2000ms);
  CHECK(b.stats().disconnects.shutdown == 2);
  CHECK(b.stats().connections_current == 0);
}

TEST_CASE("messages published in-process reach network subscribers; stats are JSON") {
  running_broker b;
  client c(b.port());
  c.send_frame("/topic/headlines");
  REQUIRE(b.wait_subscribers(1));
  std::thread other([&] { b.srv().publish("/topic/headlines", "from another thread"); });
  other.join();
  CHECK(c.read_frame() == "from another thread");
  const nlohmann::json j = b.stats();
  CHECK(j.at("messages_in") == 1);
  CHECK(j.at("deliveries") == 1);
  CHECK(j.at("subscribers_current") == 1);
}

TEST_CASE("connections above max_connections, all identified, are closed, counted and logged") {
  newsdesk::testing::log_capture log;
  auto cfg = test_config();
  cfg.max_connections = 5;
  running_broker b(cfg);
  std::vector<std::unique_ptr<client>> cs;
  for (int i = 0; i < 5; ++i) {
    cs.push_back(std::make_unique<client>(b.port()));
    cs.back()->send_frame("/topic/full");
  }
  REQUIRE(b.wait_subscribers(5));
  client extra(b.port());
  CHECK(extra.wait_closed());
  client another(b.port());
  CHECK(another.wait_closed());
  CHECK(b.stats().connections_rejected == 2);
  CHECK(b.stats().disconnects.unidentified_limit == 0);
  // One line for the burst (the second refusal waits for the next line, at most 5 s later).
  const auto lines = log.lines_with("broker: connections refused");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("level=warn") != std::string::npos);
  CHECK(lines[0].find("refused=1") != std::string::npos);
  CHECK(lines[0].find("max_connections=5") != std::string::npos);
}

TEST_CASE("listen reports an address in use as an error") {
  running_broker b;
  auto cfg = test_config();
  cfg.port = b.port();
  boost::asio::io_context ioc;
  server second(ioc, cfg);
  boost::system::error_code ec;
  second.listen(ec);
  CHECK(ec);
  server third(ioc, cfg);
  CHECK_THROWS_AS(third.listen(), std::system_error);
}

TEST_CASE("thousands of concurrent connections each receive a fan-out message") {
  constexpr int n = 3000;
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  const rlim_t want = 2 * n + 200;
  if (rl.rlim_cur < want) {
    rl.rlim_cur = std::min<rlim_t>(want, rl.rlim_max);
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
  }
  if (rl.rlim_cur < want) {
    MESSAGE("skipped: RLIMIT_NOFILE is " << rl.rlim_cur << ", need " << want);
    return;
  }
  running_broker b(test_config(), 2);
  std::vector<std::unique_ptr<client>> cs;
  cs.reserve(n);
  for (int i = 0; i < n; ++i) {
    cs.push_back(std::make_unique<client>(b.port()));
    cs.back()->send_frame("/topic/many");
  }
  REQUIRE(b.wait_subscribers(n, 10000ms));
  b.srv().publish("/topic/many", "hello all");
  int got = 0;
  for (auto& c : cs)
    got += c->read_frame() == std::optional<std::string>("hello all") ? 1 : 0;
  CHECK(got == n);
  cs.clear();
  CHECK(eventually([&] { return b.stats().connections_current == 0; }, 10000ms));
  CHECK(eventually([&] { return b.stats().channels_current == 0; }));
}

// ---------------------------------------------------------------------------------------------
// In-process subscribers (server::subscribe)

namespace {

// Collects what an in-process subscriber is handed, for a test thread to wait on.
class inbox {
 public:
  message_handler handler() {
    return [this](message_ptr m) {
      std::lock_guard lock(mutex_);
      got_.push_back(*m);
      changed_.notify_all();
    };
  }

  // True once at least `n` messages arrived within `timeout`.
  bool wait_for(std::size_t n, std::chrono::milliseconds timeout = 5000ms) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return got_.size() >= n; });
  }

  std::vector<std::string> messages() {
    std::lock_guard lock(mutex_);
    return got_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::string> got_;
};

std::vector<std::string> expected(int from, int to) {
  std::vector<std::string> out;
  for (int i = from; i < to; ++i)
    out.push_back(msg(i));
  return out;
}

} // namespace

TEST_CASE("an in-process subscriber gets its channel's messages from publish() and the network, "
          "in order") {
  running_broker b;
  inbox in;
  auto sub = b.srv().subscribe("/topic/news", in.handler());
  CHECK(sub.active());
  for (int i = 0; i < 100; ++i)
    b.srv().publish("/topic/news", msg(i));
  b.srv().publish("/topic/other", "not for it");
  REQUIRE(in.wait_for(100));
  CHECK(b.stats().subscribers_current == 1);

  client pub(b.port());
  pub.send_frame("/null");
  std::string out;
  for (int i = 100; i < 300; ++i) {
    append_message(out, "/topic/news", i, 0);
    append_message(out, "/topic/other", i, 0);
  }
  pub.send_raw(out);
  REQUIRE(in.wait_for(300));
  b.srv().publish("/topic/news", msg(300));
  REQUIRE(in.wait_for(301));
  CHECK(in.messages() == expected(0, 301));
  CHECK(b.stats().deliveries == 301);
}

TEST_CASE("a publish() right after subscribe() returns is delivered, with no wait in between") {
  running_broker b(test_config(), 2);
  inbox in;
  std::vector<subscription> subs;
  for (int i = 0; i < 200; ++i) {
    subs.push_back(b.srv().subscribe("/topic/race" + std::to_string(i), in.handler()));
    b.srv().publish("/topic/race" + std::to_string(i), msg(i));
  }
  REQUIRE(in.wait_for(200));
  CHECK(in.messages() == expected(0, 200));
  CHECK(b.stats().drops.no_subscriber == 0);
}

TEST_CASE("subscribe() before the io_context runs takes effect before publishes queued after it") {
  // The embedding server subscribes while it starts, before any thread runs the io_context.
  boost::asio::io_context ioc;
  server srv(ioc, test_config());
  std::vector<std::string> got;
  auto sub = srv.subscribe("/topic/early", [&](message_ptr m) { got.push_back(*m); });
  srv.publish("/topic/early", "first");
  ioc.poll();
  CHECK(got == std::vector<std::string>{"first"});
  CHECK(srv.stats().subscribers_current == 1);
}

TEST_CASE("after cancel() or destruction an in-process subscriber gets nothing more, and its "
          "channel goes") {
  running_broker b;
  inbox cancelled, destroyed, witness;
  auto a = b.srv().subscribe("/topic/c", cancelled.handler());
  std::optional<subscription> d = b.srv().subscribe("/topic/c", destroyed.handler());
  auto w = b.srv().subscribe("/topic/c", witness.handler());
  b.srv().publish("/topic/c", msg(0));
  REQUIRE(witness.wait_for(1));
  REQUIRE(b.wait_subscribers(3));

  a.cancel();
  CHECK_FALSE(a.active());
  a.cancel(); // idempotent
  d.reset();
  b.srv().publish("/topic/c", msg(1));
  client pub(b.port());
  pub.send_frame("/null");
  pub.publish("/topic/c", msg(2));
  // The witness is served in the same loop the others would have been: once it has m2, they
  // would have too.
  REQUIRE(witness.wait_for(3));
  CHECK(witness.messages() == expected(0, 3));
  CHECK(cancelled.messages() == expected(0, 1));
  CHECK(destroyed.messages() == expected(0, 1));
  CHECK(b.wait_subscribers(2)); // the witness and the network client

  w.cancel();
  CHECK(b.wait_subscribers(1));
  CHECK(eventually([&] { return b.stats().channels_current == 1; })); // only /null remains
}

TEST_CASE("a handler may cancel its own subscription: later messages of the same run skip it") {
  running_broker b;
  std::vector<std::string> got; // written on the broker's strand only, read after it is done
  subscription sub;
  inbox witness;
  sub = b.srv().subscribe("/topic/self", [&](message_ptr m) {
    got.push_back(*m);
    if (got.size() == 3)
      sub.cancel(); // on the strand: must not wait for itself
  });
  auto w = b.srv().subscribe("/topic/self", witness.handler());
  client pub(b.port());
  pub.send_frame("/null");
  publish_many(pub, "/topic/self", 10);
  REQUIRE(witness.wait_for(10));
  CHECK(got == expected(0, 3));
  CHECK(b.wait_subscribers(2));
}

TEST_CASE("cancel() on another thread returns only after a handler call under way has ended") {
  running_broker b;
  subscription sub;
  std::atomic<bool> cancelling{false};
  std::atomic<bool> cancel_returned{false};
  std::atomic<bool> returned_during_call{false};
  std::promise<void> entered;
  sub = b.srv().subscribe("/topic/slow", [&](message_ptr) {
    entered.set_value();
    // The canceller is about to call cancel(); had cancel() not waited for this call, it would
    // return well within this window.
    // (A canceller that never started fails the check below too.)
    const bool canceller_started = eventually([&] { return cancelling.load(); });
    returned_during_call =
        !canceller_started || eventually([&] { return cancel_returned.load(); }, 300ms);
  });
  b.srv().publish("/topic/slow", "one");
  REQUIRE(entered.get_future().wait_for(5s) == std::future_status::ready);
  std::thread canceller([&] {
    cancelling = true;
    sub.cancel();
    cancel_returned = true;
  });
  canceller.join();
  CHECK(cancel_returned);
  CHECK_FALSE(returned_during_call);
}

TEST_CASE("a handler that throws is logged; it and the others still get later messages") {
  running_broker b;
  int thrown = 0; // strand only
  inbox other;
  auto bad = b.srv().subscribe("/topic/t", [&](message_ptr) {
    ++thrown;
    throw std::runtime_error("handler failure (expected by the test)");
  });
  auto good = b.srv().subscribe("/topic/t", other.handler());
  b.srv().publish("/topic/t", msg(0));
  b.srv().publish("/topic/t", msg(1));
  REQUIRE(other.wait_for(2));
  CHECK(other.messages() == expected(0, 2));
  CHECK(thrown == 2);
}

TEST_CASE("in-process subscribe refuses /queue channels and the names publish() refuses") {
  auto cfg = test_config();
  cfg.max_channel_name = 16;
  running_broker b(cfg);
  auto nothing = [](message_ptr) {};
  CHECK_THROWS_AS((void)b.srv().subscribe("/queue/jobs", nothing), std::invalid_argument);
  CHECK_THROWS_AS((void)b.srv().subscribe("", nothing), std::invalid_argument);
  CHECK_THROWS_AS((void)b.srv().subscribe(std::string(17, 'x'), nothing), std::length_error);
  CHECK_THROWS_AS((void)b.srv().subscribe("/topic/x", nullptr), std::invalid_argument);
  CHECK(b.stats().subscribers_current == 0);
}

TEST_CASE("shutdown drops in-process subscribers: their handlers are released, never called "
          "again") {
  running_broker b;
  auto token = std::make_shared<int>(0); // captured by the handler: gone once it is released
  std::weak_ptr<int> watch = token;
  inbox in;
  auto sub = b.srv().subscribe("/topic/s", [token, h = in.handler()](message_ptr m) { h(m); });
  token.reset();
  b.srv().publish("/topic/s", msg(0));
  REQUIRE(in.wait_for(1));
  client pub(b.port());
  pub.send_frame("/null");
  REQUIRE(b.wait_subscribers(2));

  REQUIRE(b.shutdown(5000ms));
  CHECK_FALSE(sub.active());
  CHECK(watch.expired());
  CHECK(b.stats().subscribers_current == 0);
  b.srv().publish("/topic/s", msg(1));
  CHECK(eventually([&] { return b.stats().drops.shutdown == 1; }));
  CHECK(in.messages() == expected(0, 1));
  auto late = b.srv().subscribe("/topic/s", in.handler());
  CHECK(eventually([&] { return !late.active(); }));
  sub.cancel(); // after the shutdown: harmless
}

TEST_CASE("network clients may not publish to a reserved prefix; the process itself may") {
  running_broker b; // reserved_prefixes defaults to /topic/headlines
  inbox in;
  auto sub = b.srv().subscribe("/topic/headlines", in.handler());
  client reader(b.port());
  reader.send_frame("/topic/headlines"); // reading is open to anyone
  REQUIRE(b.wait_subscribers(2));
  client forger(b.port());
  forger.send_frame("/null");
  forger.publish("/topic/headlines", "FORGED: log in again here");
  CHECK(forger.wait_closed());
  CHECK(b.stats().disconnects.reserved_channel == 1);
  b.srv().publish("/topic/headlines", "genuine");
  REQUIRE(in.wait_for(1));
  CHECK(in.messages() == std::vector<std::string>{"genuine"});
  CHECK(reader.read_frame() == "genuine");
  // Other channels are open as before.
  client other(b.port());
  other.send_frame("/null");
  other.publish("/topic/headlines-extra-not", "x"); // a prefix match is reserved too
  CHECK(other.wait_closed());
  client fine(b.port());
  fine.send_frame("/null");
  fine.publish("/topic/chat", "hello");
  CHECK_FALSE(fine.wait_closed(200ms));
}

TEST_CASE("with a token, a client's first frame must be it") {
  auto cfg = test_config();
  cfg.token = "s3cret-token";
  running_broker b(cfg);
  client wrong(b.port());
  wrong.send_frame("/topic/a"); // a subscribe without the token
  CHECK(wrong.wait_closed());
  client guess(b.port());
  guess.send_frame("s3cret-tokeX");
  CHECK(guess.wait_closed());
  CHECK(b.stats().disconnects.auth_failed == 2);
  client sub(b.port());
  sub.send_raw(encode_frame("s3cret-token") + encode_frame("/topic/a"));
  REQUIRE(b.wait_subscribers(1));
  client pub(b.port());
  pub.send_frame("s3cret-token");
  pub.send_frame("/null");
  pub.publish("/topic/a", "authorised");
  CHECK(sub.read_frame() == "authorised");
}

TEST_CASE("a /queue backlog nobody subscribes to expires and frees its channel") {
  auto cfg = test_config();
  cfg.backlog_ttl = 200ms;
  running_broker b(cfg);
  client pub(b.port());
  pub.send_frame("/null");
  publish_many(pub, "/queue/nobody", 10);
  REQUIRE(eventually([&] { return b.stats().backlog_messages == 10; }));
  const auto with = b.stats().channels_current;
  REQUIRE(eventually([&] { return b.stats().drops.expired == 10; }, 5000ms));
  // The counters are separate relaxed atomics: each is waited for, none assumed to follow another.
  CHECK(eventually([&] { return b.stats().backlog_messages == 0; }));
  CHECK(eventually([&] { return b.stats().backlog_bytes == 0; }));
  CHECK(eventually([&] { return b.stats().channels_current == with - 1; }));
  // A backlog whose subscriber comes in time is delivered, not expired.
  publish_many(pub, "/queue/soon", 3);
  client late(b.port());
  late.send_frame("/queue/soon");
  CHECK(late.read_frame() == msg(0));
}

TEST_CASE("one connection may create only max_channels_per_connection channels; in-process "
          "subscribers always find room") {
  auto cfg = test_config();
  cfg.max_channels_per_connection = 3;
  cfg.max_channels = 6;
  running_broker b(cfg);
  client pub(b.port());
  pub.send_frame("/null");
  for (int i = 0; i < 3; ++i)
    publish_many(pub, "/queue/name" + std::to_string(i), 1);
  REQUIRE(eventually([&] { return b.stats().backlog_messages == 3; }));
  publish_many(pub, "/queue/name3", 1);
  CHECK(pub.wait_closed());
  CHECK(b.stats().disconnects.channel_limit == 1);
  // Fill the table from other connections, then subscribe in process: it still gets in.
  client more(b.port());
  more.send_frame("/null");
  publish_many(more, "/queue/more0", 1);
  publish_many(more, "/queue/more1", 1);
  REQUIRE(eventually([&] { return b.stats().channels_current >= 6; }));
  inbox in;
  auto sub = b.srv().subscribe("/topic/relay", in.handler());
  b.srv().publish("/topic/relay", "through");
  CHECK(in.wait_for(1));
}

// The standalone newsdesk-broker binary: port 0, the "listening on" line, SIGTERM shutdown.

#include <doctest/doctest.h>

#include <csignal>
#include <cstdio>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "support.hpp"
#include "tests/support/test_paths.hpp"

using namespace newsdesk::broker::test;

namespace {

struct child {
  pid_t pid = -1;
  FILE* out = nullptr;
  ~child() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    if (out)
      std::fclose(out);
  }
};

// Waits for the child to exit; its exit status, or -1 on timeout.
int wait_exit(child& c, std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    int status = 0;
    if (::waitpid(c.pid, &status, WNOHANG) == c.pid) {
      c.pid = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(10ms);
  }
  return -1;
}

void spawn(child& c, std::vector<std::string> args) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  c.pid = ::fork();
  REQUIRE(c.pid >= 0);
  if (c.pid == 0) {
    ::dup2(fds[1], 1);
    ::close(fds[0]);
    ::close(fds[1]);
    std::vector<char*> argv;
    std::string bin = NEWSDESK_BINARY;
    argv.push_back(bin.data());
    for (auto& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  c.out = ::fdopen(fds[0], "r");
}

std::string label(int i) {
  std::string s = "m";
  s += std::to_string(i);
  return s;
}

} // namespace

TEST_CASE("newsdesk-broker prints its port, serves clients and stops on SIGTERM") {
  child c;
  spawn(c, {"--listen", "127.0.0.1:0"});
  char line[256] = {};
  REQUIRE(std::fgets(line, sizeof line, c.out) != nullptr);
  const std::string l = line;
  REQUIRE(l.rfind("listening on 127.0.0.1:", 0) == 0);
  const auto port = static_cast<std::uint16_t>(std::stoi(l.substr(l.rfind(':') + 1)));
  REQUIRE(port != 0);

  client sub(port);
  sub.send_frame("/topic/a");
  client pub(port);
  pub.send_frame("/null");
  // No stats over the wire: retry until the subscription is registered.
  std::optional<std::string> got;
  for (int i = 0; i < 100 && !got; ++i) {
    pub.publish("/topic/a", "ping");
    got = sub.read_frame(50ms);
  }
  CHECK(got == "ping");

  ::kill(c.pid, SIGTERM);
  CHECK(wait_exit(c, 5000ms) == 0);
  CHECK(sub.wait_closed());
}

TEST_CASE("newsdesk-broker exits non-zero with a message when it cannot listen") {
  running_broker b;
  child c;
  spawn(c, {"--listen", "127.0.0.1:" + std::to_string(b.port())});
  CHECK(wait_exit(c, 5000ms) == 2);
}

TEST_CASE("newsdesk-broker rejects a config file with an unknown key") {
  const std::string path = "broker_main_test.json";
  std::ofstream(path) << R"({"no_such_key": 1})";
  child c;
  spawn(c, {"--config", path});
  CHECK(wait_exit(c, 5000ms) == 1);
  std::remove(path.c_str());
}

TEST_CASE("newsdesk-broker on SIGTERM delivers what is queued for a slow subscriber, then exits") {
  // A small send buffer so most of what the subscriber is owed waits in the broker's queue,
  // not in the kernel, when SIGTERM arrives.
  const std::string path = "broker_main_test_sigterm.json";
  std::ofstream(path) << R"({"send_buffer_bytes": 16384})";
  child c;
  spawn(c, {"--listen", "127.0.0.1:0", "--config", path});
  char line[256] = {};
  REQUIRE(std::fgets(line, sizeof line, c.out) != nullptr);
  std::remove(path.c_str());
  const std::string l = line;
  const auto port = static_cast<std::uint16_t>(std::stoi(l.substr(l.rfind(':') + 1)));

  client slow(port, 4096);
  slow.send_frame("/topic/s");
  client pub(port);
  pub.send_frame("/null");
  std::optional<std::string> got;
  for (int i = 0; i < 100 && !got; ++i) {
    pub.publish("/topic/s", "ping");
    got = slow.read_frame(50ms);
  }
  REQUIRE(got == "ping");
  while (slow.read_frame(100ms)) // pings sent before the first one arrived
    ;

  // 3 MB for a reader with a 4 KiB receive buffer, then "done": the broker closes the
  // publisher only after it has read (and queued) every message before the zero-length frame.
  const int total = 3000;
  std::string out;
  for (int i = 0; i < total; ++i) {
    newsdesk::broker::append_frame(out, "/topic/s");
    std::string m = label(i);
    m.resize(1000, '.');
    newsdesk::broker::append_frame(out, m);
  }
  newsdesk::broker::append_frame(out, "");
  pub.send_raw(out);
  REQUIRE(pub.wait_closed());

  ::kill(c.pid, SIGTERM);
  for (int i = 0; i < total; ++i) {
    const auto m = slow.read_frame();
    REQUIRE(m);
    REQUIRE(m->substr(0, m->find('.')) == label(i));
  }
  CHECK(slow.wait_closed());
  CHECK(wait_exit(c, 5000ms) == 0);
}

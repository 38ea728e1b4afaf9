// What the cluster benchmark's measurements share (cluster_bench.cpp, cluster_faults.cpp): the
// instances' config and start, percentiles, an SSE reader, a LISTEN on the store's channel, and
// sites whose pages keep changing.
#pragma once

#include "tests/support/harness.hpp"
#include "tests/support/http_get.hpp"
#include "tests/support/postgres_cluster.hpp"

#include <libpq-fe.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace newsdesk::bench {

using namespace newsdesk::testing;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

inline json config_for(const splash_standin& splash, json sites, json refresh = json::object()) {
  json r = {{"jitter", 0}, {"manual_min_interval", 0}};
  r.update(refresh);
  return json{{"splash_url", splash.base_url()},
              {"refresh", r},
              {"access_log", false},
              {"sites", std::move(sites)}};
}

inline std::unique_ptr<newsdesk_process> start_instance(const json& config,
                                                        const std::string& store) {
  auto nd = std::make_unique<newsdesk_process>(config, std::vector<std::string>{"--store", store});
  if (nd->port == 0)
    throw std::runtime_error("newsdesk did not start:\n" + nd->log());
  return nd;
}

inline double percentile(std::vector<double> v, double p) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  auto index = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(index, v.size() - 1)];
}

inline double median(std::vector<double> v) {
  return percentile(std::move(v), 0.5);
}

// A minimal SSE reader: collects bytes, no parsing beyond finding text.
struct stream_reader {
  int fd;
  std::string received;
  explicit stream_reader(unsigned short port) {
    fd = connect_loopback(port);
    if (fd < 0)
      throw std::runtime_error("cannot connect for /events");
    std::string request = "GET /events HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n";
    ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  }
  ~stream_reader() { ::close(fd); }
  void read_some() {
    char buf[65536];
    auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0)
      throw std::runtime_error("the /events stream closed");
    received.append(buf, static_cast<std::size_t>(n));
  }
};

// A connection LISTENing on the store's event channel, as the instances do.
inline PGconn* listen_to_events(const std::string& store) {
  PGconn* listen = PQconnectdb(store.c_str());
  if (PQstatus(listen) != CONNECTION_OK)
    throw std::runtime_error(std::string("cannot connect: ") + PQerrorMessage(listen));
  PQclear(PQexec(listen, "LISTEN newsdesk_events"));
  return listen;
}

// Sites whose pages gain a story every `every` (a thread moves them on), so that each refresh
// of them commits something the other instances apply.
class changing_sites {
 public:
  changing_sites(splash_standin& splash, int count, std::chrono::milliseconds every)
      : splash_(splash) {
    for (int i = 0; i < count; ++i) {
      const auto name = "bg" + std::to_string(i);
      urls_.push_back("https://" + name + ".cnn.com/");
      sites_.push_back(site(name, "cnn", urls_.back()));
    }
    move_on();
    mover_ = std::thread([this, every] {
      while (!stop_) {
        for (auto left = every; left.count() > 0 && !stop_; left -= 50ms)
          std::this_thread::sleep_for(50ms);
        move_on();
      }
    });
  }
  ~changing_sites() {
    stop_ = true;
    mover_.join();
  }
  // The sites, each with `interval` seconds.
  json sites(int interval) const {
    json out = sites_;
    for (auto& s : out)
      s["interval"] = interval;
    return out;
  }

 private:
  // Each page: its 30 newest stories.
  void move_on() {
    ++round_;
    for (std::size_t i = 0; i < urls_.size(); ++i) {
      std::vector<std::pair<std::string, std::string>> stories;
      for (int k = round_; k > std::max(0, round_ - 30); --k)
        stories.push_back({"/" + std::to_string(i) + "/" + std::to_string(k) + "/index.html",
                           "Site " + std::to_string(i) + " story " + std::to_string(k) +
                               " about the harbour bridge vote"});
      splash_.set(urls_[i], standin_page::page(cnn_page(stories)));
    }
  }
  splash_standin& splash_;
  std::vector<std::string> urls_;
  json sites_ = json::array();
  int round_ = 0;
  std::atomic<bool> stop_{false};
  std::thread mover_;
};

// Measurements of a cluster's faults and readers (cluster_faults.cpp).
// PostgreSQL frozen (SIGSTOP) `freezes` times for `seconds` behind HAProxy as shipped.
void frozen_database(postgres_cluster& pg, const std::string& haproxy, int freezes, int seconds);
// An instance killed and started afresh behind HAProxy, `trials` times.
void fresh_start(postgres_cluster& pg, const std::string& haproxy, int trials);
// `readers` /events streams through HAProxy on three instances; commit -> frame over `rounds`.
void many_readers(postgres_cluster& pg, const std::string& haproxy, int readers, int rounds);

} // namespace newsdesk::bench

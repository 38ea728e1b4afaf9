// What the cluster tests share (cluster_test.cpp, cluster_outage_test.cpp): an instance on a
// shared store, its configuration, HAProxy in front of instances as deploy/haproxy-cluster.cfg
// checks them, and what an instance shows.
#pragma once

#include "tests/support/harness.hpp"
#include "tests/support/http_get.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace newsdesk::testing {

inline json cluster_config(const splash_standin& splash, json sites, json refresh) {
  json r = {{"jitter", 0}, {"manual_min_interval", 0}, {"cold_start_wait", 5}};
  if (refresh.is_object())
    r.update(refresh);
  return json{{"splash_url", splash.base_url()}, {"refresh", r}, {"sites", std::move(sites)}};
}

inline std::unique_ptr<newsdesk_process> instance(const json& config, const std::string& store) {
  auto nd = std::make_unique<newsdesk_process>(config, std::vector<std::string>{"--store", store});
  REQUIRE_MESSAGE(nd->port != 0, nd->log());
  return nd;
}

inline std::set<std::string> titles(unsigned short port) {
  std::set<std::string> out;
  const auto news = news_json(port); // kept: a range-for over a temporary's member dangles
  for (const auto& h : news.at("headlines"))
    out.insert(h.at("title").get<std::string>());
  return out;
}

// HAProxy in front of `ports` as deploy/haproxy-cluster.cfg checks them (GET /readyz, 200
// expected, two failures mark one down, two successes up), checking every `check_every` so that
// a wrong 503 shows within a test's outage.
struct load_balancer {
  temp_dir dir;
  unsigned short port = unused_port();
  std::unique_ptr<child_process> process;

  load_balancer(const std::vector<unsigned short>& ports, const std::string& check_every) {
    std::string cfg = "global\n    maxconn 256\ndefaults\n    mode http\n"
                      "    timeout connect 2s\n    timeout client 10s\n"
                      "    timeout server 10s\n    retries 2\n    option redispatch\n"
                      "frontend in\n    bind 127.0.0.1:" +
                      std::to_string(port) +
                      "\n    default_backend newsdesk\nbackend newsdesk\n"
                      "    balance leastconn\n    option httpchk\n"
                      "    http-check send meth GET uri /readyz\n"
                      "    http-check expect status 200\n"
                      "    default-server check inter " +
                      check_every + " fall 2 rise 2\n";
    for (auto p : ports)
      cfg += "    server n" + std::to_string(p) + " 127.0.0.1:" + std::to_string(p) + "\n";
    const auto haproxy = fs::exists("/usr/sbin/haproxy") ? "/usr/sbin/haproxy" : "haproxy";
    process = std::make_unique<child_process>(
        haproxy, std::vector<std::string>{"-f", dir.write("haproxy.cfg", cfg), "-db"},
        std::vector<std::string>{}, (dir.path / "haproxy.log").string());
    REQUIRE_MESSAGE(eventually([&] { return http_get(port, "/news").status == 200; }),
                    ("HAProxy did not answer (scripts/setup installs it): " + log()));
  }
  std::string log() const { return read_file((dir.path / "haproxy.log").string()); }
};

// The sockets `pid` holds to `port` that the other side has closed (CLOSE_WAIT in
// /proc/net/tcp), found by their inodes among its descriptors.
inline std::size_t closed_by_peer(int pid, unsigned short port) {
  std::set<std::string> inodes;
  std::error_code ec;
  for (const auto& fd : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    const auto target = fs::read_symlink(fd.path(), ec).string();
    if (target.rfind("socket:[", 0) == 0)
      inodes.insert(target.substr(8, target.size() - 9));
  }
  std::ifstream tcp("/proc/net/tcp");
  std::string line;
  std::getline(tcp, line); // the header
  std::size_t n = 0;
  char port_hex[8];
  std::snprintf(port_hex, sizeof port_hex, "%04X", port);
  while (std::getline(tcp, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
    fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
        timeout >> inode;
    if (state == "08" && remote.substr(remote.find(':') + 1) == port_hex && inodes.count(inode))
      ++n;
  }
  return n;
}

} // namespace newsdesk::testing

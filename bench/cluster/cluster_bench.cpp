// newsdesk instances sharing one PostgreSQL store, measured on this machine: a throwaway
// PostgreSQL (tests/support/postgres_cluster), the Splash stand-in counting renders, the real
// newsdesk binary, HAProxy and wrk. The figures (run.sh prints how it was called):
//   1. renders per site per interval with three instances (goal exactly 1; three uncoordinated
//      instances would make 3), and how the renders were shared among them (goal: each a part);
//   2. propagation: from a refresh's commit (this program LISTENs on the store's channel too,
//      so "commit" is when PostgreSQL delivered the notification here) to the SSE frame on
//      another instance, p50 and p99 (goal p99 <= 100 ms);
//   3. takeover: SIGKILL of the instance rendering a site, until another instance renders it
//      (goal <= lease + 1 s);
//   4. /news requests/s through HAProxy with three instances against one instance alone;
//   5. a busy cluster (busy_cluster): /news p99 with refreshes against none, commit -> frame
//      among background refreshes, and a PostgreSQL outage behind HAProxy;
//   6. faults and readers behind HAProxy as shipped (cluster_faults.cpp): PostgreSQL frozen
//      (SIGSTOP), an instance killed and started afresh, and 2,000 /events readers.
#include "bench/cluster/cluster_support.hpp"

#include <libpq-fe.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <thread>

using namespace newsdesk::bench;

namespace {

// 1. Three instances, four sites on a 2 s interval: renders counted over a 20 s window.
void renders_per_interval(postgres_cluster& pg) {
  splash_standin splash;
  json sites = json::array();
  for (const char* name : {"a", "b", "c", "d"}) {
    auto url = std::string("https://") + name + ".cnn.com/";
    splash.set(url,
               standin_page::page(cnn_page({{"/1/index.html", std::string("Story ") + name}})));
    sites.push_back(site(name, "cnn", url, {{"interval", 2}}));
  }
  const auto store = pg.fresh_database();
  auto config = config_for(splash, sites);
  std::vector<std::unique_ptr<newsdesk_process>> nds;
  for (int i = 0; i < 3; ++i)
    nds.push_back(start_instance(config, store));
  std::this_thread::sleep_for(4s);
  auto count = [&] {
    std::size_t n = 0;
    for (const auto& s : sites)
      n += splash.renders(s.at("url").get<std::string>());
    return n;
  };
  // Which instance rendered: each logs its own renders.
  auto per_instance = [&] {
    std::vector<std::size_t> out;
    for (const auto& nd : nds)
      out.push_back(newsdesk::testing::count(nd->process->output(), "msg=\"site refreshed\""));
    return out;
  };
  const auto before = count();
  const auto before_each = per_instance();
  const auto from = clock_type::now();
  std::this_thread::sleep_for(20s);
  const auto renders = count() - before;
  const auto after_each = per_instance();
  const double seconds = std::chrono::duration<double>(clock_type::now() - from).count();
  const double intervals = seconds / 2.0;
  std::printf("renders per site per interval (3 instances, 4 sites, 2 s interval, %.1f s): %.2f "
              "(goal 1; %zu renders)\n",
              seconds, static_cast<double>(renders) / (4 * intervals), renders);
  std::printf("  renders by instance: %zu, %zu, %zu (goal: every instance a part)\n",
              after_each[0] - before_each[0], after_each[1] - before_each[1],
              after_each[2] - before_each[2]);
}

struct commit_and_frame {
  clock_type::time_point committed, framed;
};

// Waits for `site`'s commit (its event's notification on `listen`) and for `needle` on `sse`.
commit_and_frame await_commit_and_frame(PGconn* listen, stream_reader& sse, const std::string& site,
                                        const std::string& needle) {
  std::optional<clock_type::time_point> committed, framed;
  while (!framed || !committed) {
    pollfd fds[2] = {{PQsocket(listen), POLLIN, 0}, {sse.fd, POLLIN, 0}};
    if (::poll(fds, 2, 10'000) <= 0)
      throw std::runtime_error("no notification or frame within 10 s");
    const auto now = clock_type::now();
    if (fds[0].revents & POLLIN) {
      PQconsumeInput(listen);
      while (PGnotify* n = PQnotifies(listen)) {
        // Other sites commit too: the notification's payload is its event's seq.
        const char* seq = n->extra;
        PGresult* r = PQexecParams(listen, "SELECT site FROM events WHERE seq = $1", 1, nullptr,
                                   &seq, nullptr, nullptr, 0);
        if (!committed && PQntuples(r) == 1 && PQgetvalue(r, 0, 0) == site)
          committed = now;
        PQclear(r);
        PQfreemem(n);
      }
    }
    if (fds[1].revents & POLLIN) {
      sse.read_some();
      if (!framed && sse.received.find(needle) != std::string::npos)
        framed = now;
    }
  }
  return {*committed, *framed};
}

// 2. Commit to SSE frame on another instance.
void propagation(postgres_cluster& pg, int rounds) {
  splash_standin splash;
  const std::string url = "https://p.cnn.com/";
  std::vector<std::pair<std::string, std::string>> stories{{"/0/index.html", "Round 0"}};
  splash.set(url, standin_page::page(cnn_page(stories)));
  const auto store = pg.fresh_database();
  auto config = config_for(splash, {site("p", "cnn", url, {{"interval", 3600}})});
  auto writer = start_instance(config, store);
  auto reader = start_instance(config, store);
  if (!eventually([&] {
        return http_get(reader->port, "/news.json").body.find("Round 0") != std::string::npos;
      }))
    throw std::runtime_error("the first refresh did not arrive");

  PGconn* listen = listen_to_events(store);
  stream_reader sse(reader->port);

  std::vector<double> to_frame, end_to_end;
  for (int i = 1; i <= rounds; ++i) {
    const auto title = "Round " + std::to_string(i);
    stories.insert(stories.begin(), {"/" + std::to_string(i) + "/index.html", title});
    if (stories.size() > 20)
      stories.pop_back();
    splash.set(url, standin_page::page(cnn_page(stories)));
    const auto posted = clock_type::now();
    if (send_request(writer->port, "POST", "/api/refresh?site=p").status != 202)
      throw std::runtime_error("refresh refused");
    const auto needle = "\"title\":\"" + title + "\"";
    const auto [committed, framed] = await_commit_and_frame(listen, sse, "p", needle);
    to_frame.push_back(std::chrono::duration<double, std::milli>(framed - committed).count());
    end_to_end.push_back(std::chrono::duration<double, std::milli>(framed - posted).count());
  }
  PQfinish(listen);
  std::printf("propagation, commit -> SSE frame on another instance (%d refreshes): p50 %.1f ms, "
              "p99 %.1f ms, max %.1f ms (goal p99 <= 100 ms)\n",
              rounds, percentile(to_frame, 0.5), percentile(to_frame, 0.99),
              percentile(to_frame, 1.0));
  std::printf("  from POST /api/refresh on one instance to the frame on the other (render, "
              "parse, commit, notify, read, send): p50 %.1f ms, p99 %.1f ms\n",
              percentile(end_to_end, 0.5), percentile(end_to_end, 0.99));
}

// 3. SIGKILL of the instance holding a site's lease mid-render.
void takeover(postgres_cluster& pg, int trials, int lease_seconds) {
  std::vector<double> took;
  for (int t = 0; t < trials; ++t) {
    splash_standin splash;
    const std::string url = "https://k.cnn.com/";
    splash.set(url, standin_page::hang());
    const auto store = pg.fresh_database();
    auto config = config_for(splash, {site("k", "cnn", url, {{"interval", 3600}})},
                             {{"lease", lease_seconds}, {"retries", 0}});
    auto holder = start_instance(config, store);
    if (!eventually([&] { return splash.renders(url) == 1; }))
      throw std::runtime_error("the first render did not start");
    auto other = start_instance(config, store);
    // Kill at a random point of the lease's renewal cycle.
    std::this_thread::sleep_for(1s + std::chrono::milliseconds(std::rand() % 5000));
    splash.set(url, standin_page::page(cnn_page({{"/1/index.html", "Taken over"}})));
    const auto killed = clock_type::now();
    holder->process->stop(SIGKILL);
    if (!eventually([&] { return splash.renders(url) >= 2; },
                    std::chrono::seconds(lease_seconds * 3)))
      throw std::runtime_error("no other instance took the site over");
    took.push_back(std::chrono::duration<double>(clock_type::now() - killed).count());
  }
  std::printf("takeover after SIGKILL of the lease holder (lease %d s, %d trials): median %.2f s, "
              "max %.2f s (goal <= %d s)\n",
              lease_seconds, trials, median(took), percentile(took, 1.0), lease_seconds + 1);
}

// wrk's requests/s for `url`.
double wrk_rate(const std::string& url, int seconds) {
  auto command = "wrk -t2 -c64 -d" + std::to_string(seconds) + "s " + url + " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  if (!pipe)
    throw std::runtime_error("cannot run wrk");
  std::string out;
  char buf[4096];
  while (auto n = std::fread(buf, 1, sizeof buf, pipe.get()))
    out.append(buf, n);
  auto at = out.find("Requests/sec:");
  if (at == std::string::npos)
    throw std::runtime_error("wrk printed no rate:\n" + out);
  return std::stod(out.substr(at + 13));
}

// 4. /news through HAProxy in front of three instances, against one instance alone.
void throughput(postgres_cluster& pg, const std::string& haproxy, int seconds, int runs) {
  splash_standin splash;
  bool found = false;
  auto cnn = fixture("cnn-2025-home-rendered.html", found);
  if (!found)
    throw std::runtime_error("saved page cnn-2025-home-rendered.html not found");
  splash.set("https://edition.cnn.com/", standin_page::page(cnn));
  const auto store = pg.fresh_database();
  auto config = config_for(splash, {site("cnn", "cnn", "https://edition.cnn.com/")});
  std::vector<std::unique_ptr<newsdesk_process>> nds;
  for (int i = 0; i < 3; ++i)
    nds.push_back(start_instance(config, store));
  for (auto& nd : nds)
    if (!eventually([&] {
          return http_get(nd->port, "/news.json").body.find("\"headlines\":[{") !=
                 std::string::npos;
        }))
      throw std::runtime_error("an instance shows no headlines");

  temp_dir dir;
  const auto lb_port = unused_port();
  std::ostringstream cfg;
  cfg << "global\n    maxconn 4096\n    nbthread 2\n"
      << "defaults\n    mode http\n    timeout connect 5s\n    timeout client 30s\n"
      << "    timeout server 30s\n    option http-keep-alive\n"
      << "frontend in\n    bind 127.0.0.1:" << lb_port << "\n    default_backend newsdesk\n"
      << "backend newsdesk\n    balance leastconn\n";
  for (std::size_t i = 0; i < nds.size(); ++i)
    cfg << "    server n" << i << " 127.0.0.1:" << nds[i]->port << "\n";
  auto cfg_path = dir.write("haproxy.cfg", cfg.str());
  child_process lb(haproxy, {"-f", cfg_path, "-db"});
  if (!eventually([&] { return http_get(lb_port, "/news").status == 200; }))
    throw std::runtime_error("HAProxy did not answer");

  std::vector<double> through_lb, alone;
  for (int r = 0; r < runs; ++r) {
    through_lb.push_back(
        wrk_rate("http://127.0.0.1:" + std::to_string(lb_port) + "/news", seconds));
    alone.push_back(
        wrk_rate("http://127.0.0.1:" + std::to_string(nds[0]->port) + "/news", seconds));
  }
  std::printf("/news requests/s (wrk -t2 -c64, %d s, median of %d alternating runs): HAProxy + 3 "
              "instances %.0f, one instance alone %.0f, ratio %.2fx\n",
              seconds, runs, median(through_lb), median(alone), median(through_lb) / median(alone));
}

// One GET /news on a new connection, timed in parts: milliseconds until connected, until the
// answer's first byte, and until the server closed; `ok` when the answer was a 200.
struct timed_answer {
  bool ok = false;
  double connected = 0, first_byte = 0, total = 0;
};

timed_answer timed_news(unsigned short port) {
  const auto ms_since = [](clock_type::time_point t0) {
    return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
  };
  timed_answer out;
  const auto t0 = clock_type::now();
  const int fd = connect_loopback(port);
  if (fd < 0)
    return out;
  out.connected = ms_since(t0);
  const std::string request = "GET /news HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  std::string received;
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
      static_cast<ssize_t>(request.size())) {
    char buf[65536];
    for (;;) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 10'000) <= 0)
        break;
      const auto n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0)
        break;
      if (received.empty())
        out.first_byte = ms_since(t0);
      received.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  out.total = ms_since(t0);
  out.ok = received.rfind("HTTP/1.1 200", 0) == 0;
  return out;
}

struct paced_result {
  std::vector<std::vector<double>> took;     // per instance, whole requests
  std::vector<double> connected, first_byte; // every instance's requests together
  std::vector<double> handler;               // the servers' own time (access log us=), ms
};

// GET /news on each instance at a steady pace (a reader every 40 ms per instance, not a load
// test: the question is whether a request waits for a rebuild) for `span`. The instances log
// access lines (busy_cluster turns them on): their us= is the handler's own time, which tells a
// server that waits apart from a request that waits for a core.
paced_result paced_news(const std::vector<std::unique_ptr<newsdesk_process>>& nds,
                        std::chrono::seconds span) {
  paced_result out;
  out.took.resize(nds.size());
  std::vector<std::vector<timed_answer>> answers(nds.size());
  std::vector<std::size_t> logged_before;
  for (const auto& nd : nds)
    logged_before.push_back(nd->process->output().size()); // access lines go to stdout
  std::vector<std::thread> readers;
  for (std::size_t i = 0; i < nds.size(); ++i)
    readers.emplace_back([&, i] {
      const auto end = clock_type::now() + span;
      for (auto next = clock_type::now(); next < end; next += 40ms) {
        std::this_thread::sleep_until(next);
        answers[i].push_back(timed_news(nds[i]->port));
      }
    });
  for (auto& r : readers)
    r.join();
  int failed = 0;
  for (std::size_t i = 0; i < nds.size(); ++i)
    for (const auto& a : answers[i]) {
      out.took[i].push_back(a.total); // a failure counts as slow as it was
      if (!a.ok) {
        ++failed;
        continue;
      }
      out.connected.push_back(a.connected);
      out.first_byte.push_back(a.first_byte);
    }
  if (failed > 0)
    std::printf("  (%d /news requests were not answered 200)\n", failed);
  std::this_thread::sleep_for(200ms); // the access lines are written every 50 ms
  for (std::size_t i = 0; i < nds.size(); ++i) {
    std::istringstream lines(nds[i]->process->output().substr(logged_before[i]));
    for (std::string line; std::getline(lines, line);) {
      const auto us = line.find(" us=");
      if (line.find("msg=access method=GET path=\"/news\" ") != std::string::npos &&
          us != std::string::npos)
        out.handler.push_back(std::atof(line.c_str() + us + 4) / 1000);
    }
  }
  return out;
}

std::string p99s(const std::vector<std::vector<double>>& took) {
  std::string out;
  for (const auto& t : took) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s%.2f", out.empty() ? "" : " / ", percentile(t, 0.99));
    out += buf;
  }
  return out + " ms";
}

// The whole distribution behind a p99 of a few hundred samples: "p50 / p90 / p99.9 / max" per
// instance, all of them merged.
std::string spread(const std::vector<std::vector<double>>& took) {
  std::vector<double> all;
  for (const auto& t : took)
    all.insert(all.end(), t.begin(), t.end());
  char buf[160];
  std::snprintf(buf, sizeof buf, "p50 %.2f, p90 %.2f, p99 %.2f, p99.9 %.2f, max %.2f ms (%zu)",
                percentile(all, 0.5), percentile(all, 0.9), percentile(all, 0.99),
                percentile(all, 0.999), percentile(all, 1.0), all.size());
  return buf;
}

// 5. Issue 29's goals on a busy cluster: three instances, six sites gaining a story every 3 s
// and refreshed every 3 s. /news p99 on each instance against a quiet cluster (the same sites,
// no refreshes after the first), commit -> SSE frame on another instance meanwhile, and a 15 s
// PostgreSQL stop behind HAProxy checking /readyz as deploy/haproxy-cluster.cfg does.
void busy_cluster(postgres_cluster& pg, const std::string& haproxy, int rounds,
                  std::chrono::seconds span) {
  auto start_three = [&](const json& config, const std::string& store) {
    std::vector<std::unique_ptr<newsdesk_process>> nds;
    for (int i = 0; i < 3; ++i)
      nds.push_back(start_instance(config, store));
    for (auto& nd : nds)
      if (!eventually(
              [&] {
                return http_get(nd->port, "/news.json").body.find("story") != std::string::npos;
              },
              30s))
        throw std::runtime_error("an instance shows no headlines");
    return nds;
  };
  // Access lines on: paced_news reads the handlers' own times from them.
  const auto logging = [](json config) {
    config["access_log"] = true;
    return config;
  };
  paced_result quiet;
  {
    splash_standin splash;
    changing_sites background(splash, 6, 3600s);
    auto nds =
        start_three(logging(config_for(splash, background.sites(3600))), pg.fresh_database());
    std::this_thread::sleep_for(3s); // the first refreshes' views built
    quiet = paced_news(nds, span);
  }

  splash_standin splash;
  changing_sites background(splash, 6, 3s);
  const std::string probe = "https://probe.cnn.com/";
  std::vector<std::pair<std::string, std::string>> stories{{"/p0/index.html", "Probe 0"}};
  splash.set(probe, standin_page::page(cnn_page(stories)));
  auto sites = background.sites(3);
  sites.push_back(site("probe", "cnn", probe, {{"interval", 3600}}));
  const auto store = pg.fresh_database();
  auto nds = start_three(logging(config_for(splash, sites)), store);

  paced_result busy;
  std::thread readers([&] { busy = paced_news(nds, span); });
  // Commit -> frame, the probe refreshed on instance 0 and read on instance 1, while the others
  // refresh in the background: a notification is the probe's when its event names the probe.
  PGconn* listen = listen_to_events(store);
  stream_reader sse(nds[1]->port);
  std::vector<double> to_frame;
  const auto probing_until = clock_type::now() + span - 2s;
  for (int i = 1; i <= rounds && clock_type::now() < probing_until; ++i) {
    const auto title = "Probe " + std::to_string(i);
    stories.insert(stories.begin(), {"/p" + std::to_string(i) + "/index.html", title});
    if (stories.size() > 20)
      stories.pop_back();
    splash.set(probe, standin_page::page(cnn_page(stories)));
    if (send_request(nds[0]->port, "POST", "/api/refresh?site=probe").status != 202)
      throw std::runtime_error("refresh refused");
    const auto needle = "\"title\":\"" + title + "\"";
    const auto [committed, framed] = await_commit_and_frame(listen, sse, "probe", needle);
    to_frame.push_back(std::chrono::duration<double, std::milli>(framed - committed).count());
    std::this_thread::sleep_for(100ms);
  }
  PQfinish(listen);
  readers.join();
  std::printf("busy cluster (3 instances, 6 sites gaining a story every 3 s, refreshed every "
              "3 s; /news every 40 ms per instance for %lld s):\n",
              static_cast<long long>(span.count()));
  std::printf("  /news p99 per instance: quiet %s, busy %s; worst ratio %.2fx (goal <= 2x)\n",
              p99s(quiet.took).c_str(), p99s(busy.took).c_str(), [&] {
                double worst = 0;
                for (std::size_t i = 0; i < busy.took.size(); ++i)
                  worst = std::max(worst, percentile(busy.took[i], 0.99) /
                                              percentile(quiet.took[i], 0.99));
                return worst;
              }());
  std::printf("  /news, the three instances' requests together: quiet %s; busy %s\n",
              spread(quiet.took).c_str(), spread(busy.took).c_str());
  std::printf("  where the time went, p99 quiet / busy: connected %.2f / %.2f ms, first byte "
              "%.2f / %.2f ms, the handler (access log us=) %.3f / %.3f ms (%zu / %zu lines)\n",
              percentile(quiet.connected, 0.99), percentile(busy.connected, 0.99),
              percentile(quiet.first_byte, 0.99), percentile(busy.first_byte, 0.99),
              percentile(quiet.handler, 0.99), percentile(busy.handler, 0.99), quiet.handler.size(),
              busy.handler.size());
  std::printf("  commit -> SSE frame on another instance (%zu probe refreshes among the "
              "background ones): p50 %.1f ms, p99 %.1f ms, max %.1f ms (goal p99 <= 100 ms)\n",
              to_frame.size(), percentile(to_frame, 0.5), percentile(to_frame, 0.99),
              percentile(to_frame, 1.0));

  // PostgreSQL stopped for 15 s behind HAProxy, health-checked as the shipped config does.
  temp_dir dir;
  const auto lb_port = unused_port();
  std::ostringstream cfg;
  cfg << "global\n    maxconn 4096\n"
      << "defaults\n    mode http\n    timeout connect 5s\n    timeout client 30s\n"
      << "    timeout server 30s\n    retries 2\n    option redispatch\n"
      << "frontend in\n    bind 127.0.0.1:" << lb_port << "\n    default_backend newsdesk\n"
      << "backend newsdesk\n    balance leastconn\n    option httpchk\n"
      << "    http-check send meth GET uri /readyz\n    http-check expect status 200\n"
      << "    default-server check inter 2s fall 2 rise 2\n";
  for (std::size_t i = 0; i < nds.size(); ++i)
    cfg << "    server n" << i << " 127.0.0.1:" << nds[i]->port << "\n";
  child_process lb(haproxy, {"-f", dir.write("haproxy.cfg", cfg.str()), "-db"});
  if (!eventually([&] { return http_get(lb_port, "/news").status == 200; }))
    throw std::runtime_error("HAProxy did not answer");
  std::this_thread::sleep_for(5s); // every server's checks passed
  pg.stop();
  std::size_t asked = 0, served = 0;
  const auto stopped = clock_type::now();
  for (auto next = stopped; next < stopped + 15s; next += 50ms) {
    std::this_thread::sleep_until(next);
    ++asked;
    served += http_get(lb_port, "/news").status == 200 ? 1 : 0;
  }
  pg.start();
  std::printf("  PostgreSQL stopped 15 s behind HAProxy: /news answered 200 to %zu of %zu "
              "requests (%.1f%%; goal >= 99%%)\n",
              served, asked, 100.0 * static_cast<double>(served) / static_cast<double>(asked));
}

} // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0); // each figure as soon as it is measured
  int rounds = 200, trials = 3, lease = 15, wrk_seconds = 10, runs = 3, busy_seconds = 40;
  int freezes = 3, freeze_seconds = 20, readers = 2000, reader_rounds = 30;
  std::string haproxy = "/usr/sbin/haproxy";
  std::string
      only; // one part: busy, faults (freeze, fresh start, readers), freeze, restart, readers
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--rounds")
      rounds = std::atoi(argv[i + 1]);
    else if (flag == "--trials")
      trials = std::atoi(argv[i + 1]);
    else if (flag == "--lease")
      lease = std::atoi(argv[i + 1]);
    else if (flag == "--wrk-seconds")
      wrk_seconds = std::atoi(argv[i + 1]);
    else if (flag == "--runs")
      runs = std::atoi(argv[i + 1]);
    else if (flag == "--busy-seconds")
      busy_seconds = std::atoi(argv[i + 1]);
    else if (flag == "--only")
      only = argv[i + 1];
    else if (flag == "--freezes")
      freezes = std::atoi(argv[i + 1]);
    else if (flag == "--freeze-seconds")
      freeze_seconds = std::atoi(argv[i + 1]);
    else if (flag == "--readers")
      readers = std::atoi(argv[i + 1]);
    else if (flag == "--reader-rounds")
      reader_rounds = std::atoi(argv[i + 1]);
    else if (flag == "--haproxy")
      haproxy = argv[i + 1];
    else {
      std::cerr << "usage: cluster_bench [--rounds N] [--trials N] [--lease S] [--wrk-seconds S] "
                   "[--runs N] [--busy-seconds S] [--only busy|faults|freeze|"
                   "restart|readers] [--freezes N] [--freeze-seconds S] [--readers N] "
                   "[--reader-rounds N] [--haproxy PATH]\n";
      return 2;
    }
  }
  try {
    postgres_cluster pg;
    const auto part = [&](const char* name) {
      return only.empty() || only == name ||
             (only == "faults" &&
              (std::string(name) == "freeze" || std::string(name) == "restart" ||
               std::string(name) == "readers"));
    };
    if (only.empty()) {
      renders_per_interval(pg);
      propagation(pg, rounds);
      takeover(pg, trials, lease);
      throughput(pg, haproxy, wrk_seconds, runs);
    }
    if (part("busy"))
      busy_cluster(pg, haproxy, rounds, std::chrono::seconds(busy_seconds));
    if (part("freeze"))
      frozen_database(pg, haproxy, freezes, freeze_seconds);
    if (part("restart"))
      fresh_start(pg, haproxy, trials);
    if (part("readers"))
      many_readers(pg, haproxy, readers, reader_rounds);
  } catch (const std::exception& e) {
    std::cerr << "cluster_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

// newsdesk: serves /news, the current headlines of the configured sites on one page.
#include "broker/broker.hpp"
#include "broker/standalone.hpp"
#include "scrapers/registry.hpp"
#include "scrapers/site_file.hpp"
#include "server/app/routes.hpp"
#include "server/render/browserless_renderer.hpp"
#include "server/render/chromium_renderer.hpp"
#include "server/app/config.hpp"
#include "server/render/direct_renderer.hpp"
#include "server/news/headline_store.hpp"
#include "server/render/http_client.hpp"
#include "server/http/http_server.hpp"
#include "server/news/live_events.hpp"
#include "server/core/log.hpp"
#include "server/app/metrics.hpp"
#include "server/news/news_page.hpp"
#include "server/news/news_service.hpp"
#include "server/app/site_commands.hpp"
#include "server/render/splash_renderer.hpp"
#include "server/http/static_files.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <thread>

namespace net = boost::asio;
using namespace newsdesk;
using namespace newsdesk::server;

namespace {

// How long shutdown waits for in-flight requests (a /news may be waiting on a slow render).
constexpr std::chrono::seconds shutdown_deadline{10};

// Waits (polling every 50 ms) until no HTTP connection is open or the deadline passes, then
// calls `done`.
void drain_connections(net::steady_timer& timer, http_server& http,
                       std::chrono::steady_clock::time_point deadline, std::function<void()> done) {
  if (http.open_connections() == 0 || std::chrono::steady_clock::now() >= deadline) {
    if (http.open_connections() > 0)
      log_warn("msg=\"shutdown deadline passed, closing open connections\" open=" +
               std::to_string(http.open_connections()));
    return done();
  }
  timer.expires_after(std::chrono::milliseconds(50));
  timer.async_wait(
      [&timer, &http, deadline, done = std::move(done)](boost::system::error_code ec) mutable {
        if (!ec)
          drain_connections(timer, http, deadline, std::move(done));
      });
}

// Each site's display name and colour, which live events carry with its headlines.
std::map<std::string, live_events::site_look> looks_of(const std::vector<site_config>& sites) {
  std::map<std::string, live_events::site_look> looks;
  for (const auto& s : sites)
    looks[s.name] = {s.display_name, s.colour};
  return looks;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names)
    out += (out.empty() ? "" : ",") + n;
  return out;
}

int run(std::vector<std::string> args) {
  auto print_flag = std::find(args.begin(), args.end(), "--print-config");
  const bool print_config = print_flag != args.end();
  if (print_config)
    args.erase(print_flag);
  bool help = false;
  auto cfg = load_config(args, process_environment(), help);
  if (help) {
    std::cout << usage();
    return 0;
  }
  if (print_config) {
    // What this process would run with: every key, and each site as resolved (its scraper,
    // renderer and timings). Fed back as --config, it gives the same configuration.
    auto effective = config_to_json(cfg);
    effective["sites"] = sites_to_json(load_sites(cfg));
    if (!cfg.site_files_dir_given && !std::filesystem::is_directory(cfg.site_files_dir))
      effective.erase("site_files_dir"); // named, a missing folder would stop the next start
    std::cout << effective.dump(2) << "\n";
    return 0;
  }
  set_log_level(cfg.level);
  log_to_stderr(cfg.log_to_stderr);

  auto sites = load_sites(cfg);
  auto page = std::make_shared<const news_page>(news_page::load(cfg.templates_dir));
  static_files files(cfg.static_dir);

  unsigned threads = cfg.threads ? cfg.threads : std::max(1u, std::thread::hardware_concurrency());
  net::io_context ioc(static_cast<int>(threads));
  net::thread_pool parse_pool(threads);

  http_client client(ioc, tls_options{cfg.tls_verify, {}});
  direct_renderer direct(client);
  std::unique_ptr<splash_renderer> splash;
  std::map<std::string, renderer*> renderers{{"direct", &direct}};
  if (!cfg.splash_url.empty()) {
    splash = std::make_unique<splash_renderer>(client, cfg.splash_url);
    renderers["splash"] = splash.get();
  }
  // A found Chromium is always available (a reload may add a site that uses it); the browser
  // itself starts on its first render, or now when a site renders through it from the start.
  std::unique_ptr<chromium_renderer> chromium;
  if (!cfg.chromium.path.empty()) {
    chromium = std::make_unique<chromium_renderer>(ioc, cfg.chromium);
    if (std::any_of(sites.begin(), sites.end(),
                    [](const auto& s) { return s.renderer == "chromium"; }))
      chromium->warm_up();
    renderers["chromium"] = chromium.get();
  }
  std::unique_ptr<browserless_renderer> browserless;
  if (!cfg.browserless_url.empty()) {
    browserless = std::make_unique<browserless_renderer>(ioc, cfg.browserless_url);
    renderers["browserless"] = browserless.get();
  }
  // The store opens before anything listens: a broken store file stops startup with its name.
  auto store = headline_store::open(cfg.store_path);
  news_service news(ioc, sites, renderers, parse_pool, &store, cfg.refresh);
  app routes(news, page, files);

  // The broker shares the io_context; a bind failure stops startup like the HTTP one does.
  std::unique_ptr<broker::server> pubsub;
  if (cfg.broker.enabled) {
    pubsub = std::make_unique<broker::server>(ioc, cfg.broker);
    pubsub->listen();
    pubsub->start();
    routes.add_json_endpoint("/api/broker",
                             [&pubsub] { return nlohmann::json(pubsub->stats()).dump() + "\n"; });
  }

  // /events: live headlines for open pages.
  live_events live(ioc, parse_pool, &store, looks_of(sites));
  routes.add_route("/events", [&live](http_request req, responder res) {
    live.handle(std::move(req), std::move(res));
  });
  live.start();
  if (pubsub) {
    // /events follows the broker's channel like any client (over loopback when the broker is
    // bound to every address).
    auto endpoint = pubsub->local_endpoint();
    auto address = endpoint.address().is_unspecified() ? std::string("127.0.0.1")
                                                       : endpoint.address().to_string();
    live.follow_broker(address, endpoint.port());
    // The first refresh may publish within milliseconds; the broker drops /topic messages
    // nobody is subscribed to yet, so wait (briefly) until it counts this subscriber.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    // The network threads start later; this thread runs the io_context meanwhile.
    while (pubsub->stats().subscribers_current == 0 && std::chrono::steady_clock::now() < deadline)
      ioc.run_one_for(std::chrono::milliseconds(5));
    ioc.restart();
  }

  // New headlines go out on the broker's /topic/headlines, where any client (and /events)
  // follows them.
  news.on_new_headlines([&pubsub, &live](const std::vector<news_item>& items) {
    nlohmann::json batch = nlohmann::json::array();
    for (const auto& item : items)
      batch.push_back({{"id", item.id},
                       {"title", item.headline.title},
                       {"url", item.headline.url},
                       {"site", item.headline.site},
                       {"first_seen", iso8601_ms(item.first_seen_ms)}});
    auto text = batch.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (!pubsub)
      return live.publish(text); // no broker: straight to the /events clients
    try {
      pubsub->publish("/topic/headlines", text);
    } catch (const std::exception& e) {
      log_warn(std::string("msg=\"cannot publish headlines\" error=\"") + e.what() + "\"");
    }
  });
  // Observability: /metrics (Prometheus) and /readyz.
  server::metrics counters;
  if (cfg.metrics) {
    news.on_refresh_done(
        [&counters](const site_config& site, std::chrono::milliseconds took,
                    std::string_view kind) { counters.observe_fetch(site.name, took, kind); });
    routes.add_route("/metrics", [&](http_request, responder respond) {
      std::optional<broker::stats_snapshot> broker_stats;
      if (pubsub)
        broker_stats = pubsub->stats();
      http_response res;
      res.content_type = "text/plain; version=0.0.4; charset=utf-8";
      res.body = counters.render(news.snapshot()->sites, broker_stats ? &*broker_stats : nullptr,
                                 live.clients());
      res.with_header("Cache-Control", "no-store");
      respond(std::move(res));
    });
  }
  // Ready: the store answers, the listeners are up (they are by now), and at least one site
  // refreshed within its interval (plus its render timeout and the jitter).
  routes.add_route("/readyz", [&](http_request, responder respond) {
    nlohmann::json reasons = nlohmann::json::array();
    try {
      (void)store.last_id();
    } catch (const std::exception& e) {
      reasons.push_back(std::string("store: ") + e.what());
    }
    auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
    auto snap = news.snapshot();
    auto current = news.sites();
    std::size_t fresh = 0;
    for (const auto& report : snap->sites) {
      auto site = std::find_if(current.begin(), current.end(),
                               [&](const site_config& s) { return s.name == report.name; });
      if (site == current.end())
        continue; // removed by a reload since the snapshot
      auto allowed = static_cast<std::int64_t>(static_cast<double>(site->interval.count()) *
                                               (1 + cfg.refresh.jitter)) +
                     site->timeout.count();
      if (report.last_success_ms && now - report.last_success_ms <= allowed)
        ++fresh;
    }
    if (!current.empty() && fresh == 0)
      reasons.push_back("no site has refreshed within its interval yet");
    nlohmann::json body = {{"ready", reasons.empty()},
                           {"sites_fresh", fresh},
                           {"sites", current.size()},
                           {"reasons", reasons}};
    http_response res;
    res.status = reasons.empty() ? 200 : 503;
    res.content_type = json_content_type;
    res.body = body.dump() + "\n";
    res.with_header("Cache-Control", "no-store");
    respond(std::move(res));
  });
  // From here on, worker tasks use the store and the service. However run() ends (a listener
  // that fails to bind throws below), they finish before those objects go away.
  struct join_on_exit {
    net::thread_pool& pool;
    ~join_on_exit() {
      pool.stop();
      pool.join();
    }
  } join_workers{parse_pool};
  news.start();

  // History older than the retention is pruned once an hour, on the worker pool.
  net::steady_timer prune_timer(ioc);
  std::function<void()> prune = [&] {
    net::post(parse_pool, [&] {
      auto cutoff = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::system_clock::now().time_since_epoch() - cfg.refresh.retention)
                        .count();
      try {
        if (auto removed = store.prune(cutoff))
          log_info("msg=\"pruned history\" rows=" + std::to_string(removed));
      } catch (const std::exception& e) {
        log_warn(std::string("msg=\"prune failed\" error=\"") + e.what() + "\"");
      }
    });
    prune_timer.expires_after(std::chrono::hours(1));
    prune_timer.async_wait([&](boost::system::error_code ec) {
      if (!ec)
        prune();
    });
  };
  prune();

  http_server http(
      ioc,
      [&](http_request req, responder respond) {
        if (!cfg.metrics && !cfg.access_log)
          return routes.handle(std::move(req), std::move(respond));
        // Count and log each request when its response is ready.
        auto started = std::chrono::steady_clock::now();
        auto route = metrics::route_of(req.path());
        auto line = cfg.access_log ? "msg=access method=" + req.method + " path=\"" +
                                         std::string(req.path().substr(0, 200)) + "\""
                                   : std::string();
        routes.handle(std::move(req), [&, started, route, line = std::move(line),
                                       respond = std::move(respond)](http_response res) {
          auto took = std::chrono::steady_clock::now() - started;
          if (cfg.metrics)
            counters.observe_request(route, res.status, took);
          if (cfg.access_log)
            log_info(line + " status=" + std::to_string(res.status) +
                     " bytes=" + std::to_string(res.body_size()) + " us=" +
                     std::to_string(
                         std::chrono::duration_cast<std::chrono::microseconds>(took).count()));
          respond(std::move(res));
        });
      },
      cfg.http);
  http.listen(cfg.address, cfg.port);
  http.start();

  std::string site_list;
  for (const auto& s : sites)
    site_list += (site_list.empty() ? "" : ",") + s.name + "(" + s.renderer + ")";
  log_info("msg=\"newsdesk started\" address=" + cfg.address +
           " port=" + std::to_string(http.port()) + " threads=" + std::to_string(threads) +
           " sites=" + site_list);
  // Tests and scripts read this line to learn the port (it may have been 0).
  std::printf("listening on http://%s:%u\n", cfg.address.c_str(),
              static_cast<unsigned>(http.port()));
  if (pubsub) {
    auto endpoint = pubsub->local_endpoint();
    std::printf("broker listening on %s:%u\n", endpoint.address().to_string().c_str(),
                static_cast<unsigned>(endpoint.port()));
  }
  std::fflush(stdout);

  // SIGHUP reloads the site files and the templates (on a worker: it reads files and parses
  // templates). Connections stay open; anything broken keeps the old ones and says why.
  std::mutex reload_mutex;
  auto reload = [&] {
    std::lock_guard lock(reload_mutex);
    try {
      auto new_sites = load_sites(cfg);
      for (const auto& s : new_sites)
        if (!renderers.count(s.renderer))
          throw config_error("site '" + s.name + "' needs the " + s.renderer +
                             " renderer, which was not configured at startup");
      auto new_page = std::make_shared<const news_page>(news_page::load(cfg.templates_dir));
      live.set_sites(looks_of(new_sites)); // before the service can publish for a new site
      auto changed = news.reconfigure(std::move(new_sites));
      routes.set_page(std::move(new_page));
      std::vector<std::string> names;
      for (const auto& s : news.sites())
        names.push_back(s.name);
      log_info("msg=reloaded sites=" + joined(names) + " added=" + joined(changed.added) +
               " removed=" + joined(changed.removed) + " changed=" + joined(changed.changed));
    } catch (const std::exception& e) {
      log_error(std::string("msg=\"reload failed, keeping the old site files and templates\" "
                            "error=\"") +
                e.what() + "\"");
    }
  };
  net::signal_set hangup(ioc, SIGHUP);
  std::function<void()> wait_for_hangup = [&] {
    hangup.async_wait([&](boost::system::error_code ec, int) {
      if (ec)
        return;
      log_info("msg=\"reloading site files and templates\" signal=SIGHUP");
      net::post(parse_pool, reload);
      wait_for_hangup();
    });
  };
  wait_for_hangup();

  net::signal_set signals(ioc, SIGINT, SIGTERM);
  net::steady_timer drain_timer(ioc);
  // Shutdown: stop accepting everywhere, let HTTP requests in flight finish and the broker
  // deliver what it has queued (each within its deadline), then stop the threads.
  auto parts_left = std::make_shared<std::atomic<int>>(pubsub ? 2 : 1);
  auto part_done = [&ioc, parts_left] {
    if (parts_left->fetch_sub(1) == 1)
      ioc.stop();
  };
  signals.async_wait([&](boost::system::error_code ec, int signal) {
    if (ec)
      return;
    log_info("msg=\"shutting down\" signal=" + std::to_string(signal));
    http.stop();
    hangup.cancel();
    news.stop();
    live.stop(); // SSE connections end here, so the connection drain below can finish
    prune_timer.cancel();
    if (pubsub)
      pubsub->async_shutdown(part_done);
    drain_connections(drain_timer, http, std::chrono::steady_clock::now() + shutdown_deadline,
                      part_done);
  });

  std::vector<std::thread> pool;
  for (unsigned i = 1; i < threads; ++i)
    pool.emplace_back([&ioc] { ioc.run(); });
  ioc.run();
  for (auto& t : pool)
    t.join();
  if (chromium)
    chromium->shutdown(); // kills the browser's process group; renders in flight are dropped
  parse_pool.join();
  log_info("msg=\"newsdesk stopped\"");
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  // Log lines go to stdout; keep them whole and prompt even when stdout is a pipe.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  // A client that closes while its response is sent must cost an EPIPE, not the process:
  // sendfile(2), unlike the sends Asio makes, has no MSG_NOSIGNAL.
  std::signal(SIGPIPE, SIG_IGN);
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args.front() == "broker") // the broker alone: newsdesk broker [options]
    return newsdesk::broker::run_standalone({args.begin() + 1, args.end()}, "newsdesk broker");
  if (!args.empty() && args.front() == "--check-scrapers")
    return check_scrapers({args.begin() + 1, args.end()}, std::cout, std::cerr);
  if (!args.empty() && args.front() == "--try-site")
    return try_site({args.begin() + 1, args.end()}, std::cout, std::cerr);
  try {
    return run(args);
  } catch (const scrapers::site_file_error& e) {
    std::cerr << "newsdesk: bad site file: " << e.what() << "\n";
    return 2;
  } catch (const config_error& e) {
    std::cerr << "newsdesk: configuration error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "newsdesk: " << e.what() << "\n";
    return 1;
  }
}

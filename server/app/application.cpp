#include "server/app/application.hpp"

#include "broker/broker.hpp"
#include "server/alerts/alerts.hpp"
#include "server/app/headline_publisher.hpp"
#include "server/app/low_priority_pool.hpp"
#include "server/app/metrics.hpp"
#include "server/app/readiness.hpp"
#include "server/app/routes.hpp"
#include "server/core/log.hpp"
#include "server/core/thread_name.hpp"
#include "server/http/event_loops.hpp"
#include "server/http/http_server.hpp"
#include "server/http/static_files.hpp"
#include "server/news/headline_store.hpp"
#include "server/news/live_events.hpp"
#include "server/news/news_page.hpp"
#include "server/news/news_service.hpp"
#include "server/news/site_icons.hpp"
#include "server/pictures/site_pictures.hpp"
#include "server/render/renderers.hpp"
#include "server/store/change_listener.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>

#include <nlohmann/json.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <latch>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

namespace newsdesk::server {

namespace net = boost::asio;

namespace {

std::int64_t unix_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
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

// A thread pool whose threads carry `name` (thread_name.hpp). They are named as the pool starts,
// before anything else is queued on it: one task per thread, each held until all have begun, so
// no thread takes two.
struct named_thread_pool : net::thread_pool {
  named_thread_pool(unsigned threads, const char* name)
      : net::thread_pool(threads) {
    auto begun = std::make_shared<std::latch>(threads + 1);
    for (unsigned i = 0; i < threads; ++i)
      net::post(*this, [begun, name] {
        name_this_thread(name);
        begun->arrive_and_wait();
      });
    begun->arrive_and_wait();
  }
};

unsigned thread_count(const config& cfg) {
  return cfg.threads ? cfg.threads : std::max(1u, std::thread::hardware_concurrency());
}

// Raises the soft open-file limit to the hard one (the soft one is often 1,024) and fits the
// descriptor budgets into it: accept() never meets EMFILE while every budget is full.
config with_descriptor_budget(config cfg) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0)
    limit.rlim_cur = limit.rlim_max = 1024;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0)
      limit = raised;
  }
  const std::size_t open_files = limit.rlim_cur == RLIM_INFINITY
                                     ? std::size_t{1} << 20
                                     : static_cast<std::size_t>(limit.rlim_cur);
  fit_descriptor_budget(cfg, open_files);
  log_info("msg=\"descriptor budgets\" open_files=" + std::to_string(open_files) +
           " http_connections=" + std::to_string(cfg.http.max_connections) +
           " http_streams=" + std::to_string(cfg.http.max_streams) + " broker_connections=" +
           std::to_string(cfg.broker.enabled ? cfg.broker.max_connections : 0) +
           " view_bodies=" + std::to_string(body_descriptors));
  return cfg;
}

} // namespace

struct application::parts {
  explicit parts(config c)
      : cfg(with_descriptor_budget(std::move(c)))
      , threads(thread_count(cfg))
      , parse_pool(threads, "nd-worker")
      // Parsing may use every core (niced, it yields to serving): one parse thread per two cores
      // was a ceiling of about 1,000 heavy pages a minute while the other core idled.
      , scrape_pool(threads, low_priority_pool::level::background, "nd-parse")
      , filtered_pool(threads, low_priority_pool::level::idle, "nd-filtered")
      , build_pool(1, low_priority_pool::level::background, "nd-build")
      , ioc(static_cast<int>(threads))
      , connection_loops(cfg.event_loops ? std::optional<event_loops>(std::in_place, threads)
                                         : std::nullopt)
      , sites(load_sites(cfg))
      , page(std::make_shared<const news_page>(news_page::load(cfg.templates_dir)))
      , files(cfg.static_dir)
      , renderers(ioc, renderer_options_of(cfg))
      // The store opens before anything listens: a broken store file stops startup with its name.
      , store(open_store(cfg.store_path.string(), {.max_connections = cfg.store_max_connections,
                                                   .call_timeout = cfg.store_timeout}))
      , news(ioc, sites, renderers.by_name(), parse_pool, scrape_pool.get_executor(), store.get(),
             cfg.refresh)
      , routes(news, page, files, build_pool, filtered_pool,
               {cfg.public_url, host_list(cfg.allowed_hosts), cfg.reject_unknown_hosts})
      , live(ioc, parse_pool, store.get(), looks_of(sites))
      , icons(
            renderers.client(), store.get(), parse_pool,
            [this](const std::string& site, const std::string& etag) { news.set_icon(site, etag); })
      // Pictures off: no store, so nothing is fetched and nothing is shown.
      , pictures(
            renderers.client(), cfg.pictures ? store.get() : nullptr, parse_pool,
            cfg.picture_bytes_per_site,
            [this](const std::string& site) {
              for (const auto& s : news.sites())
                if (s.name == site)
                  return s.url;
              return std::string();
            },
            [this](const std::vector<std::pair<std::string, picture_ref>>& made) {
              news.set_pictures(made);
            })
      , alert_rules(ioc, renderers.client(), resolve_alerts(cfg, sites),
                    [this](const std::string& channel, const std::string& payload) {
                      if (pubsub)
                        pubsub->publish(channel, payload);
                    })
      , hangup(ioc, SIGHUP)
      , terminate(ioc, SIGINT, SIGTERM)
      , drain_timer(ioc)
      , store_watch(ioc) {
    if (cfg.broker.enabled) {
      pubsub = std::make_unique<broker::server>(ioc, cfg.broker);
      broker_out.emplace(*pubsub);
    }
    // A shared store: every instance's pages follow the store's event log.
    // Its probe is the store's check (the page's notice, /readyz, /metrics), told on the
    // worker pool: the notice makes a snapshot.
    if (auto* cluster = store->cluster())
      changes = std::make_unique<change_listener>(
          ioc, parse_pool, *cluster,
          [this](const std::vector<store_event>& events) {
            news.apply_events(events);
            icons.reload(); // another instance may have stored a site's icon
          },
          [this](const std::string& error, const std::string& refusal) {
            net::post(parse_pool, [this, error, refusal] { news.store_probed(error, refusal); });
          });
    live.set_snapshot_source([this] { return news.snapshot(); });
    add_routes();
    wire_news();
    http = std::make_unique<http_server>(
        ioc,
        observe_requests(
            [this](http_request req, responder respond) {
              routes.handle(std::move(req), std::move(respond));
            },
            cfg.metrics ? &counters : nullptr,
            cfg.access_log ? std::function<void(std::string_view)>(log_access) : nullptr),
        cfg.http, connection_loops ? &*connection_loops : nullptr);
  }

  // Worker tasks use the store and the service: they all run to the end before those go away
  // (join without stop runs what is queued, so no task is left holding an io_context strand).
  // The pool itself outlives the io_context: handlers the io_context still holds after a start
  // that failed half-way may own strands on the pool (live events), destroyed with them.
  ~parts() {
    filtered_pool.join();
    build_pool.join();
    scrape_pool.join(); // a parse's result is handed to the worker pool: that one last
    parse_pool.join();
  }

  void add_routes() {
    // Held in memory once served; the first read is a query (a network round trip with
    // PostgreSQL): on the pool.
    routes.bind(route_id::site_icon, [this](http_request req, responder respond) {
      auto site = icon_path_site(req.path());
      if (site.empty())
        return respond(text_response(404));
      if (auto icon = icons.held(site))
        return respond(icon_response(icon.get(), req));
      net::post(parse_pool,
                [this, site = std::move(site), req = std::move(req), respond = std::move(respond)] {
                  std::shared_ptr<const site_icon> icon;
                  try {
                    icon = icons.served(site);
                  } catch (const std::exception& e) {
                    log_warn("msg=\"cannot read site icon\" site=" + site +
                             " error=" + logfmt_quoted(e.what()));
                    return respond(text_response(503));
                  }
                  respond(icon_response(icon.get(), req));
                });
    });
    // Pictures are read from the store on the pool; browsers keep them (immutable names).
    routes.bind(route_id::picture, [this](http_request req, responder respond) {
      auto name = picture_path_name(req.path());
      if (name.empty())
        return respond(text_response(404));
      net::post(parse_pool,
                [this, name = std::move(name), req = std::move(req), respond = std::move(respond)] {
                  std::optional<stored_picture> picture;
                  try {
                    picture = pictures.served(name);
                  } catch (const std::exception& e) {
                    log_warn("msg=\"cannot read a picture\" name=" + name +
                             " error=" + logfmt_quoted(e.what()));
                    return respond(text_response(503));
                  }
                  respond(picture_response(picture ? &*picture : nullptr, req));
                });
    });
    routes.bind(route_id::events, [this](http_request req, responder res) {
      live.handle(std::move(req), std::move(res));
    });
    if (pubsub)
      routes.bind_json(route_id::broker_stats,
                       [this] { return nlohmann::json(pubsub->stats()).dump() + "\n"; });
    if (pubsub && cfg.broker.mqtt.enabled)
      routes.bind(route_id::mqtt_websocket, [this](http_request req, responder respond) {
        broker::websocket_request upgrade{req.method, req.target, std::move(req.headers)};
        if (auto refused = broker::check_websocket_request(upgrade)) {
          auto res = text_response(refused->status, refused->text);
          if (refused->status == 426)
            res.with_header("Upgrade", "websocket");
          return respond(std::move(res));
        }
        http_response res;
        res.status = 101; // written by the broker, which answers the upgrade
        res.take_over = [this, upgrade = std::move(upgrade)](int fd) mutable {
          pubsub->serve_websocket(fd, std::move(upgrade));
        };
        respond(std::move(res));
      });
    if (cfg.metrics)
      routes.bind(route_id::metrics, [this](http_request, responder respond) {
        std::optional<broker::stats_snapshot> broker_stats;
        if (pubsub)
          broker_stats = pubsub->stats();
        http_response res;
        res.content_type = "text/plain; version=0.0.4; charset=utf-8";
        const auto queue = news.refresh_queue();
        const auto foreign = news.foreign_sites();
        res.body = counters.render(
                       news.snapshot()->sites, broker_stats ? &*broker_stats : nullptr,
                       {live.clients(), http->open_connections(), http->refused()},
                       {queue.waiting, std::chrono::duration<double>(queue.oldest_wait).count(),
                        queue.behind, queue.parse_pages, queue.parse_bytes, queue.parse_full,
                        queue.not_modified},
                       {.degraded =
                            changes && (!news.store_unreachable().empty() || !changes->connected()),
                        .shared = changes != nullptr,
                        .sites_elsewhere = foreign.elsewhere.size(),
                        .sites_orphaned = foreign.orphaned.size()}) +
                   routes.cache_metrics() + render_fetch_metrics(renderers.client().stats()) +
                   render_alert_metrics(alert_rules.stats());
        res.with_header("Cache-Control", "no-store");
        respond(std::move(res));
      });
    // Answered from state, on the network thread: the store's verdict is what its checks last
    // found (a shared store's probe, a file's watch), never a call made for this request, which a
    // balancer's probes would multiply and a hung database would hold.
    routes.bind(route_id::readyz, [this](http_request, responder respond) {
      store_check check{.shared = store->cluster() != nullptr};
      if (changes) {
        if (auto unreachable = news.store_unreachable(); !unreachable.empty())
          check.error = std::move(unreachable);
        else if (!changes->connected())
          check.error = "not listening for changes from the other instances (reconnecting)";
      } else if (auto problem = local_store_problem(); !problem.empty()) {
        check.error = std::move(problem);
      }
      if (!check.error)
        if (auto write = news.store_write_error(); !write.empty())
          check.error = "the store cannot be written: " + write;
      auto verdict = decide_readiness(*news.snapshot(), news.sites(), cfg.refresh.jitter,
                                      unix_ms_now(), check, routes.views_built());
      http_response res;
      res.status = verdict.ready ? 200 : 503;
      res.content_type = json_content_type;
      res.body = verdict.to_json();
      res.with_header("Cache-Control", "no-store");
      respond(std::move(res));
    });
  }

  void wire_news() {
    // A page read here names its icon: fetched now when due (site_icons).
    news.on_page_read([this](const site_config& site, const std::vector<std::string>& urls) {
      icons.refreshed(site.name, site.url, urls, unix_ms_now());
    });
    // Every change takes one way out: live events first (the cheapest, and what an open page is
    // waiting for), then the broker's topics for network subscribers, then the views everyone
    // asks for, built before anyone asks.
    news.on_update([this](const headline_update& update) {
      if (!update.added.empty())
        live.publish(update.added, update.story_sources);
      if (broker_out)
        broker_out->publish(update);
      if (!update.added.empty())
        // Only what this change added is matched: never the whole snapshot again.
        alert_rules.match(update.added, update.snapshot->sites);
      live.publish_status(update.changed_status);
      live.publish_pictures(update.pictured);
      // The cards' leads' pictures, fetched when not yet tried (the page shows them once made).
      pictures.consider(*update.snapshot);
      routes.prebuild(update.snapshot);
    });
    if (cfg.metrics)
      news.on_refresh_done(
          [this](const site_config& site, std::chrono::milliseconds took, failure_kind kind) {
            counters.observe_fetch(site.name, took, kind);
          });
  }

  // The first log lines: where the configuration came from and what was chosen.
  void log_configuration() {
    log_info("msg=configuration file=" + logfmt_quoted(cfg.source.empty() ? "none" : cfg.source) +
             " store=" + logfmt_quoted(store->location()) +
             " sites=" + std::to_string(sites.size()) + " threads=" + std::to_string(threads));
    for (const auto& warning : cfg.warnings)
      log_warn("msg=" + logfmt_quoted(warning));
    for (const auto& [name, r] : renderers.by_name())
      log_info("msg=renderer name=" + name +
               " address=" + logfmt_quoted(renderer_address(cfg.renderers, name)));
    std::vector<std::string> site_list;
    for (const auto& s : sites)
      site_list.push_back(s.name + "(" + s.renderer + ")");
    log_info("msg=sites count=" + std::to_string(sites.size()) + " sites=" + joined(site_list));
    if (!alert_rules.empty()) {
      std::vector<std::string> alert_list;
      for (const auto& a : alert_rules.stats())
        alert_list.push_back(a.name + (a.has_webhook ? "(webhook)" : ""));
      log_info("msg=alerts count=" + std::to_string(alert_list.size()) +
               " alerts=" + joined(alert_list));
    }
  }

  void start() {
    // Both listeners bind before anything is started, so a bind failure (which throws, naming
    // the address) leaves no handler queued on the io_context or the worker pool.
    if (pubsub)
      pubsub->listen();
    http->listen(cfg.address, cfg.port);
    if (pubsub)
      pubsub->start();
    live.start();
    // A renderer that a site renders through from the start prepares now, not on first use (a
    // browser starts its process; the others have nothing to prepare).
    for (const auto& [name, r] : renderers.by_name())
      if (std::any_of(sites.begin(), sites.end(),
                      [&](const auto& s) { return s.renderer == name; }))
        r->warm_up();
    // Shared stores: the event log's position is read before the service loads the store, so a
    // change committed in between is applied again rather than missed.
    const auto events_seen = changes ? store->cluster()->last_event_seq() : 0;
    news.start();
    // Which sites have icons, and when each was tried: a refresh finishing first is at most a
    // second fetch of one icon.
    icons.load();
    pictures.load();
    if (changes) {
      changes->start(events_seen);
      log_info("msg=cluster instance=" + logfmt_quoted(news.instance()) +
               " lease_ms=" + std::to_string(cfg.refresh.lease.count()));
    }
    http->start();
    watch_store();
    // Scripts and tests read these lines to learn the ports (either may have been 0).
    log_info("msg=listening service=http url=http://" + cfg.address + ":" +
             std::to_string(http->port()));
    if (pubsub) {
      auto endpoint = pubsub->local_endpoint();
      log_info("msg=listening service=broker address=" + endpoint.address().to_string() + ":" +
               std::to_string(endpoint.port()));
      if (pubsub->mqtt_listening()) {
        auto mqtt = pubsub->mqtt_endpoint();
        log_info("msg=listening service=mqtt address=" + mqtt.address().to_string() + ":" +
                 std::to_string(mqtt.port()));
      }
    }
    wait_for_hangup();
    terminate.async_wait([this](boost::system::error_code ec, int signal) {
      if (!ec)
        shut_down("signal=" + std::to_string(signal));
    });
  }

  // A store of this instance's own (SQLite): every 2 s, and only once the last check ended, its
  // file is checked to be what was opened and to read. A shared store is checked by its
  // listener's probe instead, which holds no pool thread.
  void watch_store() {
    if (stopping || changes)
      return;
    store_watch.expires_after(std::chrono::seconds(2));
    store_watch.async_wait([this](boost::system::error_code ec) {
      if (ec)
        return;
      net::post(parse_pool, [this] {
        check_store();
        net::post(ioc, [this] { watch_store(); });
      });
    });
  }

  void check_store() {
    // A lost file first: reading what is left of it fails with SQLite's words, not ours.
    auto problem = store->identity_problem();
    std::string unreadable;
    if (problem.empty())
      try {
        (void)store->last_id(); // a local file: cheap, and one that cannot be read throws
      } catch (const std::exception& e) {
        unreadable = e.what();
      }
    {
      std::lock_guard lock(store_problem_mutex);
      store_problem = problem.empty() ? unreadable : problem;
    }
    if (problem == store_lost)
      return;
    store_lost = problem;
    if (problem.empty())
      log_info("msg=\"the store is what was opened again\"");
    else
      log_error("msg=\"store lost\" error=" + logfmt_quoted(problem) +
                " hint=\"/readyz answers 503; restore the file and restart\"");
  }

  // SIGHUP reloads the site files and the templates (on a worker: it reads files and parses
  // templates). Connections stay open; anything broken keeps the old ones and says why.
  // Signals coalesce: while a reload runs, any number of SIGHUPs make one more reload after it
  // (it reads the files as they are then), so a burst never queues reloads that would hold the
  // pool's threads, and the work serving needs, behind one another.
  void wait_for_hangup() {
    hangup.async_wait([this](boost::system::error_code ec, int) {
      if (ec)
        return;
      if (reloads_wanted.fetch_add(1) == 0) {
        log_info("msg=\"reloading site files and templates\" signal=SIGHUP");
        net::post(parse_pool, [this] { reload_while_wanted(); });
      }
      wait_for_hangup();
    });
  }

  // Reloads until no SIGHUP came during the last reload.
  void reload_while_wanted() {
    for (;;) {
      const auto wanted = reloads_wanted.load();
      if (!stopping)
        reload();
      // Signals that came while it ran ask for one more; none: done (the next SIGHUP posts).
      auto seen = wanted;
      if (reloads_wanted.compare_exchange_strong(seen, 0))
        return;
      reloads_wanted = 1;
      log_info("msg=\"reloading again: SIGHUP during the reload\" signals=" +
               std::to_string(seen - wanted));
    }
  }

  void reload() {
    try {
      auto new_sites = load_sites(cfg);
      for (const auto& s : new_sites)
        if (!renderers.find(s.renderer))
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
      log_error("msg=\"reload failed, keeping the old site files and templates\" error=" +
                logfmt_quoted(e.what()));
    }
  }

  // Stop accepting everywhere, let HTTP requests in flight finish and the broker deliver what
  // it has queued (each within its deadline), then stop the threads.
  void shut_down(const std::string& why) {
    if (stopping.exchange(true))
      return;
    log_info("msg=\"shutting down\" " + why);
    http->stop();
    hangup.cancel();
    terminate.cancel();
    store_watch.cancel();
    news.stop();
    routes.stop();
    icons.stop();
    pictures.stop();
    alert_rules.stop(); // matches still waiting for their webhooks are given up
    if (changes)
      changes->stop();
    live.stop(); // SSE connections end here, so the connection drain below can finish
    auto parts_left = std::make_shared<std::atomic<int>>(pubsub ? 2 : 1);
    auto part_done = [this, parts_left] {
      if (parts_left->fetch_sub(1) == 1)
        ioc.stop();
    };
    if (pubsub)
      pubsub->async_shutdown(part_done);
    drain_connections(std::chrono::steady_clock::now() + shutdown_deadline, part_done);
  }

  // Waits (polling every 50 ms) until no HTTP connection is open or the deadline passes.
  void drain_connections(std::chrono::steady_clock::time_point deadline,
                         std::function<void()> done) {
    if (http->open_connections() == 0 || std::chrono::steady_clock::now() >= deadline) {
      if (http->open_connections() > 0)
        log_warn("msg=\"shutdown deadline passed, closing open connections\" open=" +
                 std::to_string(http->open_connections()));
      return done();
    }
    drain_timer.expires_after(std::chrono::milliseconds(50));
    drain_timer.async_wait([this, deadline, done = std::move(done)](boost::system::error_code ec) {
      if (!ec)
        drain_connections(deadline, done);
    });
  }

  int run() {
    log_configuration();
    try {
      start();
    } catch (...) {
      renderers.shutdown(); // a browser started by warm_up() must not outlive a failed start
      throw;
    }
    std::vector<std::thread> network;
    for (unsigned i = 1; i < threads; ++i)
      network.emplace_back([this] {
        name_this_thread("nd-net");
        ioc.run();
      });
    ioc.run();
    for (auto& t : network)
      t.join();
    if (connection_loops)
      connection_loops->stop(); // connections still open past the shutdown deadline are dropped
    renderers.shutdown();       // kills the browser's process group; renders in flight are dropped
    // Parses are bounded before they start (dom::max_nesting_depth, max_elements), so this
    // waits at most for one page's parse per scrape thread.
    filtered_pool.join();
    build_pool.join();
    scrape_pool.join();
    parse_pool.join();
    log_info("msg=\"newsdesk stopped\"");
    return 0;
  }

  config cfg;
  unsigned threads;
  named_thread_pool parse_pool; // store writes, reloads, representations: never on a network thread
  // Parsing pages: a slow page holds up only other pages, and, niced, never a request.
  low_priority_pool scrape_pool;
  low_priority_pool filtered_pool; // filtered views: they wait while anything else runs
  // The views every change rebuilds: one thread (rounds run one at a time), below serving's
  // priority, so /readyz and store writes on the worker pool never queue behind a build.
  low_priority_pool build_pool;
  net::io_context ioc;
  // HTTP connections, a loop per thread, when configured (else on strands of ioc). Declared
  // before everything that may hold a connection's responder (the news service, the routes'
  // cache), so it outlives them.
  std::optional<event_loops> connection_loops;
  std::vector<site_config> sites; // as loaded at startup; news.sites() has the current ones
  std::shared_ptr<const news_page> page;
  static_files files;
  renderer_set renderers;
  std::unique_ptr<headline_store> store;
  news_service news;
  server::routes routes;
  live_events live;
  site_icons icons;       // after the store and the news service it reads and tells
  site_pictures pictures; // likewise
  // Saved searches: matched in on_update, published through `pubsub` (declared later: the
  // publisher looks it up when called), webhooks through the renderers' HTTP client.
  alerts::alert_service alert_rules;
  server::metrics counters;
  std::unique_ptr<broker::server> pubsub;
  std::optional<headline_publisher> broker_out; // with pubsub: what changes tell its subscribers
  std::unique_ptr<change_listener> changes;     // shared stores only
  std::unique_ptr<http_server> http;
  net::signal_set hangup;
  net::signal_set terminate;
  net::steady_timer drain_timer;
  // Every 2 s the store is checked to be what was opened (a file deleted or replaced under the
  // process): one error line when it is lost, one when it is back. store_lost: the pool's only.
  net::steady_timer store_watch;
  std::string store_lost;
  mutable std::mutex store_problem_mutex; // guards store_problem
  std::string store_problem;              // the last check's verdict: "" when the file reads

  std::string local_store_problem() const {
    std::lock_guard lock(store_problem_mutex);
    return store_problem;
  }
  std::atomic<int> reloads_wanted{0}; // SIGHUPs since the running reload began (0: none runs)
  std::atomic<bool> stopping{false};
};

nlohmann::json effective_config(const config& cfg) {
  auto effective = config_to_json(cfg);
  effective["sites"] = sites_to_json(load_sites(cfg));
  if (!cfg.site_files_dir_given && !std::filesystem::is_directory(cfg.site_files_dir))
    effective.erase("site_files_dir"); // named, a missing folder would stop the next start
  return effective;
}

application::application(config cfg)
    : parts_(std::make_unique<parts>(std::move(cfg))) {}

application::~application() = default;

int application::run() {
  return parts_->run();
}

void application::stop() {
  net::post(parts_->ioc, [p = parts_.get()] { p->shut_down("reason=requested"); });
}

} // namespace newsdesk::server

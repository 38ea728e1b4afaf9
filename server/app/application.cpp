#include "server/app/application_parts.hpp"

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
#include "server/live/live_events.hpp"
#include "server/news/headline_store.hpp"
#include "server/news/news_service.hpp"
#include "server/news/site_icons.hpp"
#include "server/pictures/site_pictures.hpp"
#include "server/render/renderers.hpp"
#include "server/store/change_listener.hpp"
#include "server/views/news_page.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>

#include <nlohmann/json.hpp>

#include <sched.h>
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

// One thread per core the process may run on: its CPU affinity (taskset, a container's cpuset),
// not the machine's count, which would put two network threads on each allowed core to take
// turns at it.
unsigned thread_count(const config& cfg) {
  if (cfg.threads)
    return cfg.threads;
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (::sched_getaffinity(0, sizeof allowed, &allowed) == 0)
    if (const int n = CPU_COUNT(&allowed); n > 0)
      return static_cast<unsigned>(n);
  return std::max(1u, std::thread::hardware_concurrency());
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

named_thread_pool::named_thread_pool(unsigned threads, const char* name)
    : boost::asio::thread_pool(threads) {
  auto begun = std::make_shared<std::latch>(threads + 1);
  for (unsigned i = 0; i < threads; ++i)
    net::post(*this, [begun, name] {
      name_this_thread(name);
      begun->arrive_and_wait();
    });
  begun->arrive_and_wait();
}

std::int64_t application::parts::unix_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::map<std::string, live_events::site_look>
application::parts::looks_of(const std::vector<site_config>& sites) {
  std::map<std::string, live_events::site_look> looks;
  for (const auto& s : sites)
    looks[s.name] = {s.display_name, s.colour};
  return looks;
}

std::string application::parts::joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names)
    out += (out.empty() ? "" : ",") + n;
  return out;
}

application::parts::parts(config c)
    : cfg(with_descriptor_budget(std::move(c)))
    , threads(thread_count(cfg))
    , worker_pool(threads, "nd-worker")
    // Parsing may use every core (niced, it yields to serving): one parse thread per two cores
    // was a ceiling of about 1,000 heavy pages a minute while the other core idled.
    , parse_pool(threads, low_priority_pool::level::background, "nd-parse")
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
    , news(ioc, sites, renderers.by_name(), worker_pool, parse_pool.get_executor(), store.get(),
           cfg.refresh)
    , routes(news, page, files, build_pool, filtered_pool,
             {cfg.public_url, host_list(cfg.allowed_hosts), cfg.reject_unknown_hosts})
    , live(ioc, worker_pool, store.get(), looks_of(sites))
    , icons(renderers.client(), store.get(), worker_pool,
            [this](const std::string& site, const std::string& etag) { news.set_icon(site, etag); })
    // Pictures off: no store, so nothing is fetched and nothing is shown.
    , pictures(
          renderers.client(), cfg.pictures ? store.get() : nullptr, worker_pool,
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
        ioc, worker_pool, *cluster,
        [this](const std::vector<store_event>& events) {
          news.apply_events(events);
          icons.reload(); // another instance may have stored a site's icon
        },
        [this](const std::string& error, const std::string& refusal) {
          net::post(worker_pool, [this, error, refusal] { news.store_probed(error, refusal); });
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
application::parts::~parts() {
  filtered_pool.join();
  build_pool.join();
  parse_pool.join(); // a parse's result is handed to the worker pool: that one last
  worker_pool.join();
}

void application::parts::wire_news() {
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
void application::parts::log_configuration() {
  log_info("msg=configuration file=" + logfmt_quoted(cfg.source.empty() ? "none" : cfg.source) +
           " store=" + logfmt_quoted(store->location()) + " sites=" + std::to_string(sites.size()) +
           " threads=" + std::to_string(threads));
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

void application::parts::start() {
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
    if (std::any_of(sites.begin(), sites.end(), [&](const auto& s) { return s.renderer == name; }))
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

int application::parts::run() {
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
  parse_pool.join();
  worker_pool.join();
  log_info("msg=\"newsdesk stopped\"");
  return 0;
}

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

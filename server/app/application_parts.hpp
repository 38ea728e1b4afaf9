// The composition root's parts (application.hpp): every component newsdesk runs, in the order
// they are built and the reverse of the order they go. Private to server/app: application.cpp
// builds and starts them, application_routes.cpp binds the routes that need them, and
// application_lifecycle.cpp watches the store, reloads on SIGHUP and shuts down.
#pragma once

#include "broker/broker.hpp"
#include "server/alerts/alerts.hpp"
#include "server/app/application.hpp"
#include "server/app/headline_publisher.hpp"
#include "server/app/low_priority_pool.hpp"
#include "server/app/metrics.hpp"
#include "server/app/routes.hpp"
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
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace newsdesk::server {

// A thread pool whose threads carry `name` (thread_name.hpp). They are named as the pool starts,
// before anything else is queued on it: one task per thread, each held until all have begun, so
// no thread takes two.
struct named_thread_pool : boost::asio::thread_pool {
  named_thread_pool(unsigned threads, const char* name);
};

struct application::parts {
  explicit parts(config c);
  ~parts();

  // application.cpp: building and running.
  void wire_news();         // the news service's changes to their listeners
  void log_configuration(); // the first log lines: what was configured and chosen
  void start();             // binds, starts and waits for signals
  int run();                // serves until shut down

  // application_routes.cpp: the routes served from these parts (the views are routes').
  void add_routes();

  // application_lifecycle.cpp: the store's watch, SIGHUP's reloads, the shutdown.
  void watch_store();
  void check_store();
  void wait_for_hangup();
  void reload_while_wanted();
  void reload();
  void shut_down(const std::string& why);
  void drain_connections(std::chrono::steady_clock::time_point deadline,
                         std::function<void()> done);

  static std::int64_t unix_ms_now();
  // Each site's display name and colour, which live events carry with its headlines.
  static std::map<std::string, live_events::site_look>
  looks_of(const std::vector<site_config>& sites);
  static std::string joined(const std::vector<std::string>& names);

  config cfg;
  unsigned threads;
  named_thread_pool
      worker_pool; // store writes, reloads, representations: never on a network thread
  // Parsing pages: a slow page holds up only other pages, and, niced, never a request.
  low_priority_pool parse_pool;
  low_priority_pool filtered_pool; // filtered views: they wait while anything else runs
  // The views every change rebuilds: one thread (rounds run one at a time), below serving's
  // priority, so /readyz and store writes on the worker pool never queue behind a build.
  low_priority_pool build_pool;
  boost::asio::io_context ioc;
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
  boost::asio::signal_set hangup;
  boost::asio::signal_set terminate;
  boost::asio::steady_timer drain_timer;
  // Every 2 s the store is checked to be what was opened (a file deleted or replaced under the
  // process): one error line when it is lost, one when it is back. store_lost: the pool's only.
  boost::asio::steady_timer store_watch;
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

} // namespace newsdesk::server

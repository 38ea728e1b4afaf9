// The composition root: builds every component of newsdesk from one configuration and owns
// their lifetimes. main() parses the command line and calls run().
//
// Construction does everything that can fail with a clear message before anything listens:
// the site files and templates load, the store opens (a broken store file names itself), the
// renderers are made. run() binds the HTTP listener and the broker (a bind failure throws naming
// the address), starts the refreshes and timers, logs where the configuration came from and what
// was chosen, and serves until SIGINT/SIGTERM (or stop()). Shutdown stops accepting, lets
// requests in flight finish (at most shutdown_deadline), drains the broker, stops and joins every
// thread, and stops the browser. SIGHUP reloads the site files and templates on a worker.
//
// Threads: run() runs the network threads (config `threads`) and returns when they have stopped.
// stop() may be called from any thread.
#pragma once

#include "server/app/config.hpp"

#include <nlohmann/json_fwd.hpp>

#include <memory>

namespace newsdesk::server {

class application {
 public:
  // Throws config_error, scrapers::site_file_error, or std::runtime_error naming what failed.
  explicit application(config cfg);
  ~application();
  application(const application&) = delete;
  application& operator=(const application&) = delete;

  // Listens and serves until shutdown. Returns the process exit code (0 after a graceful stop).
  int run();
  // Starts the graceful shutdown SIGTERM starts. Safe from any thread, once run() has begun.
  void stop();

  // How long shutdown waits for in-flight requests (a /news may be waiting on a slow render).
  static constexpr std::chrono::seconds shutdown_deadline{10};

 private:
  struct parts;
  std::unique_ptr<parts> parts_;
};

// What this process would run with (--print-config): every setting, and each site as resolved
// (its scraper, renderer and timings). Fed back as --config, it gives the same configuration.
nlohmann::json effective_config(const config& cfg);

} // namespace newsdesk::server

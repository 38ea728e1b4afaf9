// The application's life after it started: its own store watched, the site files and
// templates reloaded on SIGHUP, and the graceful shutdown (stop accepting, drain, stop).
#include "server/app/application_parts.hpp"

#include "server/core/log.hpp"

#include <boost/asio/post.hpp>

namespace newsdesk::server {

namespace net = boost::asio;

// A store of this instance's own (SQLite): every 2 s, and only once the last check ended, its
// file is checked to be what was opened and to read. A shared store is checked by its
// listener's probe instead, which holds no pool thread.
void application::parts::watch_store() {
  if (stopping || changes)
    return;
  store_watch.expires_after(std::chrono::seconds(2));
  store_watch.async_wait([this](boost::system::error_code ec) {
    if (ec)
      return;
    net::post(worker_pool, [this] {
      check_store();
      net::post(ioc, [this] { watch_store(); });
    });
  });
}

void application::parts::check_store() {
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
void application::parts::wait_for_hangup() {
  hangup.async_wait([this](boost::system::error_code ec, int) {
    if (ec)
      return;
    if (reloads_wanted.fetch_add(1) == 0) {
      log_info("msg=\"reloading site files and templates\" signal=SIGHUP");
      net::post(worker_pool, [this] { reload_while_wanted(); });
    }
    wait_for_hangup();
  });
}

// Reloads until no SIGHUP came during the last reload.
void application::parts::reload_while_wanted() {
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

void application::parts::reload() {
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
void application::parts::shut_down(const std::string& why) {
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
void application::parts::drain_connections(std::chrono::steady_clock::time_point deadline,
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

} // namespace newsdesk::server

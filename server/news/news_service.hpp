// Keeps every configured site's headlines fresh in the background and serves them from memory.
//
// Three parts, each with its own lock, and this type joining them:
// - site_schedule: when each site is due (its interval with jitter, back-off after failures,
//   manual refreshes; with a shared store, the claims and leases that make a site render once
//   per interval across the cluster);
// - site_refresh: one refresh, render to headlines (the render limit, retries, parsing within a
//   CPU budget on its own pool);
// - headline_state: what the page shows (the snapshot, readiness, the cold start).
// This type writes each refresh to the store, which returns what it changed, and hands that
// change (a site_change) to the headline state, which passes it on to every reader; in a
// cluster the changes other instances committed arrive from the store's event log as the same
// type and take the same way (apply_events). docs/architecture.md draws the whole path.
//
// A failed refresh keeps the site's last good headlines, marked stale with the error. Every
// headline is recorded in the store, so a restart serves the last headlines at once; history
// older than the retention is pruned at start and every prune_period after. The set of sites can
// change while it runs (reconfigure(), on SIGHUP): refreshes in flight for a removed site are
// dropped.
//
// Time comes from a news_clock (news_clock.hpp): the real clocks and asio timers by default, a
// manual clock in tests. Jitter comes from a random engine seeded at random unless a seed is
// given, so a test can replay the same delays.
//
// Threads: all public members may be called from any thread.
#pragma once

#include "server/news/headline.hpp"
#include "server/news/headline_state.hpp"
#include "server/news/news_clock.hpp"
#include "server/news/site_config.hpp"
#include "server/news/site_refresh.hpp"
#include "server/news/site_schedule.hpp"
#include "server/render/renderer.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace boost::asio {
class io_context;
class thread_pool;
} // namespace boost::asio

namespace newsdesk::server {

class headline_store;
class cluster_store;
struct store_event;

// What tests replace. Both optional: the defaults are what production runs with.
struct news_service_seams {
  // Time and timers; must outlive the service. Null: an asio_clock on the service's io_context.
  news_clock* clock = nullptr;
  // Seed of the random engine behind the refresh and retry jitter. None: std::random_device.
  std::optional<std::uint64_t> seed;
};

class news_service {
 public:
  // How often history past settings.retention is pruned: the retention is days, so an hour
  // late costs nothing, while each prune is one indexed DELETE.
  static constexpr std::chrono::hours prune_period{1};

  // `renderers` maps the renderer names `sites` use; `store` may be null (no history). All must
  // outlive the service. Renders start and ready views are answered on `ioc`'s threads; the
  // store is written and listeners are called on `worker_pool` (the worker pool); pages are
  // parsed on `scrape` (it may be the same pool's; production gives parsing threads of its own,
  // below serving's priority).
  news_service(boost::asio::io_context& ioc, std::vector<site_config> sites,
               std::map<std::string, renderer*> renderers, boost::asio::thread_pool& worker_pool,
               boost::asio::any_io_executor scrape, headline_store* store,
               refresh_settings settings, news_service_seams seams = {});
  ~news_service();

  // Called with every change of what the page shows (a new snapshot, and the headlines it
  // announces: none on a site's first refresh), in the order the changes were applied, on the
  // thread that applied it (the worker pool, or the caller of reconfigure()). Set before start().
  void on_update(std::function<void(const headline_update&)> listener);

  // Called when a refresh of a site finishes (after its retries), with how long it took and
  // the kind of failure (none on success), from any thread, once the snapshot and the site's
  // next refresh reflect it. Set before start().
  void on_refresh_done(
      std::function<void(const site_config&, std::chrono::milliseconds, failure_kind)> listener);

  // Called on the worker pool when a refresh of a site succeeded and this instance wrote it
  // (in a cluster, only the instance that refreshed the site), with the icon URLs its page
  // named (refresh_result::icon_urls). Set before start().
  void
  on_page_read(std::function<void(const site_config&, const std::vector<std::string>&)> listener) {
    page_listener_ = std::move(listener);
  }

  // A site's icon is stored with `etag` (server/news/site_icons.hpp): the page shows it.
  void set_icon(const std::string& site, const std::string& etag) { state_.set_icon(site, etag); }
  // Pictures made of headlines' images, by source URL (server/pictures/): the page shows them.
  void set_pictures(const std::vector<std::pair<std::string, picture_ref>>& pictures) {
    state_.set_pictures(pictures);
  }

  // Loads the stored headlines, starts every site's first refresh and the retention pruning.
  // Reads the store: call it off the network threads.
  void start();
  // Cancels the timers; renders in flight finish and are dropped.
  void stop();

  std::shared_ptr<const news_snapshot> snapshot() const { return state_.snapshot(); }

  // Calls `done` with the snapshot: at once when any site has headlines or every site has been
  // tried; on a cold start, when the first round of refreshes completes or
  // settings.cold_start_wait has passed since this call, whichever is first; on stop(), at once
  // with what there is.
  void when_ready(std::function<void(std::shared_ptr<const news_snapshot>)> done) {
    state_.when_ready(std::move(done));
  }

  using trigger = site_schedule::trigger;
  // Starts a refresh of `site` (or of every site) now. Rate limited per site by
  // settings.manual_min_interval.
  std::vector<std::pair<std::string, trigger>> refresh_now(const std::optional<std::string>& site) {
    return schedule_.refresh_now(site);
  }

  // The sites as configured now, in page order.
  std::vector<site_config> sites() const { return schedule_.sites(); }

  // Shared stores: the store's events after the last one applied, in seq order (from a change
  // listener). Reads each named site's headlines and state from the store into a site_change,
  // which takes the way of a local refresh's (so every instance shows what the store holds and
  // announces the headlines first seen since the last call), with the story merges logged since
  // the last call (they move other sites' headlines too). Blocks on the store: call it on a
  // worker thread, one call at a time.
  void apply_events(const std::vector<store_event>& events);

  // Story `story`'s headlines, newest first (first seen), at most store_limits::max_story_rows:
  // every site's, also those no longer shown, from the store; without a store, those shown now.
  // Empty for an unknown story. Blocks on the store (call it off the network threads); throws
  // store_error when it cannot be read.
  std::vector<news_item> story_headlines(std::int64_t story) const;

  // Why the latest write to the store failed (a full disk, a read-only file); empty once one
  // succeeds again. /readyz reports the instance unready meanwhile.
  std::string store_write_error() const;
  // Whether the store answered the latest read or write of this instance: "" when it did, else
  // its error, and when it refused the login the server's words for that (login_refusal_of). A
  // change is logged and shown on the page as a notice (a refused login with its cause).
  void store_reachable(const std::string& error, const std::string& login_refusal = {});
  // The same from the store's own check (change_listener's probe), which a call that worked does
  // not overrule: the store counts as reachable once both say so.
  void store_probed(const std::string& error, const std::string& login_refusal = {});
  std::string store_unreachable() const;
  // How refreshes queue for render slots (for /metrics).
  site_refresh::queue_stats refresh_queue() const { return refresh_.stats(); }

  // Shared stores: the schedule's sites this instance does not have (site_schedule::foreign).
  site_schedule::foreign_sites foreign_sites() const { return schedule_.foreign(); }

  // Shared stores: this instance's name in the schedule's leases (host, process and a random
  // part, so a restarted process never inherits its predecessor's leases).
  const std::string& instance() const { return schedule_.owner(); }

  using changes = site_schedule::changes;
  // Replaces the set of sites. A site that keeps its name keeps its headlines and state; one
  // whose settings or scraper changed is refreshed now (after a render in flight finishes). A
  // new site shows what the store has for it and is refreshed now. Throws std::invalid_argument,
  // changing nothing, when a site names a renderer the service was not given.
  changes reconfigure(std::vector<site_config> sites);

 private:
  // Stops the timers, the schedule and the refreshes (stop() and the destructor).
  void halt();
  void check_renderers(const std::vector<site_config>& sites) const;
  void load_stored(const std::vector<std::string>& sites);
  void refresh(const site_schedule::ticket& t, std::shared_ptr<const site_config> site);
  void record(const site_schedule::ticket& t, const site_config& site, refresh_result result);
  site_schedule::outcome record_shared(const site_schedule::ticket& t, const site_config& site,
                                       const refresh_result& result);
  void note_store_write(std::string error);
  void show_store_state();
  void prune_history();
  std::int64_t now_ms() const;

  boost::asio::io_context& ioc_;
  std::unique_ptr<news_clock> own_clock_; // the default clock, when none was given
  news_clock* clock_;
  boost::asio::thread_pool& worker_pool_;
  headline_store* store_;
  cluster_store* cluster_; // store_->cluster(): null for a store of one instance
  refresh_settings settings_;
  std::function<void(const site_config&, std::chrono::milliseconds, failure_kind)>
      refresh_listener_;
  std::function<void(const site_config&, const std::vector<std::string>&)> page_listener_;

  headline_state state_;
  site_refresh refresh_;
  site_schedule schedule_;

  // Writes and their hand-over to the headline state happen in commit order, so live events
  // see ids ascending (a write's ids are assigned in the store, in commit order).
  std::mutex write_order_;
  std::mutex store_state_shown_;       // show_store_state() one at a time (taken before mutex_)
  mutable std::mutex mutex_;           // guards everything below
  std::int64_t published_through_ = 0; // shared stores: the newest headline id passed on
  std::int64_t merges_through_ = 0;    // shared stores: the newest story merge passed on
  std::string store_write_error_;      // the latest store write's failure, "" when it worked
  std::string store_unreachable_;      // the latest store access's failure, "" when it worked
  std::string store_probe_error_;      // the store check's verdict, "" when it answered
  std::string login_refusal_;          // either's refused login, if that is what they found
  std::unique_ptr<news_clock::timer> prune_timer_;
  bool stopped_ = false;
};

} // namespace newsdesk::server

// Keeps every configured site's headlines fresh in the background and serves them from memory.
//
// Each site refreshes on its own interval (with jitter), never with more than one render in
// flight whatever the traffic, and the renders sent out at once are capped (Splash's slots).
// A page is parsed on its own pool, never on a network thread nor on the worker pool that
// writes the store and sets up /events, and a page too deeply nested or too large in elements
// to parse in bounded time is refused before parsing (scrapers/dom.hpp). Transient failures
// (connect errors, 502/503/504, timeouts) are retried with exponential backoff and full jitter; a
// site that keeps failing waits longer between refreshes. A failed refresh keeps the site's last
// good headlines on the page, marked stale with the error. Every headline is recorded in the
// headline store, so a restart serves the last headlines at once; history older than the
// retention is pruned at start and every prune_period after. The set of sites can change
// while it runs (reconfigure(), on SIGHUP): renders in flight for a removed site are dropped.
//
// With a shared store (PostgreSQL, several instances) each refresh is first claimed in the
// store's schedule, so a site renders once per interval across the cluster: a site's timer here
// only says when to try the claim, the claim says whether this instance renders it or when to
// look again. The lease is renewed while the render runs and the write ends it; a write after
// the lease was lost is dropped. What the page shows then comes only from the store's event log
// (apply_events, fed by a change listener), on every instance alike, including the one that
// rendered.
//
// Time comes from a news_clock (news_clock.hpp): the real clocks and asio timers by default, a
// manual clock in tests. Jitter comes from a random engine seeded at random unless a seed is
// given, so a test can replay the same delays.
//
// Threads: all public members may be called from any thread.
#pragma once

#include "scrapers/scraper.hpp"
#include "server/news/headline.hpp"
#include "server/news/news_clock.hpp"
#include "server/news/site_config.hpp"
#include "server/render/renderer.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
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
  // store is written and listeners are called on `parse_pool` (the worker pool); pages are
  // parsed on `scrape_pool` (it may be the same pool; production gives parsing its own).
  news_service(boost::asio::io_context& ioc, std::vector<site_config> sites,
               std::map<std::string, renderer*> renderers, boost::asio::thread_pool& parse_pool,
               boost::asio::thread_pool& scrape_pool, headline_store* store,
               refresh_settings settings, news_service_seams seams = {});
  ~news_service();

  // Called with each refresh's new headlines (not on a site's first refresh), from a worker
  // thread. Set before start().
  void on_new_headlines(std::function<void(const std::vector<news_item>&)> listener);

  // Called when a refresh of a site finishes (after its retries), with how long it took and
  // the kind of failure ("" on success), from any thread, once the snapshot and the site's next
  // refresh reflect it. Set before start().
  void on_refresh_done(
      std::function<void(const site_config&, std::chrono::milliseconds, std::string_view)>
          listener);

  // Called with every new snapshot (any change of headlines or site status), on the worker
  // pool, in no guaranteed order between snapshots. Set before start().
  void on_snapshot(std::function<void(std::shared_ptr<const news_snapshot>)> listener);

  // Loads the stored headlines, starts every site's first refresh and the retention pruning.
  // Reads the store: call it off the network threads.
  void start();
  // Cancels the timers; renders in flight finish and are dropped.
  void stop();

  std::shared_ptr<const news_snapshot> snapshot() const;

  // Calls `done` with the snapshot: at once when any site has headlines or every site has been
  // tried; on a cold start, when the first round of refreshes completes or
  // settings.cold_start_wait has passed since this call, whichever is first; on stop(), at once
  // with what there is.
  void when_ready(std::function<void(std::shared_ptr<const news_snapshot>)> done);

  enum class trigger { started, already_running, too_soon, unknown_site };
  // Starts a refresh of `site` (or of every site) now. Rate limited per site by
  // settings.manual_min_interval.
  std::vector<std::pair<std::string, trigger>> refresh_now(const std::optional<std::string>& site);

  // The sites as configured now, in page order.
  std::vector<site_config> sites() const;

  // Shared stores: the store's events after the last one applied, in seq order (from a change
  // listener). Reloads each named site's headlines and state from the store, so every instance
  // shows what the store holds, and passes the headlines first seen since the last call to the
  // on_new_headlines listener. Blocks on the store: call it on a worker thread, one call at a
  // time.
  void apply_events(const std::vector<store_event>& events);

  // Why the latest write to the store failed (a full disk, a read-only file); empty once one
  // succeeds again. /readyz reports the instance unready meanwhile.
  std::string store_write_error() const;

  // Shared stores: this instance's name in the schedule's leases (host, process and a random
  // part, so a restarted process never inherits its predecessor's leases).
  const std::string& instance() const { return owner_; }

  // Shared stores: how long to wait before claiming again when the store could not be reached.
  static constexpr std::chrono::seconds store_retry{2};

  struct changes {
    std::vector<std::string> added, removed, changed;
  };
  // Replaces the set of sites. A site that keeps its name keeps its headlines and state; one
  // whose settings or scraper changed is refreshed now (after a render in flight finishes). A
  // new site shows what the store has for it and is refreshed now. Throws std::invalid_argument,
  // changing nothing, when a site names a renderer the service was not given.
  changes reconfigure(std::vector<site_config> sites);

 private:
  struct slot;
  using slot_ptr = std::shared_ptr<slot>;
  slot_ptr make_slot_locked(site_config site);
  void load_stored_locked(slot& s);
  void schedule(const slot_ptr& s, std::chrono::milliseconds delay);
  trigger begin_refresh(const slot_ptr& s, bool manual);
  void queue_render(const slot_ptr& s);
  void launch_render(const slot_ptr& s);
  void release_render_slot();
  void on_rendered(const slot_ptr& s, std::shared_ptr<const site_config> site,
                   render_result result);
  // `note`: what the operator should know about a success (headlines found by detection).
  void on_parsed(const slot_ptr& s, const site_config& site, std::vector<scrapers::headline> found,
                 std::chrono::milliseconds elapsed, std::string parse_error, std::string_view kind,
                 std::string note);
  void claim(const slot_ptr& s, bool manual);
  void renew_lease(const slot_ptr& s);
  void arm_renewal_locked(const slot_ptr& s);
  void hand_back_lease(std::string site);
  void finish_shared(const slot_ptr& s, const site_config& site,
                     std::vector<scrapers::headline> found, std::string error,
                     std::chrono::milliseconds elapsed, std::string_view kind);
  void store_unreachable_locked(const std::string& what);
  void finish_failure(const slot_ptr& s, const site_config& site, std::string error,
                      std::chrono::milliseconds elapsed, std::string_view kind);
  void finish_refresh_locked(const slot_ptr& s, std::chrono::milliseconds next);
  void publish_snapshot_locked();
  bool ready_locked() const; // what when_ready waits for
  void arm_cold_start_locked();
  void stop_locked();
  void note_store_write(std::string error);
  void prune_history_locked();
  std::chrono::milliseconds jittered(std::chrono::milliseconds base);
  std::int64_t now_ms() const;

  boost::asio::io_context& ioc_;
  std::unique_ptr<news_clock> own_clock_; // the default clock, when none was given
  news_clock* clock_;
  std::map<std::string, renderer*> renderers_;
  boost::asio::thread_pool& parse_pool_;
  boost::asio::thread_pool& scrape_pool_;
  headline_store* store_;
  cluster_store* cluster_; // store_->cluster(): null for a store of one instance
  refresh_settings settings_;
  std::string owner_;
  std::function<void(const std::vector<news_item>&)> listener_;
  std::function<void(const site_config&, std::chrono::milliseconds, std::string_view)>
      refresh_listener_;
  std::function<void(std::shared_ptr<const news_snapshot>)> snapshot_listener_;

  mutable std::mutex mutex_;    // guards everything below
  std::vector<slot_ptr> slots_; // in page order
  std::size_t active_renders_ = 0;
  std::deque<slot_ptr> waiting_; // sites waiting for a render slot, FIFO
  struct ready_waiter {
    std::chrono::steady_clock::time_point deadline; // answered by then, ready or not
    std::function<void(std::shared_ptr<const news_snapshot>)> done;
  };
  std::deque<ready_waiter> ready_waiters_; // in arrival order
  std::unique_ptr<news_clock::timer> cold_start_timer_;
  std::unique_ptr<news_clock::timer> prune_timer_;
  std::shared_ptr<const news_snapshot> snapshot_;
  std::uint64_t version_ = 0;
  std::mt19937_64 random_;
  std::int64_t published_through_ = 0; // shared stores: the newest headline id passed on
  std::string store_notice_;           // shared stores: why the page may be out of date
  std::string store_write_error_;      // the latest store write's failure, "" when it worked
  bool started_ = false;
  bool stopped_ = false;
};

// Sorts headlines newest first (first_seen_ms descending), as the page shows them; headlines
// first seen together keep their site's order (ids ascend in it).
void sort_items(std::vector<news_item>& items);

// True for failures worth retrying soon: the renderer or site was unreachable, overloaded or
// slow. A refused request, an empty page or a page without headlines is not retried.
bool is_transient(render_failure failure);

} // namespace newsdesk::server

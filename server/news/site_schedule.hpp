// When each site refreshes: its own interval with jitter, never more than one refresh of a site
// in flight, longer waits for a site that keeps failing, and manual refreshes limited per site.
//
// With a shared store (several instances) each refresh is first claimed in the store's
// schedule, so a site renders once per interval across the cluster: a site's timer here only
// says when to try the claim, the claim says whether this instance refreshes it or when to look
// again. The lease is renewed while the refresh runs and the write ends it (lease_for()); a
// write after the lease was lost is dropped. From start() to stop() the instance beats a
// heartbeat in the store, so the claims of the others know it is there to take its share.
//
// Threads: every member may be called from any thread. Claims, renewals and releases are
// database round trips: they run on the worker pool. `on_due` runs on a timer's thread or the
// worker pool.
#pragma once

#include "server/news/headline_store.hpp"
#include "server/news/news_clock.hpp"
#include "server/news/site_config.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace boost::asio {
class thread_pool;
} // namespace boost::asio

namespace newsdesk::server {

class site_schedule {
 public:
  struct slot;
  // One site's place in the schedule, handed to on_due and given back when the refresh ends.
  using ticket = std::shared_ptr<slot>;

  enum class trigger { started, already_running, too_soon, unknown_site };
  enum class outcome {
    succeeded,        // next refresh after the interval
    failed,           // after interval * 2^(failures in a row), capped
    dropped,          // a shared store refused the write (lease lost): look again in a lease
    store_unreachable // a shared store could not be written: try again soon
  };
  struct changes {
    std::vector<std::string> added, removed, changed;
  };

  // `cluster` may be null (one instance: local timers only); `owner` names this instance in
  // the leases. `pool` runs the store's round trips.
  site_schedule(news_clock& clock, boost::asio::thread_pool& pool, cluster_store* cluster,
                std::string owner, const refresh_settings& settings, std::uint64_t seed);
  ~site_schedule();

  // Called when a site is due and (with a shared store) claimed: refresh it now, then call
  // finished(). Set before start().
  void on_due(std::function<void(const ticket&, std::shared_ptr<const site_config>)> fn);
  // Called after each claim and heartbeat: "" when the shared store answered, else why it could not
  // be reached (and, when it refused the login, the server's words: login_refusal_of).
  void on_store_status(
      std::function<void(const std::string& error, const std::string& login_refusal)> fn);

  // Replaces the set of sites. A site that keeps its name keeps its state; one whose settings
  // or scraper changed refreshes now (after a refresh in flight ends); a new one refreshes now.
  // Before start(), only records them.
  changes set_sites(std::vector<site_config> sites);
  std::vector<site_config> sites() const; // in page order

  void start(); // every site is due at once
  void stop();  // cancels the timers and hands leases back

  // Starts a refresh of `site` (or of every site) now, at most once per manual_min_interval.
  std::vector<std::pair<std::string, trigger>> refresh_now(const std::optional<std::string>& site);

  // False once the ticket's site was removed or the schedule stopped: its result is dropped.
  bool wanted(const ticket& t) const;

  // What a write under this refresh's lease needs (owner, when the site is due again), and
  // whether the lease was already lost (then the write must not happen). Stops renewing it.
  struct lease_terms {
    refresh_record record;
    bool lost = false;
  };
  lease_terms lease_for(const ticket& t, bool success, std::int64_t now_ms,
                        std::chrono::milliseconds elapsed);

  // The refresh of `t` ended: schedules the site's next one.
  void finished(const ticket& t, outcome how);

  const std::string& owner() const { return owner_; }

  // Shared stores: how long to wait before claiming again when the store could not be reached.
  static constexpr std::chrono::seconds store_retry{2};
  // Shared stores: this instance beats every heartbeat_period and counts as alive for
  // heartbeat_ttl after each beat. Its leases hold only while it does: killed, its sites are
  // taken over within about heartbeat_ttl instead of a whole lease (refresh.lease, 15 s). Five
  // beats' worth, so a beat late behind a busy worker pool or one slow round trip (the store's
  // call timeout, 3 s) does not give the sites away.
  static constexpr std::chrono::seconds heartbeat_period{1};
  static constexpr std::chrono::seconds heartbeat_ttl{5};

  // Shared stores: the sites of the schedule this instance does not have in its own sites, as
  // its latest look found them (every audit_period). `elsewhere`: other instances render them;
  // `orphaned`: none does (overdue by more than orphan_after with no live lease: only instances
  // that had it knew it, and they are gone), so it is rendered again only when an instance that
  // has it in its sites runs.
  struct foreign_sites {
    std::vector<std::string> elsewhere, orphaned;
  };
  foreign_sites foreign() const;
  // Two queries per look: cheap enough to look often, so an orphan is told within seconds.
  static constexpr std::chrono::seconds audit_period{5};
  // A site any running instance has is claimed within a second or two of coming due (a share's
  // wait, a claim's spread): ten seconds overdue with no live lease means none has it.
  static constexpr std::chrono::seconds orphan_after{10};

 private:
  ticket make_slot(site_config site);
  void schedule_locked(const ticket& s, std::chrono::milliseconds delay);
  trigger begin(const ticket& s, bool manual);
  void claim(const ticket& s, bool manual);
  void arm_renewal_locked(const ticket& s);
  void renew(const ticket& s);
  void heartbeat();
  void audit();
  void hand_back(std::string site);
  void due(const ticket& s);
  std::chrono::milliseconds jittered_locked(std::chrono::milliseconds base);
  std::int64_t now_ms() const;

  news_clock& clock_;
  boost::asio::thread_pool& pool_;
  cluster_store* cluster_;
  const std::string owner_;
  const refresh_settings settings_;
  std::function<void(const ticket&, std::shared_ptr<const site_config>)> on_due_;
  std::function<void(const std::string&, const std::string&)> on_store_status_;
  std::unique_ptr<news_clock::timer> heartbeat_timer_; // shared stores: the next heartbeat
  std::unique_ptr<news_clock::timer> audit_timer_;     // shared stores: the next audit

  mutable std::mutex mutex_;  // guards everything below and every slot's fields
  std::vector<ticket> slots_; // in page order
  std::mt19937_64 random_;
  foreign_sites foreign_; // the latest audit's
  bool started_ = false;
  bool stopped_ = false;
};

} // namespace newsdesk::server

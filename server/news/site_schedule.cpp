#include "server/news/site_schedule.hpp"

#include "scrapers/scraper.hpp"
#include "server/core/log.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <algorithm>
#include <typeinfo>

namespace newsdesk::server {

using std::chrono::milliseconds;

// One site's place in the schedule. Every field is guarded by site_schedule::mutex_.
struct site_schedule::slot {
  slot(news_clock& clock, site_config s)
      : site(std::make_shared<const site_config>(std::move(s)))
      , timer(clock.make_timer())
      , lease_timer(clock.make_timer()) {}
  // Replaced whole by set_sites(); a refresh in flight keeps the one it started with.
  std::shared_ptr<const site_config> site;
  std::unique_ptr<news_clock::timer> timer; // the next refresh (or claim)
  bool in_flight = false;
  bool removed = false;      // set_sites() dropped the site: results in flight are ignored
  bool refresh_next = false; // the settings changed during a refresh: refresh again at once
  int failures_in_row = 0;   // refreshes that failed for good
  std::int64_t last_manual_ms = 0;
  // Shared stores: this instance holds the site's lease (a refresh runs under it); lease_lost:
  // a renewal found another owner, so the result will be dropped; due: when the write said the
  // site is due again.
  bool leased = false;
  bool lease_lost = false;
  std::uint64_t lease_generation = 0; // one per claim: a renewal of an older lease is ignored
  milliseconds due{0};
  std::unique_ptr<news_clock::timer> lease_timer;
};

namespace {

// A claim's outcome as the log names it.
const char* name_of(claim_status status) {
  static constexpr const char* names[] = {"claimed", "not_due", "leased", "rate_limited",
                                          "deferred"}; // claim_status's order
  const auto i = static_cast<std::size_t>(status);
  return i < std::size(names) ? names[i] : "unknown";
}

// A reload builds every scraper anew: the same one is the same kind (type), for the same site
// and file, with the same rules.
bool same_scraper(const scrapers::scraper* a, const scrapers::scraper* b) {
  if (a == b)
    return true;
  if (!a || !b || typeid(*a) != typeid(*b))
    return false;
  return a->site().name == b->site().name && a->site().origin == b->site().origin &&
         a->definition() == b->definition();
}

bool same_settings(const site_config& a, const site_config& b) {
  return same_scraper(a.scraper.get(), b.scraper.get()) && a.url == b.url &&
         a.renderer == b.renderer && a.wait == b.wait && a.timeout == b.timeout &&
         a.interval == b.interval;
}
} // namespace

site_schedule::site_schedule(news_clock& clock, boost::asio::thread_pool& pool,
                             cluster_store* cluster, std::string owner,
                             const refresh_settings& settings, std::uint64_t seed)
    : clock_(clock)
    , pool_(pool)
    , cluster_(cluster)
    , owner_(std::move(owner))
    , settings_(settings)
    , heartbeat_timer_(clock.make_timer())
    , audit_timer_(clock.make_timer())
    , random_(seed) {}

site_schedule::~site_schedule() {
  std::lock_guard lock(mutex_);
  stopped_ = true;
  heartbeat_timer_->cancel();
  audit_timer_->cancel();
  for (auto& s : slots_) {
    s->timer->cancel();
    s->lease_timer->cancel();
  }
}

void site_schedule::on_due(
    std::function<void(const ticket&, std::shared_ptr<const site_config>)> fn) {
  on_due_ = std::move(fn);
}

void site_schedule::on_store_status(
    std::function<void(const std::string&, const std::string&)> fn) {
  on_store_status_ = std::move(fn);
}

std::int64_t site_schedule::now_ms() const {
  return std::chrono::duration_cast<milliseconds>(clock_.system_now().time_since_epoch()).count();
}

milliseconds site_schedule::jittered_locked(milliseconds base) {
  std::uniform_real_distribution<double> spread(1.0 - settings_.jitter, 1.0 + settings_.jitter);
  return milliseconds(static_cast<long long>(static_cast<double>(base.count()) * spread(random_)));
}

site_schedule::ticket site_schedule::make_slot(site_config site) {
  return std::make_shared<slot>(clock_, std::move(site));
}

site_schedule::changes site_schedule::set_sites(std::vector<site_config> sites) {
  changes result;
  std::lock_guard lock(mutex_);
  std::vector<ticket> next;
  for (auto& site : sites) {
    auto old = std::find_if(slots_.begin(), slots_.end(),
                            [&](const ticket& s) { return s && s->site->name == site.name; });
    if (old == slots_.end()) {
      result.added.push_back(site.name);
      auto s = make_slot(std::move(site));
      if (started_)
        schedule_locked(s, milliseconds(0));
      next.push_back(std::move(s));
      continue;
    }
    auto s = std::move(*old); // leaves a null in slots_: what remains there was removed
    const bool refresh = !same_settings(*s->site, site);
    s->site = std::make_shared<const site_config>(std::move(site));
    if (refresh) {
      result.changed.push_back(s->site->name);
      if (s->in_flight)
        s->refresh_next = true;
      else if (started_)
        schedule_locked(s, milliseconds(0));
    }
    next.push_back(std::move(s));
  }
  for (auto& s : slots_)
    if (s) {
      result.removed.push_back(s->site->name);
      s->removed = true;
      s->timer->cancel();
    }
  slots_ = std::move(next);
  return result;
}

std::vector<site_config> site_schedule::sites() const {
  std::lock_guard lock(mutex_);
  std::vector<site_config> out;
  for (const auto& s : slots_)
    out.push_back(*s->site);
  return out;
}

void site_schedule::start() {
  std::lock_guard lock(mutex_);
  started_ = true;
  // Every site starts at once; the render cap queues what the renderer could not take, so a
  // cold start takes about as long as the slowest site.
  for (auto& s : slots_)
    schedule_locked(s, milliseconds(0));
  // Alive from the start, so the others' claims leave this instance its share at once.
  if (cluster_) {
    boost::asio::post(pool_, [this] { heartbeat(); });
    audit_timer_->wait(audit_period, [this] { boost::asio::post(pool_, [this] { audit(); }); });
  }
}

void site_schedule::stop() {
  std::lock_guard lock(mutex_);
  stopped_ = true;
  heartbeat_timer_->cancel();
  audit_timer_->cancel();
  // Others stop leaving due sites to this instance at once, not when its heartbeat runs out.
  if (cluster_)
    boost::asio::post(pool_, [this] {
      try {
        cluster_->leave(owner_);
      } catch (const std::exception&) {
      }
    });
  for (auto& s : slots_) {
    s->timer->cancel();
    s->lease_timer->cancel();
    // Hand leases back, so another instance takes the site over now rather than when the lease
    // runs out.
    if (s->leased)
      hand_back(s->site->name);
  }
}

bool site_schedule::wanted(const ticket& t) const {
  std::lock_guard lock(mutex_);
  return !t->removed && !stopped_;
}

std::vector<std::pair<std::string, site_schedule::trigger>>
site_schedule::refresh_now(const std::optional<std::string>& site) {
  std::vector<std::pair<ticket, std::string>> chosen; // the name read under the lock
  {
    std::lock_guard lock(mutex_);
    for (const auto& s : slots_)
      if (!site || s->site->name == *site)
        chosen.emplace_back(s, s->site->name);
  }
  std::vector<std::pair<std::string, trigger>> results;
  for (const auto& [s, name] : chosen)
    results.emplace_back(name, begin(s, true));
  if (site && results.empty())
    results.emplace_back(*site, trigger::unknown_site);
  return results;
}

void site_schedule::schedule_locked(const ticket& s, milliseconds delay) {
  if (stopped_ || s->removed)
    return;
  // The timer lives in the slot: a weak pointer keeps the wait from owning its own slot.
  s->timer->wait(delay, [this, weak = std::weak_ptr<slot>(s)] {
    if (auto self = weak.lock())
      begin(self, false);
  });
}

site_schedule::trigger site_schedule::begin(const ticket& s, bool manual) {
  {
    std::lock_guard lock(mutex_);
    if (stopped_ || s->removed)
      return trigger::too_soon;
    if (s->in_flight)
      return trigger::already_running; // single flight: at most one refresh of a site at a time
    if (manual) {
      auto now = now_ms();
      if (now - s->last_manual_ms < settings_.manual_min_interval.count())
        return trigger::too_soon;
      s->last_manual_ms = now;
      s->timer->cancel(); // the scheduled refresh is replaced by this one
    }
    s->in_flight = true;
    s->refresh_next = false;
  }
  if (cluster_)
    boost::asio::post(pool_, [this, s, manual] { claim(s, manual); });
  else
    due(s);
  return trigger::started;
}

void site_schedule::due(const ticket& s) {
  std::shared_ptr<const site_config> site;
  {
    std::lock_guard lock(mutex_);
    site = s->site;
  }
  on_due_(s, std::move(site));
}

// On the worker pool: the claim is a database round trip.
void site_schedule::claim(const ticket& s, bool manual) {
  std::string name;
  {
    std::lock_guard lock(mutex_);
    name = s->site->name;
  }
  claim_result result;
  std::string error, refusal;
  try {
    result = cluster_->claim(name, owner_, settings_.lease, manual, settings_.manual_min_interval);
  } catch (const std::exception& e) {
    error = e.what();
    refusal = login_refusal_of(e);
  }
  if (on_store_status_)
    on_store_status_(error, refusal);
  std::unique_lock lock(mutex_);
  if (!error.empty()) {
    s->in_flight = false;
    schedule_locked(s, jittered_locked(store_retry));
    return;
  }
  const bool claimed = result.status == claim_status::claimed;
  if (!claimed || s->removed || stopped_) {
    if (claimed)
      hand_back(name);
    s->in_flight = false;
    // Look again when the site is due or its lease runs out, spread a little so instances that
    // woke together do not all claim in the same millisecond. A lease outlasts a short interval:
    // the holder's write makes the site due again an interval after the render, long before the
    // lease would have run out, so look within half an interval (and learn the due time then).
    // Sleeping the whole lease would leave every due time to the holder.
    auto retry = result.retry_in;
    if (result.status == claim_status::leased)
      retry = std::min(retry, s->site->interval / 2);
    std::uniform_int_distribution<long long> spread(0, 250);
    retry += milliseconds(spread(random_));
    schedule_locked(s, retry);
    lock.unlock();
    // Told for tests and operators following a cluster's hand-overs (log_level debug).
    log(log_level::debug, "msg=\"claim not granted\" site=" + name + " status=" +
                              std::string(claimed ? "handed_back" : name_of(result.status)) +
                              " retry_ms=" + std::to_string(retry.count()));
    return;
  }
  s->leased = true;
  s->lease_lost = false;
  ++s->lease_generation;
  arm_renewal_locked(s);
  lock.unlock();
  due(s);
}

void site_schedule::arm_renewal_locked(const ticket& s) {
  s->lease_timer->wait(settings_.lease / 3, [this, weak = std::weak_ptr<slot>(s)] {
    if (auto self = weak.lock())
      boost::asio::post(pool_, [this, self] { renew(self); });
  });
}

// Ends a lease without a write, on the pool (the caller may be a network thread). Should the
// database not answer, the lease runs out by itself.
void site_schedule::hand_back(std::string site) {
  boost::asio::post(pool_, [this, site = std::move(site)] {
    try {
      cluster_->release(site, owner_);
    } catch (const std::exception&) {
    }
  });
}

// On the worker pool, every heartbeat_period from start() to stop(): this instance counts
// towards the shares, and holds its leases, while it beats.
void site_schedule::heartbeat() {
  // Reported as a claim's outcome is: a beat a second says when the store answers again even
  // while no site comes due (and a claim's failure stays shown only until then).
  std::string error, refusal;
  try {
    cluster_->heartbeat(owner_, heartbeat_ttl);
  } catch (const std::exception& e) {
    error = e.what();
    refusal = login_refusal_of(e);
  }
  if (on_store_status_)
    on_store_status_(error, refusal);
  std::lock_guard lock(mutex_);
  if (stopped_)
    return;
  heartbeat_timer_->wait(heartbeat_period,
                         [this] { boost::asio::post(pool_, [this] { heartbeat(); }); });
}

site_schedule::foreign_sites site_schedule::foreign() const {
  std::lock_guard lock(mutex_);
  return foreign_;
}

// On the worker pool, every audit_period: the schedule's sites this instance does not have. Each
// is said once when it appears (and when it is orphaned); the leases of instances gone are ended,
// so that whichever instance has the site next claims it at once.
void site_schedule::audit() {
  foreign_sites found;
  std::vector<std::string> released;
  try {
    released = cluster_->release_dead_leases();
    const auto rows = cluster_->scheduled_sites();
    std::lock_guard lock(mutex_);
    for (const auto& row : rows) {
      if (std::any_of(slots_.begin(), slots_.end(),
                      [&](const ticket& s) { return s->site->name == row.site; }))
        continue;
      const bool orphaned = !row.held && row.overdue > orphan_after;
      (orphaned ? found.orphaned : found.elsewhere).push_back(row.site);
    }
  } catch (const std::exception&) {
    found = foreign(); // the claims report an unreachable store; kept until the next look
  }
  std::vector<std::string> newly_elsewhere, newly_orphaned;
  {
    std::lock_guard lock(mutex_);
    const auto is_new = [](const std::vector<std::string>& before, const std::string& site) {
      return std::find(before.begin(), before.end(), site) == before.end();
    };
    for (const auto& site : found.elsewhere)
      if (is_new(foreign_.elsewhere, site))
        newly_elsewhere.push_back(site);
    for (const auto& site : found.orphaned)
      if (is_new(foreign_.orphaned, site))
        newly_orphaned.push_back(site);
    foreign_ = std::move(found);
  }
  for (const auto& site : released)
    log_info("msg=\"lease released\" site=" + logfmt_quoted(site) +
             " detail=\"its holder stopped beating its heartbeat\"");
  for (const auto& site : newly_elsewhere)
    log_info("msg=\"site known to other instances only\" site=" + logfmt_quoted(site) +
             " detail=\"in the shared schedule but not in this instance's sites: only the "
             "instances that have it render it\"");
  for (const auto& site : newly_orphaned)
    log_warn("msg=\"site rendered by no running instance\" site=" + logfmt_quoted(site) +
             " detail=\"in the shared schedule, overdue, and in no running instance's sites "
             "(the instances that had it are gone): add it to this instance's sites, or ignore "
             "this if it was removed on purpose\"");
  std::lock_guard lock(mutex_);
  if (!stopped_)
    audit_timer_->wait(audit_period, [this] { boost::asio::post(pool_, [this] { audit(); }); });
}

// On the worker pool, every third of the lease while a refresh runs under it.
void site_schedule::renew(const ticket& s) {
  std::string name;
  std::uint64_t generation;
  {
    std::lock_guard lock(mutex_);
    if (!s->leased || s->removed || stopped_)
      return;
    name = s->site->name;
    generation = s->lease_generation;
  }
  bool held = true;
  try {
    held = cluster_->renew(name, owner_, settings_.lease);
  } catch (const std::exception& e) {
    // Try again at the next renewal; the lease may still run out meanwhile.
    log_warn("msg=\"lease renewal failed\" site=" + name + " error=" + logfmt_quoted(e.what()));
  }
  std::lock_guard lock(mutex_);
  // The refresh this renewal was for ended (and maybe another claimed the site) meanwhile: what
  // the database said is about a lease that is no longer this one.
  if (!s->leased || s->lease_generation != generation)
    return;
  if (!held) {
    log_warn("msg=\"lease lost\" site=" + name +
             " detail=\"another instance took the site over; this render's result will be "
             "dropped\"");
    s->lease_lost = true;
    return;
  }
  if (s->leased && !s->removed && !stopped_)
    arm_renewal_locked(s);
}

site_schedule::lease_terms site_schedule::lease_for(const ticket& t, bool success, std::int64_t now,
                                                    milliseconds elapsed) {
  std::lock_guard lock(mutex_);
  lease_terms terms;
  terms.record.now_ms = now;
  terms.record.elapsed_ms = elapsed.count();
  if (!cluster_)
    return terms;
  t->lease_timer->cancel();
  terms.lost = t->lease_lost;
  const auto factor = success ? 1LL
                              : std::min<long long>(settings_.max_backoff_factor,
                                                    1LL << std::min(t->failures_in_row + 1, 30));
  t->due = jittered_locked(t->site->interval * factor);
  terms.record.lease_owner = owner_;
  terms.record.due_again_in = t->due;
  return terms;
}

void site_schedule::finished(const ticket& t, outcome how) {
  std::lock_guard lock(mutex_);
  t->in_flight = false;
  t->leased = false;
  t->lease_timer->cancel();
  switch (how) {
  case outcome::store_unreachable:
    schedule_locked(t, jittered_locked(store_retry));
    break;
  case outcome::dropped:
    schedule_locked(t, settings_.lease); // whoever holds the site now has finished by then
    break;
  case outcome::succeeded:
  case outcome::failed: {
    t->failures_in_row = how == outcome::succeeded ? 0 : t->failures_in_row + 1;
    auto next = t->due;
    if (!cluster_) {
      const auto factor = std::min<long long>(settings_.max_backoff_factor,
                                              1LL << std::min(t->failures_in_row, 30));
      next = jittered_locked(t->site->interval * factor);
    }
    // Settings that changed while this refresh ran (a reload) are tried at once.
    schedule_locked(t, t->refresh_next ? milliseconds(0) : next);
    break;
  }
  }
  t->refresh_next = false;
}

} // namespace newsdesk::server

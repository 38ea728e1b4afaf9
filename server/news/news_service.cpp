#include "server/news/news_service.hpp"

#include "scrapers/text.hpp"
#include "server/core/log.hpp"
#include "server/news/headline_store.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <set>
#include <unordered_set>

namespace newsdesk::server {

using std::chrono::milliseconds;

namespace {

// This process's name in the schedule's leases: readable in the database (host and pid), and
// unique even when a restarted process gets the same pid.
std::string make_instance_name() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0)
    std::snprintf(host, sizeof host, "unknown");
  std::random_device random;
  char tail[16];
  std::snprintf(tail, sizeof tail, "%08x", random());
  return std::string(host) + ":" + std::to_string(::getpid()) + ":" + tail;
}

std::vector<news_item> items_of(const std::vector<stored_headline>& rows) {
  std::vector<news_item> items;
  items.reserve(rows.size());
  for (const auto& row : rows)
    items.push_back(item_of(row));
  return items;
}

std::vector<std::int64_t> ids_of(const std::vector<stored_headline>& rows) {
  std::vector<std::int64_t> ids;
  ids.reserve(rows.size());
  for (const auto& row : rows)
    ids.push_back(row.id);
  return ids;
}

std::vector<std::string> names_of(const std::vector<site_config>& sites) {
  std::vector<std::string> names;
  for (const auto& s : sites)
    names.push_back(s.name);
  return names;
}

} // namespace

news_service::news_service(boost::asio::io_context& ioc, std::vector<site_config> sites,
                           std::map<std::string, renderer*> renderers,
                           boost::asio::thread_pool& worker_pool,
                           boost::asio::any_io_executor scrape, headline_store* store,
                           refresh_settings settings, news_service_seams seams)
    : ioc_(ioc)
    , own_clock_(seams.clock ? nullptr : std::make_unique<asio_clock>(ioc))
    , clock_(seams.clock ? seams.clock : own_clock_.get())
    , worker_pool_(worker_pool)
    , store_(store)
    , cluster_(store ? store->cluster() : nullptr)
    , settings_(settings)
    , state_(*clock_, settings.cold_start_wait,
             [&ioc](std::function<void()> fn) { boost::asio::post(ioc, std::move(fn)); })
    , refresh_(ioc, std::move(scrape), *clock_, std::move(renderers), settings,
               seams.seed ? *seams.seed : std::random_device{}())
    , schedule_(*clock_, worker_pool, cluster_, make_instance_name(), settings,
                seams.seed ? *seams.seed + 1 : std::random_device{}()) {
  check_renderers(sites);
  state_.set_sites(sites);
  schedule_.set_sites(std::move(sites));
  schedule_.on_due([this](const site_schedule::ticket& t, std::shared_ptr<const site_config> s) {
    refresh(t, std::move(s));
  });
  schedule_.on_store_status([this](const std::string& error, const std::string& refusal) {
    store_reachable(error, refusal);
  });
}

news_service::~news_service() {
  // Not stop(): the views still waiting belong to routes that may be gone by now; their
  // responders are dropped (application stops the service, answering them, before this).
  halt();
  state_.abandon();
}

void news_service::halt() {
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
    if (prune_timer_)
      prune_timer_->cancel();
  }
  schedule_.stop();
  refresh_.stop();
}

void news_service::on_update(std::function<void(const headline_update&)> listener) {
  state_.on_update(std::move(listener));
}

void news_service::on_refresh_done(
    std::function<void(const site_config&, std::chrono::milliseconds, failure_kind)> listener) {
  refresh_listener_ = std::move(listener);
}

std::int64_t news_service::now_ms() const {
  return std::chrono::duration_cast<milliseconds>(clock_->system_now().time_since_epoch()).count();
}

void news_service::check_renderers(const std::vector<site_config>& sites) const {
  for (const auto& site : sites)
    if (!refresh_.has_renderer(site.renderer))
      throw std::invalid_argument("site '" + site.name + "' uses the " + site.renderer +
                                  " renderer, which is not running (restart newsdesk to start it)");
}

// Serve what the store has at once: each site's last successful refresh.
void news_service::load_stored(const std::vector<std::string>& sites) {
  if (!store_ || sites.empty())
    return;
  std::map<std::string, site_state> states;
  for (auto& st : store_->sites())
    states[st.site] = std::move(st);
  for (const auto& name : sites) {
    site_change change;
    change.state = states.count(name) ? states[name] : site_state{name};
    change.current = items_of(store_->current(name));
    change.finishes_refresh = false;
    state_.apply(change);
  }
}

void news_service::start() {
  load_stored(names_of(schedule_.sites()));
  {
    std::lock_guard lock(mutex_);
    // What is stored now is shown as it is; only headlines committed from here on are new, and
    // only merges logged from here on move what it shows.
    if (cluster_) {
      published_through_ = store_->last_id();
      merges_through_ = store_->last_merge_seq();
    }
    prune_timer_ = clock_->make_timer();
  }
  state_.start();
  schedule_.start();
  prune_history();
}

void news_service::stop() {
  halt();
  state_.stop();
}

// The DELETE runs on the worker pool: over a large history it must not hold a network thread.
void news_service::prune_history() {
  {
    std::lock_guard lock(mutex_);
    if (!store_ || stopped_) // without a store (unit tests) nothing ages
      return;
    boost::asio::post(worker_pool_, [this, cutoff = now_ms() - settings_.retention.count()] {
      try {
        // In a cluster one instance prunes per period, whichever claims it.
        if (cluster_ && !cluster_->claim_prune(schedule_.owner(), prune_period))
          return;
        if (auto removed = store_->prune(cutoff))
          log_info("msg=\"pruned history\" rows=" + std::to_string(removed));
      } catch (const std::exception& e) {
        log_warn("msg=\"prune failed\" error=" + logfmt_quoted(e.what()));
      }
    });
    prune_timer_->wait(prune_period, [this] { prune_history(); });
  }
  // Hourly too: whether a site has been quiet for far longer than usual (its refreshes judge the
  // rest as they come). Outside the lock: a changed verdict publishes to the listeners.
  state_.recheck_health(now_ms());
}

news_service::changes news_service::reconfigure(std::vector<site_config> sites) {
  check_renderers(sites);
  const auto before = names_of(schedule_.sites());
  std::vector<std::string> added;
  for (const auto& s : sites)
    if (std::find(before.begin(), before.end(), s.name) == before.end())
      added.push_back(s.name);
  state_.set_sites(sites);
  bool started;
  {
    std::lock_guard lock(mutex_);
    started = prune_timer_ != nullptr;
  }
  // A new site shows what the store has for it before its first refresh is scheduled.
  if (started)
    load_stored(added);
  return schedule_.set_sites(std::move(sites));
}

void news_service::refresh(const site_schedule::ticket& t,
                           std::shared_ptr<const site_config> site) {
  state_.attempted(site->name, now_ms());
  refresh_.run(
      site, [this, t] { return schedule_.wanted(t); },
      [this, t, site](refresh_result result) {
        // The store is written on the worker pool, never on a network thread.
        boost::asio::post(worker_pool_, [this, t, site, result = std::move(result)]() mutable {
          record(t, *site, std::move(result));
        });
      });
}

// On the worker pool: writes the refresh to the store and hands what it changed to the headline
// state. A shared store's write comes back through its event log instead (apply_events), as on
// every other instance.
void news_service::record(const site_schedule::ticket& t, const site_config& site,
                          refresh_result result) {
  if (result.error.size() > store_limits::max_error_bytes)
    result.error = std::string(scrapers::cut_utf8(result.error, store_limits::max_error_bytes));
  site_schedule::outcome how;
  std::size_t announced = 0;
  if (cluster_) {
    how = record_shared(t, site, result);
  } else {
    if (!schedule_.wanted(t))
      return;
    const auto now = now_ms();
    site_change change;
    change.state = {site.name,  now, result.ok() ? now : 0, result.error, result.elapsed.count(),
                    result.kind};
    change.note = result.note;
    refresh_record record{now, result.elapsed.count()};
    record.failure = result.kind;
    std::lock_guard order(write_order_);
    try {
      if (store_ && result.ok()) {
        auto written = store_->record_refresh(site.name, result.found, record);
        change.current = items_of(written.current);
        change.added = ids_of(written.added);
        change.merges = std::move(written.merges);
      } else if (store_) {
        store_->record_failure(site.name, result.error, record);
      }
      note_store_write({});
    } catch (const std::exception& e) {
      log_error("msg=\"store write failed\" site=" + site.name +
                " error=" + logfmt_quoted(e.what()));
      note_store_write(e.what());
    }
    if (result.ok() && !change.current) { // no store, or it failed: show the page as found
      change.current.emplace();
      for (auto& h : result.found)
        change.current->push_back({std::move(h), 0, now, false});
    }
    how = result.ok() ? site_schedule::outcome::succeeded : site_schedule::outcome::failed;
    // The schedule first: once the page shows this refresh, a manual refresh may start the next
    // (which waits for write_order_, so its change is applied after this one).
    schedule_.finished(t, how);
    announced = state_.apply(change).size();
  }
  if (cluster_)
    schedule_.finished(t, how);
  if (how == site_schedule::outcome::dropped)
    log_warn("msg=\"refresh dropped\" site=" + site.name +
             " detail=\"the lease ran out during the render and another instance took the site "
             "over\"");
  else if (how == site_schedule::outcome::succeeded)
    log_info("msg=\"site refreshed\" site=" + site.name +
             " headlines=" + std::to_string(result.found.size()) +
             " new=" + std::to_string(announced) + " ms=" + std::to_string(result.elapsed.count()));
  if (page_listener_ && how == site_schedule::outcome::succeeded)
    page_listener_(site, result.icon_urls);
  if (refresh_listener_)
    refresh_listener_(site, result.elapsed, result.kind);
}

// Writes the result under the lease. The page changes when the write's event comes back.
site_schedule::outcome news_service::record_shared(const site_schedule::ticket& t,
                                                   const site_config& site,
                                                   const refresh_result& result) {
  auto terms = schedule_.lease_for(t, result.ok(), now_ms(), result.elapsed);
  terms.record.failure = result.kind;
  if (terms.lost)
    return site_schedule::outcome::dropped;
  try {
    if (result.ok())
      store_->record_refresh(site.name, result.found, terms.record);
    else
      store_->record_failure(site.name, result.error, terms.record);
  } catch (const lease_lost&) {
    return site_schedule::outcome::dropped;
  } catch (const std::exception& e) {
    store_reachable(e.what(), login_refusal_of(e));
    return site_schedule::outcome::store_unreachable;
  }
  store_reachable({});
  return result.ok() ? site_schedule::outcome::succeeded : site_schedule::outcome::failed;
}

void news_service::store_reachable(const std::string& error, const std::string& login_refusal) {
  {
    std::lock_guard lock(mutex_);
    store_unreachable_ = error;
    if (!error.empty() || store_probe_error_.empty())
      login_refusal_ = login_refusal;
  }
  show_store_state();
}

void news_service::store_probed(const std::string& error, const std::string& login_refusal) {
  {
    std::lock_guard lock(mutex_);
    store_probe_error_ = error;
    if (!error.empty() || store_unreachable_.empty())
      login_refusal_ = login_refusal;
  }
  show_store_state();
}

// One line and one notice per outage, whichever found it (a claim, a write, the store's check); a
// refused login says what was refused and what to check.
void news_service::show_store_state() {
  // One at a time, from reading the verdict to showing it: otherwise a failure read before a
  // success could be shown after it, and the notice would stay up with the store answering.
  std::lock_guard shown(store_state_shown_);
  std::string error, refusal;
  {
    std::lock_guard lock(mutex_);
    error = store_probe_error_.empty() ? store_unreachable_ : store_probe_error_;
    refusal = login_refusal_;
  }
  if (error.empty()) {
    if (state_.set_notice({}))
      log_info("msg=\"store reachable again\"");
    return;
  }
  const auto notice =
      refusal.empty()
          ? std::string("The database cannot be reached: the headlines shown may be out of date.")
          : "The database refused newsdesk's login (" + refusal +
                "): check store credentials. The headlines shown may be out of date.";
  if (state_.set_notice(notice))
    log_warn(std::string(refusal.empty() ? "msg=\"store unreachable\""
                                         : "msg=\"store refused the login\"") +
             " error=" + logfmt_quoted(error) +
             " detail=\"serving the headlines in memory until it answers\"");
}

std::string news_service::store_unreachable() const {
  std::lock_guard lock(mutex_);
  return store_probe_error_.empty() ? store_unreachable_ : store_probe_error_;
}

void news_service::note_store_write(std::string error) {
  std::lock_guard lock(mutex_);
  store_write_error_ = std::move(error);
}

std::vector<news_item> news_service::story_headlines(std::int64_t story) const {
  if (store_)
    return items_of(store_->story_headlines(story, store_limits::max_story_rows));
  std::vector<news_item> shown;
  for (const auto& item : snapshot()->headlines)
    if (item.story == story)
      shown.push_back(item);
  return shown;
}

std::string news_service::store_write_error() const {
  std::lock_guard lock(mutex_);
  return store_write_error_;
}

void news_service::apply_events(const std::vector<store_event>& events) {
  if (!store_ || events.empty())
    return;
  std::set<std::string> touched;
  for (const auto& e : events)
    touched.insert(e.site);
  std::int64_t through, merged_through;
  {
    std::lock_guard lock(mutex_);
    through = published_through_;
    merged_through = merges_through_;
  }
  std::map<std::string, site_change> by_site;
  std::vector<stored_headline> fresh_rows;
  std::vector<logged_merge> merges;
  try {
    // Merges first: a row read after them is stored with the story they made, and applying a
    // merge to a story no headline holds any more changes nothing.
    merges = store_->merges_after(merged_through, store_limits::max_since_rows);
    fresh_rows = store_->since(through, store_limits::max_since_rows);
    // After a long outage more may have come than one read returns: those are in the pages
    // already, and are not announced one by one.
    if (fresh_rows.size() == store_limits::max_since_rows) {
      through = store_->last_id();
    } else if (!fresh_rows.empty()) {
      through = fresh_rows.back().id;
      // A row of another site committed since the last call is announced now, with its site,
      // though that site's own event comes later: `through` moves past it here.
      for (const auto& row : fresh_rows)
        touched.insert(row.site);
    }
    // Read after the new rows: what a site shows then holds each of them.
    for (const auto& site : touched)
      by_site[site].current = items_of(store_->current(site));
    for (auto& st : store_->sites())
      if (auto c = by_site.find(st.site); c != by_site.end())
        c->second.state = std::move(st);
  } catch (const std::exception& e) {
    store_reachable(e.what(), login_refusal_of(e));
    throw;
  }
  store_reachable({});
  log(log_level::debug, "msg=\"applying events\" first=" + std::to_string(events.front().seq) +
                            " last=" + std::to_string(events.back().seq) +
                            " new_headlines=" + std::to_string(fresh_rows.size()));
  {
    std::lock_guard lock(mutex_);
    published_through_ = std::max(published_through_, through);
    if (!merges.empty())
      merges_through_ = std::max(merges_through_, merges.back().seq);
  }
  std::unordered_set<std::int64_t> fresh_ids;
  for (const auto& row : fresh_rows)
    fresh_ids.insert(row.id);
  std::vector<site_change> applied;
  for (auto& [site, change] : by_site) {
    change.state.site = site;
    for (const auto& item : *change.current)
      if (fresh_ids.count(item.id))
        change.added.push_back(item.id);
    applied.push_back(std::move(change));
  }
  // Each merge once, with the first change: it moves every site's headlines whichever change
  // carries it.
  for (const auto& entry : merges)
    applied.front().merges.push_back(entry.merge);
  // Together: their new headlines go out as one batch in id order.
  state_.apply(applied);
}

} // namespace newsdesk::server

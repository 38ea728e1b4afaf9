#include "server/news/headline_state.hpp"

#include "scrapers/scraper.hpp"
#include "server/core/log.hpp"

#include <algorithm>
#include <unordered_set>

namespace newsdesk::server {

using std::chrono::milliseconds;

headline_state::headline_state(news_clock& clock, milliseconds cold_start_wait,
                               std::function<void(std::function<void()>)> post)
    : clock_(clock)
    , cold_start_wait_(cold_start_wait)
    , post_(std::move(post))
    , cold_start_timer_(clock.make_timer()) {
  std::lock_guard lock(mutex_);
  headline_update unseen; // nobody listens yet
  publish_locked(unseen);
}

headline_state::~headline_state() {
  abandon();
}

void headline_state::on_update(std::function<void(const headline_update&)> listener) {
  listener_ = std::move(listener);
}

headline_state::entry* headline_state::find_locked(const std::string& site) {
  auto it = entry_of_.find(site);
  return it == entry_of_.end() ? nullptr : &entries_[it->second];
}

void headline_state::count_stories_locked(std::size_t i, const site_items& items, bool add) {
  for (const auto& item : items) {
    if (item.story == 0)
      continue;
    auto& sites = story_sites_[item.story];
    if (add) {
      ++sites[i];
    } else if (auto it = sites.find(i); it != sites.end() && --it->second == 0) {
      sites.erase(it);
      if (sites.empty())
        story_sites_.erase(item.story);
    }
  }
}

void headline_state::set_items_locked(std::size_t i, std::shared_ptr<const site_items> items) {
  count_stories_locked(i, *entries_[i].items, false);
  count_stories_locked(i, *items, true);
  entries_[i].run = headline_list::sorted_run(items);
  entries_[i].items = std::move(items);
}

void headline_state::index_locked() {
  entry_of_.clear();
  story_sites_.clear();
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    entry_of_[entries_[i].report.name] = i;
    count_stories_locked(i, *entries_[i].items, true);
  }
}

void headline_state::set_sites(const std::vector<site_config>& sites) {
  std::lock_guard order(apply_order_);
  std::deque<ready_waiter> released;
  headline_update update;
  {
    std::lock_guard lock(mutex_);
    std::vector<entry> next;
    for (const auto& c : sites) {
      entry e;
      if (auto* old = find_locked(c.name)) // names are unique (the config checks)
        e = std::move(*old);
      e.report.name = c.name;
      e.report.display_name = c.display_name;
      e.report.colour = c.colour;
      e.report.url = c.url;
      e.report.home = c.home;
      e.report.section = c.section;
      e.report.renderer = c.renderer;
      if (e.origin.empty() || !c.scraper || e.origin != scrapers::origin_of(c.scraper->site()))
        e.health = site_health(c.interval); // a new definition starts a new history
      e.origin = c.scraper ? scrapers::origin_of(c.scraper->site()) : std::string();
      e.changed = true;
      next.push_back(std::move(e));
    }
    entries_ = std::move(next);
    index_locked();
    released = publish_locked(update);
  }
  deliver(std::move(released), std::move(update));
}

namespace {
// What a reader sees of a site's headlines: each one's id, title, link and story, in the site's
// order.
bool same_headlines(const std::vector<news_item>& a, const std::vector<news_item>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const news_item& x, const news_item& y) {
                      return x.id == y.id && x.headline.title == y.headline.title &&
                             x.headline.url == y.headline.url && x.story == y.story;
                    });
}

// What a reader sees of a site's state, its times aside.
bool same_status(const site_report& a, const site_report& b) {
  return a.ok == b.ok && a.stale == b.stale && a.error == b.error && a.failure == b.failure &&
         a.note == b.note && a.health == b.health && a.headline_count == b.headline_count &&
         (a.last_success_ms == 0) == (b.last_success_ms == 0);
}
} // namespace

std::vector<news_item> headline_state::apply(const site_change& change) {
  return apply(std::vector<site_change>{change});
}

std::vector<news_item> headline_state::apply(const std::vector<site_change>& changes) {
  std::lock_guard order(apply_order_);
  std::deque<ready_waiter> released;
  headline_update update;
  {
    std::lock_guard lock(mutex_);
    bool publish = false;
    for (const auto& change : changes) {
      publish |= merge_locked(change.merges);
      publish |= apply_locked(change, update);
    }
    if (!publish)
      return {};
    // One batch, ids ascending, whatever the sites' order: a live client skips ids at or below
    // the newest it was sent.
    auto& added = update.added;
    std::sort(added.begin(), added.end(),
              [](const news_item& a, const news_item& b) { return a.id < b.id; });
    for (const auto& item : added)
      if (item.story != 0 && item.story != item.id)
        if (auto it = story_sites_.find(item.story); it != story_sites_.end())
          update.story_sources[item.story] = it->second.size();
    released = publish_locked(update);
  }
  auto added = update.added;
  deliver(std::move(released), std::move(update));
  return added;
}

bool headline_state::apply_locked(const site_change& change, headline_update& update) {
  auto& added = update.added;
  auto* e = find_locked(change.state.site);
  if (!e)
    return false;
  const auto index = static_cast<std::size_t>(e - entries_.data());
  auto& r = e->report;
  const auto before = r;
  const auto& st = change.state;
  // A site's first success shows its page; only what later refreshes find is announced.
  const bool had_success = r.last_success_ms != 0;
  bool headlines_changed = false;
  bool announced = false;
  if (change.current) {
    std::unordered_set<std::int64_t> fresh(change.added.begin(), change.added.end());
    headlines_changed = !same_headlines(*e->items, *change.current);
    // "New" marks what the latest refresh that found something first saw: a refresh that found
    // nothing new leaves the marks as they are.
    if (headlines_changed || !fresh.empty()) {
      auto items = std::make_shared<site_items>(*change.current);
      std::unordered_map<std::int64_t, std::size_t> batch; // headlines per first_seen_ms so far
      for (std::size_t i = 0; i < items->size(); ++i) {
        auto& item = (*items)[i];
        item.rank = i;
        item.batch_rank = batch[item.first_seen_ms]++;
        item.is_new = had_success && fresh.count(item.id) > 0;
        if (!item.headline.image.empty())
          if (auto found = pictures_.find(item.headline.image); found != pictures_.end())
            item.picture = found->second;
        if (item.is_new) {
          added.push_back(item);
          announced = true;
        }
      }
      set_items_locked(index, std::move(items));
    }
    r.note = change.note;
  }
  if (st.last_attempt_ms)
    r.last_attempt_ms = st.last_attempt_ms;
  if (st.last_success_ms)
    r.last_success_ms = st.last_success_ms;
  r.error = st.last_error;
  r.failure = st.last_failure;
  r.elapsed = milliseconds(st.last_elapsed_ms);
  r.ok = r.error.empty() && r.last_success_ms != 0;
  r.stale = !r.ok && !e->items->empty(); // a failed site keeps serving its last good headlines
  r.headline_count = e->items->size();
  const bool first_try = change.finishes_refresh && !e->tried;
  if (change.finishes_refresh) {
    e->tried = true;
    const site_health::refresh finished{
        st.last_attempt_ms ? st.last_attempt_ms
                           : std::chrono::duration_cast<std::chrono::milliseconds>(
                                 clock_.system_now().time_since_epoch())
                                 .count(),
        r.error.empty() ? failure_kind::none : r.failure, r.headline_count, change.added.size(),
        r.error.empty() && !change.note.empty()};
    if (e->health.record(finished))
      health_changed_locked(*e);
  }
  const bool status_changed = !same_status(before, r);
  if (status_changed)
    update.changed_status.push_back(r);
  // Whatever is published next carries the new times, so it gives this site a new version (a
  // view of it alone is rebuilt then).
  e->changed = true;
  // Only times moved on: they wait for the next change, or for times_refresh.
  return headlines_changed || announced || first_try || status_changed ||
         clock_.steady_now() - published_at_ >= times_refresh;
}

void headline_state::health_changed_locked(entry& e) {
  e.report.health = e.health.verdict();
  e.changed = true;
  if (!e.report.health.empty())
    log_warn("msg=\"site looks broken\" site=" + e.report.name +
             " reason=" + logfmt_quoted(e.report.health) + " file=" + logfmt_quoted(e.origin));
  else
    log_info("msg=\"site looks well again\" site=" + e.report.name);
}

void headline_state::recheck_health(std::int64_t now_ms) {
  std::lock_guard order(apply_order_);
  std::deque<ready_waiter> released;
  headline_update update;
  {
    std::lock_guard lock(mutex_);
    bool changed = false;
    for (auto& e : entries_)
      if (e.health.recheck(now_ms)) {
        health_changed_locked(e);
        update.changed_status.push_back(e.report);
        changed = true;
      }
    if (!changed)
      return;
    released = publish_locked(update);
  }
  deliver(std::move(released), std::move(update));
}

bool headline_state::merge_locked(const std::vector<stories::story_merge>& merges) {
  bool moved = false;
  // In the order made: a story merged into another may itself be merged next.
  for (const auto& m : merges) {
    auto holders = story_sites_.find(m.from);
    if (holders == story_sites_.end())
      continue;
    std::vector<std::size_t> sites;
    for (const auto& [i, count] : holders->second)
      sites.push_back(i);
    for (auto i : sites) {
      // The site's list is shared with published snapshots: the merge goes into a copy.
      auto items = std::make_shared<site_items>(*entries_[i].items);
      for (auto& item : *items)
        if (item.story == m.from)
          item.story = m.into;
      set_items_locked(i, std::move(items));
      entries_[i].changed = true;
      moved = true;
    }
  }
  return moved;
}

void headline_state::attempted(const std::string& site, std::int64_t now_ms) {
  std::lock_guard lock(mutex_);
  if (auto* e = find_locked(site))
    e->report.last_attempt_ms = now_ms;
}

bool headline_state::set_notice(std::string notice) {
  std::lock_guard order(apply_order_);
  std::deque<ready_waiter> released;
  headline_update update;
  {
    std::lock_guard lock(mutex_);
    if (notice == notice_)
      return false;
    notice_ = std::move(notice);
    for (auto& e : entries_)
      e.changed = true; // every view shows the notice
    released = publish_locked(update);
  }
  deliver(std::move(released), std::move(update));
  return true;
}

void headline_state::set_icon(const std::string& site, const std::string& etag) {
  std::lock_guard order(apply_order_);
  std::deque<ready_waiter> released;
  headline_update update;
  {
    std::lock_guard lock(mutex_);
    auto* e = find_locked(site);
    if (!e || e->report.icon == etag)
      return;
    e->report.icon = etag;
    e->changed = true;
    released = publish_locked(update);
  }
  deliver(std::move(released), std::move(update));
}

void headline_state::set_pictures(
    const std::vector<std::pair<std::string, picture_ref>>& pictures) {
  if (pictures.empty())
    return;
  std::lock_guard order(apply_order_);
  std::deque<ready_waiter> released;
  headline_update update;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [source, picture] : pictures)
      if (picture.name.empty())
        pictures_.erase(source);
      else
        pictures_[source] = picture;
    bool changed = false;
    for (std::size_t i = 0; i < entries_.size(); ++i) {
      // Looked at before copied: a picture changes the few headlines that name its image.
      const auto& held = *entries_[i].items;
      if (std::none_of(held.begin(), held.end(), [&](const news_item& item) {
            if (item.headline.image.empty())
              return false;
            auto found = pictures_.find(item.headline.image);
            return item.picture != (found == pictures_.end() ? picture_ref{} : found->second);
          }))
        continue;
      auto copy = held;
      picture_locked(copy);
      for (std::size_t j = 0; j < copy.size(); ++j)
        if (copy[j].picture != held[j].picture)
          update.pictured.push_back(copy[j]);
      set_items_locked(i, std::make_shared<const site_items>(std::move(copy)));
      entries_[i].changed = changed = true;
    }
    if (!changed)
      return;
    released = publish_locked(update);
  }
  deliver(std::move(released), std::move(update));
}

bool headline_state::picture_locked(site_items& items) const {
  bool changed = false;
  for (auto& item : items) {
    if (item.headline.image.empty())
      continue;
    auto found = pictures_.find(item.headline.image);
    const auto& picture = found == pictures_.end() ? picture_ref{} : found->second;
    if (item.picture != picture) {
      item.picture = picture;
      changed = true;
    }
  }
  return changed;
}

bool headline_state::has_succeeded(const std::string& site) const {
  std::lock_guard lock(mutex_);
  auto it = entry_of_.find(site);
  return it != entry_of_.end() && entries_[it->second].report.last_success_ms != 0;
}

std::shared_ptr<const news_snapshot> headline_state::snapshot() const {
  std::lock_guard lock(mutex_);
  return snapshot_;
}

void headline_state::start() {
  std::lock_guard order(apply_order_);
  headline_update update;
  {
    std::lock_guard lock(mutex_);
    started_ = true;
    update.snapshot = snapshot_;
    // The listener has seen nothing yet: every site's headlines are news to it.
    for (const auto& e : entries_)
      update.changed_sites.push_back(e.items);
  }
  deliver({}, std::move(update));
}

bool headline_state::all_tried_locked() const {
  return std::all_of(entries_.begin(), entries_.end(), [](const entry& e) { return e.tried; });
}

bool headline_state::ready_locked() const {
  return all_tried_locked() || std::any_of(entries_.begin(), entries_.end(),
                                           [](const entry& e) { return !e.items->empty(); });
}

std::deque<headline_state::ready_waiter> headline_state::publish_locked(headline_update& update) {
  auto snap = std::make_shared<news_snapshot>();
  snap->version = ++version_;
  std::vector<std::shared_ptr<const headline_list::run>> runs;
  runs.reserve(entries_.size());
  snap->sites.reserve(entries_.size());
  for (auto& e : entries_) {
    if (e.changed || e.report.version == 0)
      e.report.version = snap->version;
    e.changed = false;
    snap->sites.push_back(e.report);
    runs.push_back(e.run);
    snap->last_id = std::max(snap->last_id, e.run->last_id);
    if (!e.report.section.empty() && std::find(snap->sections.begin(), snap->sections.end(),
                                               e.report.section) == snap->sections.end())
      snap->sections.push_back(e.report.section);
    if (e.items != e.published) {
      e.published = e.items;
      update.changed_sites.push_back(e.items);
    }
  }
  snap->headlines = headline_list::merged(std::move(runs));
  snap->generated_at = clock_.system_now();
  snap->notice = notice_;
  snap->ready = ready_locked();
  published_at_ = clock_.steady_now();
  snapshot_ = std::move(snap);
  update.snapshot = snapshot_;
  std::deque<ready_waiter> released;
  if (all_tried_locked() && !ready_waiters_.empty()) {
    released.swap(ready_waiters_);
    cold_start_timer_->cancel();
  }
  return released;
}

void headline_state::deliver(std::deque<ready_waiter> waiters, headline_update update) {
  for (auto& w : waiters)
    post_([done = std::move(w.done), snap = update.snapshot] { done(snap); });
  bool publish;
  {
    std::lock_guard lock(mutex_);
    publish = started_ && !stopped_;
  }
  if (publish && listener_)
    listener_(update);
}

void headline_state::when_ready(ready_callback done) {
  std::shared_ptr<const news_snapshot> snap;
  {
    std::lock_guard lock(mutex_);
    if (!ready_locked() && !stopped_) {
      ready_waiters_.push_back({clock_.steady_now() + cold_start_wait_, std::move(done)});
      if (ready_waiters_.size() == 1)
        arm_cold_start_locked();
      return;
    }
    snap = snapshot_;
  }
  done(std::move(snap));
}

// A cold start with nothing stored: each waiting view is answered cold_start_wait after it
// arrived at the latest, with what there is by then. Waiters are in arrival order, so their
// deadlines are too: one timer waits for the first.
void headline_state::arm_cold_start_locked() {
  if (ready_waiters_.empty() || stopped_)
    return;
  const auto left = std::chrono::duration_cast<milliseconds>(ready_waiters_.front().deadline -
                                                             clock_.steady_now());
  cold_start_timer_->wait(std::max(left, milliseconds(0)), [this] {
    std::vector<ready_waiter> due;
    std::shared_ptr<const news_snapshot> snap;
    {
      std::lock_guard guard(mutex_);
      const auto now = clock_.steady_now();
      while (!ready_waiters_.empty() && ready_waiters_.front().deadline <= now) {
        due.push_back(std::move(ready_waiters_.front()));
        ready_waiters_.pop_front();
      }
      snap = snapshot_;
      arm_cold_start_locked();
    }
    for (auto& w : due)
      w.done(snap);
  });
}

void headline_state::stop() {
  // Views still waiting for a cold start are answered with what there is: a shutdown leaves no
  // request without a response.
  std::deque<ready_waiter> waiting;
  std::shared_ptr<const news_snapshot> snap;
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
    cold_start_timer_->cancel();
    waiting.swap(ready_waiters_);
    snap = snapshot_;
  }
  for (auto& w : waiting)
    w.done(snap);
}

void headline_state::abandon() {
  std::lock_guard lock(mutex_);
  stopped_ = true;
  cold_start_timer_->cancel();
  ready_waiters_.clear();
}

} // namespace newsdesk::server

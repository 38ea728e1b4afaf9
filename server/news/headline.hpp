// The headline and site-status types every output reads: the page, the JSON and feed
// representations, live events and metrics. Plain values, no behaviour beyond their JSON form.
#pragma once

#include "scrapers/scraper.hpp"
#include "server/core/failure.hpp"

#include <boost/iterator/indirect_iterator.hpp>
#include <nlohmann/json_fwd.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace newsdesk::server {

// A picture newsdesk made of a headline's image (server/pictures/), served at /pictures/NAME.
struct picture_ref {
  std::string name; // "<hash>.webp"; empty: none
  int width = 0, height = 0;

  friend bool operator==(const picture_ref&, const picture_ref&) = default;
};

// One headline as the outputs show it.
struct news_item {
  scrapers::headline headline;
  std::int64_t id = 0;            // the store's row id: stable, increasing
  std::int64_t first_seen_ms = 0; // unix ms
  bool is_new = false;            // first seen in the site's latest refresh (not its first)
  std::size_t rank = 0;           // its place on its site's page (0: the site's top story)
  // Its place among the headlines its site's refresh first saw with it (same first_seen_ms), in
  // the site's order: the page's order (page_time) interleaves one round's sites by it.
  std::size_t batch_rank = 0;
  // The story it belongs to, from the store: the id of the headline that started it (its own id
  // when it started one). 0 without a store.
  std::int64_t story = 0;
  // Found by its site's first successful refresh: it was on the page before newsdesk first
  // looked, so when it has no published time it shows no age at all (not "just now").
  bool first_look = false;
  // Its picture, once newsdesk made one of headline.image (pictures off: never).
  picture_ref picture;
};

// Where a headline stands in the page's order: when it was first seen, made a minute older for
// each headline its site's refresh found before it (batch_rank). The headlines of one round of
// refreshes (a cold start: every site's whole page) then interleave by their sites' ranks, every
// site's lead, then every site's second, instead of the site with the most headlines filling the
// first screens; a later refresh's few new headlines still go first.
inline constexpr std::int64_t batch_rank_penalty_ms = 60'000;
inline std::int64_t page_time(const news_item& item) {
  return item.first_seen_ms - static_cast<std::int64_t>(item.batch_rank) * batch_rank_penalty_ms;
}

// The order the page lists headlines in: page_time descending; headlines at the same time keep
// their site's order (ids ascend in it).
inline bool newer_first(const news_item& a, const news_item& b) {
  const auto at = page_time(a), bt = page_time(b);
  if (at != bt)
    return at > bt;
  return a.id < b.id;
}

// A list of headlines that shares their storage. Each site's headlines are held once, in a
// vector that no one changes after it is shared; a snapshot, and every view cut from it, is a
// list of pointers into those vectors that keeps them alive. Publishing a snapshot or cutting a
// page from it then costs a pointer per headline, not a copy of each: with hundreds of sites a
// copy per change was most of the CPU, and the copies most of the memory (issue 26).
//
// The snapshot's list is made with merged(): each site's headlines sorted once, when the site
// changes, and the sites merged in newer_first order only as they are read. A change of one site
// then costs that site's headlines, not every headline held (a merge of all per change was a
// fifth of the CPU with 3,000 feeds, issue 41); reading the first n (a page) costs a heap of one
// entry per site, O(sites + n log sites); reading it whole merges it once (O(size log sites)),
// kept for every later read of the same list.
// Iterating gives `const news_item&`. Copies are cheap (pointers); not safe to change from two
// threads at once, like any container (reading from several is: a merge runs once).
class headline_list {
 public:
  using site_items = std::vector<news_item>;
  using const_iterator = boost::indirect_iterator<std::vector<const news_item*>::const_iterator>;
  // One site's headlines in newer_first order, sharing the site's list: what merged() merges.
  struct run {
    std::shared_ptr<const site_items> items;
    std::vector<const news_item*> order;
    std::int64_t last_id = 0; // the largest id among them
  };
  // `items` sorted newer_first (O(n log n)).
  static std::shared_ptr<const run> sorted_run(std::shared_ptr<const site_items> items);
  // Every run's headlines in newer_first order, merged as they are read (above).
  static headline_list merged(std::vector<std::shared_ptr<const run>> runs);

  headline_list() = default;
  headline_list(std::initializer_list<news_item> items) {
    for (const auto& item : items)
      push_back(item);
  }

  const_iterator begin() const { return items().begin(); }
  const_iterator end() const { return items().end(); }
  std::size_t size() const { return merge_ ? merge_->size : items_.size(); }
  bool empty() const { return size() == 0; }
  const news_item& operator[](std::size_t i) const { return *items()[i]; }
  const news_item& front() const { return *items().front(); }
  const news_item& back() const { return *items().back(); }

  // Appends a headline held by this list alone (a list made item by item: a story's coverage).
  void push_back(news_item item) {
    flatten();
    auto own = std::make_shared<const news_item>(std::move(item));
    items_.push_back(own.get());
    owners_.push_back(std::move(own));
  }
  // Appends every headline of `site`, in its order, sharing it.
  void append(std::shared_ptr<const site_items> site) {
    flatten();
    for (const auto& item : *site)
      items_.push_back(&item);
    owners_.push_back(std::move(site));
  }

  // The first `limit` headlines that `keep` accepts, in this list's order, sharing their storage.
  template <class Keep>
  headline_list select(Keep keep,
                       std::size_t limit = std::numeric_limits<std::size_t>::max()) const {
    headline_list out;
    if (merge_ && !merge_->whole && limit < merge_->size) {
      // Not read whole yet: merge only as far as the first `limit` accepted.
      for (const auto& r : merge_->runs)
        out.owners_.push_back(r);
      merge_->walk([&](const news_item* item) {
        if (keep(*item))
          out.items_.push_back(item);
        return out.items_.size() < limit;
      });
      return out;
    }
    out.owners_ = owners();
    for (const auto* item : items()) {
      if (out.items_.size() >= limit)
        break;
      if (keep(*item))
        out.items_.push_back(item);
    }
    return out;
  }
  // Keeps the first n.
  void truncate(std::size_t n) {
    flatten();
    items_.resize(std::min(n, items_.size()));
  }
  template <class Less> void stable_sort(Less less) {
    flatten();
    std::stable_sort(items_.begin(), items_.end(),
                     [&](const news_item* a, const news_item* b) { return less(*a, *b); });
  }

 private:
  // A merged list's runs, and their headlines in order once someone reads them whole.
  struct pending {
    std::vector<std::shared_ptr<const run>> runs;
    std::size_t size = 0;
    std::once_flag once;
    std::atomic<bool> whole = false;
    std::vector<const news_item*> items;
    // Calls `visit` with each headline in order until it returns false (a heap of runs).
    void walk(const std::function<bool(const news_item*)>& visit) const;
  };
  const std::vector<const news_item*>& items() const;
  std::vector<std::shared_ptr<const void>> owners() const;
  // Makes a merged list a plain one, before a change.
  void flatten();

  std::vector<const news_item*> items_;
  // What keeps the pointed-to headlines alive: sites' vectors and headlines held alone.
  std::vector<std::shared_ptr<const void>> owners_;
  std::shared_ptr<pending> merge_; // set by merged() until a change flattens the list
};

// How one site stands.
struct site_report {
  std::string name;
  std::string display_name;
  std::string colour;
  std::string url; // what is fetched
  std::string renderer;
  bool ok = false;    // the last refresh succeeded
  bool stale = false; // the last refresh failed, older headlines are shown
  std::string error;  // short notice when !ok, e.g. "Splash timed out after 30 s"
  failure_kind failure = failure_kind::none; // what kind of failure `error` tells of
  // Set when ok but the operator should act: "found by detection; the selectors matched nothing".
  std::string note;
  // Why the site looks broken (site_health: nothing found, far fewer than usual, nothing new for
  // far longer than usual, selectors that stopped matching); "" when it does not.
  std::string health;
  std::size_t headline_count = 0;
  std::chrono::milliseconds elapsed{0}; // the last refresh: render + parse
  std::int64_t last_success_ms = 0;     // 0: never
  std::int64_t last_attempt_ms = 0;     // 0: never
  std::string icon; // the ETag of its stored icon (server/news/site_icons.hpp); empty: none
  // The snapshot version in which this site's headlines or state last changed: a view of this
  // site alone built for that version is still the right one in any later snapshot.
  std::uint64_t version = 0;
  std::string home;    // the site's home page (site_config::home)
  std::string section; // site_config::section
};

struct news_snapshot {
  std::vector<site_report> sites; // in config order
  // In the page's order (newer_first).
  headline_list headlines;
  std::chrono::system_clock::time_point generated_at;
  std::uint64_t version = 0; // increases with every change (and only then)
  // Every site has been tried, or some site has headlines: views of this snapshot need not wait
  // for a cold start (news_service::when_ready).
  bool ready = false;
  // Set while the shared store cannot be reached: what is shown may be out of date.
  std::string notice;
  // A view cut to one page: the before= cursor of the next page ("" when this is the last).
  std::string next;
  // The newest headline id held when it was made, shown or not (a view of 500 of 3,000
  // headlines leaves newer ids for its next pages): where a page's live stream starts, so what
  // the page left out never arrives as news.
  std::int64_t last_id = 0;
  // Every section the sites declare, in the order of their first sites (a filtered view keeps
  // them all: the page's section chips lead to each).
  std::vector<std::string> sections;
};

// RFC 3339 UTC time to the second, e.g. "2026-11-22T09:35:25Z"; iso8601_ms to the millisecond,
// "2026-11-22T09:35:25.042Z" (pages order live arrivals by it).
std::string iso8601(std::chrono::system_clock::time_point t);
std::string iso8601_ms(std::int64_t unix_ms);

// A headline's one JSON shape, shared by /news.json, the broker payload and /events:
// {"id","title","url","site","first_seen","rank","new","story"} (first_seen as iso8601_ms gives
// it).
// {"name", "width", "height"}; null for none.
void to_json(nlohmann::json& j, const picture_ref& picture);
void to_json(nlohmann::json& j, const news_item& item);

// A refresh's new headlines as the broker carries them to /events and other subscribers: a JSON
// array of the shape above. Invalid UTF-8 in scraped text is replaced, never thrown on.
std::string headlines_json(const std::vector<news_item>& items);
// One headline as a JSON object of that shape (MQTT's newsdesk/headlines/<site>).
std::string headline_json(const news_item& item);
// A headline that joined `story`, which `sources` sites tell now: {"story": ID, "headline": <the
// shape above>, "sources": N} (MQTT's newsdesk/stories/<id>), around the headline's JSON as
// headline_json made it, so a publisher makes each headline's JSON once.
std::string story_update_json(std::int64_t story, std::string_view headline, std::size_t sources);
// A list as a JSON array of that shape.
void to_json(nlohmann::json& j, const headline_list& items);

} // namespace newsdesk::server

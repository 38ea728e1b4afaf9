// What the page shows now: each site's headlines and status, the snapshot every output is built
// from, and whether it is ready to be shown (a cold start waits for the first refreshes).
//
// Every change arrives as a site_change through apply(), whether this instance refreshed the
// site or (in a cluster) another one did; apply() publishes a new snapshot and hands the
// headlines first seen in the change to the update listener, in the order apply() was called.
// A change's story merges rewrite the stories of every site's headlines held. Which sites hold
// each story's headlines is kept as changes come (a change costs what it changed, not what is
// held), so each update says how many sites tell the stories its headlines joined.
// A change that changes nothing a reader sees (the same headlines, in the same order, and the
// same status: only the times of the last attempt and success moved on) publishes nothing; such
// times reach readers with the next change, or after times_refresh at the latest.
//
// Threads: every member may be called from any thread. The listener and the ready callbacks run
// outside the lock: the listener on the thread that called apply() (or set_sites(),
// set_notice()), ready callbacks on the io_context given to when_ready's timer clock or on the
// caller's thread.
#pragma once

#include "server/news/headline.hpp"
#include "server/news/news_clock.hpp"
#include "server/news/site_change.hpp"
#include "server/news/site_config.hpp"
#include "server/news/site_health.hpp"

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace newsdesk::server {

class headline_state {
 public:
  using ready_callback = std::function<void(std::shared_ptr<const news_snapshot>)>;
  // How long new attempt and success times may wait for a change to carry them: the page
  // shows them in minutes.
  static constexpr std::chrono::seconds times_refresh{60};
  // `post` runs a ready callback elsewhere (the io_context): a refresh's thread never answers
  // a waiting request itself.
  headline_state(news_clock& clock, std::chrono::milliseconds cold_start_wait,
                 std::function<void(std::function<void()>)> post);
  ~headline_state();

  // Called with every published snapshot and the headlines it announces. Set before use.
  void on_update(std::function<void(const headline_update&)> listener);

  // The sites in page order, with how each looks. A site that keeps its name keeps its
  // headlines; a new one starts empty; one left out is dropped. Publishes.
  void set_sites(const std::vector<site_config>& sites);

  // Applies one site's change and publishes the result. A change for a site not (or no longer)
  // configured is ignored. Returns what it announced.
  std::vector<news_item> apply(const site_change& change);
  // The same for several sites' changes at once (a cluster's events): one snapshot, and one
  // batch of new headlines in id order.
  std::vector<news_item> apply(const std::vector<site_change>& changes);

  // A refresh of `site` started at `now_ms` (the chip says when it was last tried).
  void attempted(const std::string& site, std::int64_t now_ms);

  // Judges again, at `now_ms`, whether each site has been quiet for far longer than usual
  // (site_health::recheck): a site that fails or is slow to refresh is judged too. Publishes
  // when a verdict changed.
  void recheck_health(std::int64_t now_ms);

  // Why the page may be out of date (the shared store cannot be reached); "" clears it.
  // Publishes when it changes; returns whether it did.
  bool set_notice(std::string notice);
  // The site's icon is stored with `etag`: a new snapshot shows it. Unknown sites and an
  // unchanged ETag change nothing.
  void set_icon(const std::string& site, const std::string& etag);
  // Pictures made of these images (by source URL, scrapers::headline::image); an empty name
  // takes a picture away. Headlines that name them, now and in later changes, show them; a new
  // snapshot is published when any headline held changed.
  void set_pictures(const std::vector<std::pair<std::string, picture_ref>>& pictures);

  // True once `site` has had a successful refresh (its new headlines are then news).
  bool has_succeeded(const std::string& site) const;

  std::shared_ptr<const news_snapshot> snapshot() const;

  // Calls `done` with the snapshot: at once when any site has headlines or every site has been
  // tried; on a cold start, when the first round of refreshes completes or cold_start_wait has
  // passed since this call, whichever is first; after stop(), at once with what there is.
  void when_ready(ready_callback done);

  // Starts publishing to the listener, with the snapshot as it is now.
  void start();
  // Answers every waiting when_ready with what there is; later changes are not published.
  void stop();
  // As stop(), but drops the waiting callbacks unanswered (their requests are gone).
  void abandon();

 private:
  using site_items = headline_list::site_items;
  struct entry {
    site_report report;
    // In the site's order; replaced, never changed, once a snapshot shares it.
    std::shared_ptr<const site_items> items = std::make_shared<const site_items>();
    // The same headlines in the page's order, for the snapshot's merged list.
    std::shared_ptr<const headline_list::run> run = headline_list::sorted_run(items);
    std::shared_ptr<const site_items> published; // what the current snapshot holds of this site
    bool tried = false;                          // at least one refresh has finished
    bool changed = false; // changed since the last snapshot: takes its version
    site_health health;   // whether its refreshes still find what they used to
    std::string origin;   // where the site is defined (its file), for the operator
  };
  struct ready_waiter {
    std::chrono::steady_clock::time_point deadline; // answered by then, ready or not
    ready_callback done;
  };

  entry* find_locked(const std::string& site);
  // Makes `items` entry i's headlines, keeping story_sites_ in step.
  void set_items_locked(std::size_t i, std::shared_ptr<const site_items> items);
  void count_stories_locked(std::size_t i, const site_items& items, bool add);
  // Gives each of `items` the picture made of its image, if any; true when one changed.
  bool picture_locked(site_items& items) const;
  void index_locked(); // entry_of_ and story_sites_ anew, after the sites changed
  // Applies `change` to its site's entry, appending what it announces to `added`; true when a
  // reader would see a difference (or times have waited long enough).
  bool apply_locked(const site_change& change, headline_update& update);
  // Moves every site's headlines of each merged story into the surviving one; true when any
  // moved. O(headlines held) per merge: merges are rare, and only come with a write.
  bool merge_locked(const std::vector<stories::story_merge>& merges);
  // Shows e's new health verdict and tells the operator once.
  void health_changed_locked(entry& e);
  // Makes the snapshot from the entries, in O(sites) (their headlines are merged as they are
  // read: headline_list::merged), and puts it and the sites' lists it changed into `update`;
  // returns the ready waiters it releases.
  std::deque<ready_waiter> publish_locked(headline_update& update);
  bool ready_locked() const; // what when_ready waits for
  bool all_tried_locked() const;
  void arm_cold_start_locked();
  void deliver(std::deque<ready_waiter> waiters, headline_update update);

  news_clock& clock_;
  const std::chrono::milliseconds cold_start_wait_;
  std::function<void(std::function<void()>)> post_;
  std::function<void(const headline_update&)> listener_;

  // Held while a change is applied and handed to the listener, so listeners see changes in the
  // order they were applied (live events keep ids ascending). Taken before mutex_.
  std::mutex apply_order_;
  mutable std::mutex mutex_;                              // guards everything below
  std::vector<entry> entries_;                            // in page order
  std::unordered_map<std::string, std::size_t> entry_of_; // a site's place in entries_
  // For each story: the entries holding its headlines, with how many each holds.
  std::unordered_map<std::int64_t, std::unordered_map<std::size_t, std::size_t>> story_sites_;
  // The pictures made, by the image URL they were made of (set_pictures).
  std::unordered_map<std::string, picture_ref> pictures_;
  std::deque<ready_waiter> ready_waiters_; // in arrival order, so deadlines ascend
  std::unique_ptr<news_clock::timer> cold_start_timer_;
  std::shared_ptr<const news_snapshot> snapshot_;
  std::uint64_t version_ = 0;
  std::chrono::steady_clock::time_point published_at_{};
  std::string notice_;
  bool started_ = false;
  bool stopped_ = false;
};

} // namespace newsdesk::server

// Whether a site still works as it used to: a site whose markup changes so that its scraper finds
// nothing, or a fraction of what it found, or nothing new for far longer than usual, is flagged,
// so the operator hears of it from newsdesk and not from a reader wondering why it went quiet.
//
// What is "usual" is learned from the site's own refreshes, as they come (nothing is read back
// from the store: after a restart a site is judged again once it has a history), so every
// instance of a cluster, which sees every refresh's change, comes to the same verdict.
//
// Threads: none of its own; the caller guards it (headline_state keeps one per site).
#pragma once

#include "server/core/failure.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace newsdesk::server {

class site_health {
 public:
  // What one finished refresh of the site found.
  struct refresh {
    std::int64_t at_ms = 0;
    failure_kind failure = failure_kind::none; // none: it succeeded
    std::size_t headlines = 0;                 // on the page now
    std::size_t fresh = 0;                     // of which first seen in this refresh
    bool selectors_missed = false; // a site file's selectors matched nothing (detection stood in)
  };

  // Refreshes in a row that make a sign count: one odd refresh is not a broken site.
  static constexpr int streak = 3;
  // Fewer than usual: under this share of the usual count.
  static constexpr double low_share = 0.25;
  // Fewer than usual is judged once the usual is known from this many successes; after this many
  // far-under refreshes in a row the smaller page is the new usual (a redesign that kept fewer).
  static constexpr int learn = 5;
  static constexpr int accept_after = 100;
  // Quiet: no new headline for this many times the usual gap between new ones, for at least
  // quiet_intervals of the site's intervals and quiet_floor (news sites sleep at night), once
  // `learn` gaps are known.
  static constexpr double quiet_gaps = 10;
  static constexpr int quiet_intervals = 6;
  static constexpr std::chrono::hours quiet_floor{24};

  explicit site_health(std::chrono::milliseconds interval = std::chrono::minutes(5))
      : interval_(interval) {}

  // Takes one refresh into account. Returns true when the verdict changed.
  bool record(const refresh& r);

  // Why the site looks broken ("" when it does not), judged at `now_ms`.
  const std::string& verdict() const { return verdict_; }

  // Checks the quiet rule at `now_ms` without a refresh (a site that stopped finding anything
  // new keeps refreshing, but one that fails or waits does not). Returns true when it changed.
  bool recheck(std::int64_t now_ms);

 private:
  std::string judge(std::int64_t now_ms) const;

  std::chrono::milliseconds interval_;
  double usual_headlines_ = 0; // moving average over successful refreshes
  int successes_ = 0;
  int empty_streak_ = 0; // refreshes in a row that found no headline at all
  int low_streak_ = 0;   // successes in a row far under the usual count
  int selector_streak_ = 0;
  std::int64_t last_fresh_ms_ = 0; // the last refresh that found something new
  double usual_gap_ms_ = 0;        // moving average of the time between such refreshes
  int gaps_ = 0;
  std::size_t last_headlines_ = 0;
  std::string verdict_;
};

} // namespace newsdesk::server

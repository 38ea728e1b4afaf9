// What both store backends do to give each new headline its story inside the write that stores
// it (see "Stories" in server/news/headline_store.hpp): keep one story grouping whose state is
// what the store has committed, catch it up on what was committed since it last looked (before a
// restart, or by another instance), and assign a write's new rows in id order.
//
// While a write is in flight the grouping's state runs ahead of the store; when that write fails
// after assigning, the grouping is replaced by an empty one, which the next write fills again
// from the store (so a rolled-back headline never counts).
//
// Threads: none of its own. The backend calls it only inside its serialised writes (and at open,
// before anyone else holds the store).
#pragma once

#include "server/news/headline_store.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

namespace newsdesk::server {

class story_keeper {
 public:
  // What a catch-up reads: rows first seen within this period before the newest row (a story
  // quiet longer accepts no more headlines), the newest max_replay_rows of them at most, and the
  // merges made in that time. Merges older than it are pruned.
  static constexpr std::chrono::milliseconds replay_period = stories::story_limits{}.quiet_period;

  // `make` null: story_assigner with its default limits.
  explicit story_keeper(stories::grouping_factory make);

  // The grouping has seen rows up to this id and merge log entries up to this seq: a catch-up
  // reads what comes after them.
  std::int64_t seen_id() const { return grouping_->last_id(); }
  std::int64_t seen_merge() const { return seen_merge_; }

  // Rows (ids ascending) and merges (seq ascending) committed since, with their stored stories.
  void observe(const std::vector<stored_headline>& rows, const std::vector<logged_merge>& merges);

  // Gives `row`, a new row of the write in flight (they come in id order), its story; merges it
  // makes are appended to `merges`.
  void assign(stored_headline& row, std::vector<stories::story_merge>& merges);

  // The write in flight appended a merge it made to the log as `seq`.
  void logged(std::int64_t seq) { seen_merge_ = std::max(seen_merge_, seq); }

  // Runs `body` (the whole transaction, commit included) and returns what it returns. When it
  // throws after assign(), the grouping is replaced by an empty one.
  template <class Write> auto write(Write&& body) {
    try {
      auto out = body();
      assigned_ = false;
      return out;
    } catch (...) {
      if (assigned_)
        start_over();
      throw;
    }
  }

 private:
  void start_over();

  stories::grouping_factory make_;
  std::unique_ptr<stories::story_grouping> grouping_;
  std::int64_t seen_merge_ = 0;
  bool assigned_ = false; // since the write in flight began
};

// Applies `merges`, in order, to the stories of `rows`.
void apply_merges(std::vector<stored_headline>& rows,
                  const std::vector<stories::story_merge>& merges);

} // namespace newsdesk::server

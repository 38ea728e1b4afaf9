// What the store tests share: a refresh's headlines in one line, a record at a time, a story
// grouping the tests can follow, and a way to run one suite on both backends.
#pragma once

#include "server/store/postgres_store.hpp"
#include "server/store/sqlite_store.hpp"

#include "tests/support/postgres_cluster.hpp"

#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace newsdesk::testing {

using server::stored_headline;

inline std::vector<scrapers::headline>
page(std::initializer_list<std::pair<const char*, const char*>> items) {
  std::vector<scrapers::headline> out;
  for (auto [title, url] : items)
    out.push_back({title, url, "ignored"});
  return out;
}

inline std::vector<std::string> titles(const std::vector<stored_headline>& rows) {
  std::vector<std::string> out;
  for (const auto& r : rows)
    out.push_back(r.title);
  return out;
}

inline server::refresh_record at(std::int64_t now_ms) {
  return {.now_ms = now_ms};
}

// Runs `body` once per backend, each on a new empty store opened with `options`: the same suite
// for both.
template <class Body> void for_each_backend(Body body, server::store_options options = {}) {
  SUBCASE("sqlite") {
    auto store = server::sqlite_store::open(":memory:", options);
    body(*store);
  }
  SUBCASE("postgresql") {
    auto store = server::postgres_store::open(postgres_cluster::shared().fresh_database(), options);
    body(*store);
  }
}

// A story grouping simple enough to predict, standing in for story_assigner while tests drive
// the store's plumbing: headlines with the same title tell the same story (the first one starts
// it); a title "X + Y" joins X's story and merges Y's story into it; the title "fail" throws, as
// a write that fails half-way. What it observed is kept in `seen`, shared with the test.
class title_grouping final : public server::stories::story_grouping {
 public:
  struct observed {
    std::vector<std::int64_t> ids;                    // observed headlines, in order
    std::vector<server::stories::story_merge> merges; // observed merges, in order
    int made = 0;                                     // groupings made by the factory
    std::vector<std::string> languages; // each assigned or observed headline's, in order
  };

  explicit title_grouping(std::shared_ptr<observed> seen)
      : seen_(std::move(seen)) {}

  // Store options whose groupings all report to `seen`.
  static server::store_options options(std::shared_ptr<observed> seen) {
    return {[seen] {
      ++seen->made;
      return std::make_unique<title_grouping>(seen);
    }};
  }

  std::int64_t assign(const server::stories::story_headline& h,
                      std::vector<server::stories::story_merge>& merges) override {
    last_ = std::max(last_, h.id);
    seen_->languages.emplace_back(h.language);
    const std::string title(h.title);
    if (title == "fail")
      throw std::runtime_error("the grouping failed");
    if (auto plus = title.find(" + "); plus != std::string::npos) {
      const auto into = story_of(title.substr(0, plus)), from = story_of(title.substr(plus + 3));
      REQUIRE(into != 0);
      REQUIRE(from != 0);
      if (from != into) {
        merges.push_back({from, into});
        move(from, into);
      }
      return into;
    }
    if (auto story = story_of(title))
      return story;
    return stories_[title] = h.id;
  }
  void observe(const server::stories::story_headline& h, std::int64_t story) override {
    last_ = std::max(last_, h.id);
    stories_[std::string(h.title)] = story;
    seen_->ids.push_back(h.id);
    seen_->languages.emplace_back(h.language);
  }
  void observe(const server::stories::story_merge& m) override {
    move(m.from, m.into);
    seen_->merges.push_back(m);
  }
  std::int64_t last_id() const override { return last_; }

 private:
  std::int64_t story_of(const std::string& title) const {
    auto it = stories_.find(title);
    return it == stories_.end() ? 0 : it->second;
  }
  void move(std::int64_t from, std::int64_t into) {
    for (auto& [title, story] : stories_)
      if (story == from)
        story = into;
  }

  std::shared_ptr<observed> seen_;
  std::map<std::string, std::int64_t> stories_; // title -> story
  std::int64_t last_ = 0;
};

} // namespace newsdesk::testing

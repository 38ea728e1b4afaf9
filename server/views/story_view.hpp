// Stories as the outputs show them: which of a view's headlines tell the same story, and how many
// sites tell it. Pure functions of the headlines given (each carries its story from the store);
// no store, no state, callable from any thread.
#pragma once

#include "server/news/headline.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace newsdesk::server {

struct story_summary {
  std::int64_t id = 0;
  std::vector<const news_item*> headlines; // in the order given; they point into that vector
  std::int64_t first_seen_ms = 0;          // the earliest first-seen time of its headlines
  std::int64_t last_seen_ms = 0;           // the latest
  std::size_t sources = 0;                 // distinct sites among them
};

// The stories that at least two of `headlines` belong to: the most sources first, then the
// newest (last_seen_ms), then by id. Headlines without a story (0) are left out. O(n log n).
std::vector<story_summary> stories_of(const headline_list& headlines);

// A story's JSON shape in /news.json: {"id", "headlines": [{"id","title","url","site"}],
// "first_seen", "last_seen" (iso8601_ms), "sources"}.
void to_json(nlohmann::json& j, const story_summary& story);

} // namespace newsdesk::server

#include "server/views/story_view.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>
#include <string_view>

namespace newsdesk::server {

std::vector<story_summary> stories_of(const headline_list& headlines) {
  std::unordered_map<std::int64_t, story_summary> by_id;
  std::unordered_map<std::int64_t, std::set<std::string_view>> sites;
  for (const auto& item : headlines) {
    if (item.story == 0)
      continue;
    auto& s = by_id[item.story];
    if (s.headlines.empty()) {
      s.id = item.story;
      s.first_seen_ms = s.last_seen_ms = item.first_seen_ms;
    }
    s.headlines.push_back(&item);
    s.first_seen_ms = std::min(s.first_seen_ms, item.first_seen_ms);
    s.last_seen_ms = std::max(s.last_seen_ms, item.first_seen_ms);
    sites[item.story].insert(item.headline.site);
  }
  std::vector<story_summary> out;
  for (auto& [id, s] : by_id)
    if (s.headlines.size() >= 2) {
      s.sources = sites[id].size();
      out.push_back(std::move(s));
    }
  std::sort(out.begin(), out.end(), [](const story_summary& a, const story_summary& b) {
    if (a.sources != b.sources)
      return a.sources > b.sources;
    if (a.last_seen_ms != b.last_seen_ms)
      return a.last_seen_ms > b.last_seen_ms;
    return a.id < b.id;
  });
  return out;
}

void to_json(nlohmann::json& j, const story_summary& story) {
  auto headlines = nlohmann::json::array();
  for (const auto* item : story.headlines)
    headlines.push_back({{"id", item->id},
                         {"title", item->headline.title},
                         {"url", item->headline.url},
                         {"site", item->headline.site}});
  j = {{"id", story.id},
       {"headlines", std::move(headlines)},
       {"first_seen", iso8601_ms(story.first_seen_ms)},
       {"last_seen", iso8601_ms(story.last_seen_ms)},
       {"sources", story.sources}};
}

} // namespace newsdesk::server

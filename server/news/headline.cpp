#include "server/news/headline.hpp"

#include "server/core/utc_time.hpp"

#include <nlohmann/json.hpp>

namespace newsdesk::server {

std::string iso8601(std::chrono::system_clock::time_point t) {
  return format_utc(std::chrono::floor<std::chrono::milliseconds>(t).time_since_epoch().count(),
                    rfc3339_seconds);
}

std::string iso8601_ms(std::int64_t unix_ms) {
  return format_utc(unix_ms, rfc3339_millis);
}

void to_json(nlohmann::json& j, const news_item& item) {
  j = {{"id", item.id},
       {"title", item.headline.title},
       {"url", item.headline.url},
       {"site", item.headline.site},
       {"first_seen", iso8601_ms(item.first_seen_ms)},
       {"page_time", iso8601_ms(page_time(item))},
       {"rank", item.rank},
       {"new", item.is_new},
       {"story", item.story}};
  if (item.headline.published_ms)
    j["published"] = iso8601(std::chrono::system_clock::time_point(
        std::chrono::milliseconds(*item.headline.published_ms)));
}

void to_json(nlohmann::json& j, const headline_list& items) {
  j = nlohmann::json::array();
  for (const auto& item : items)
    j.push_back(item);
}

headline_list
headline_list::replace(const std::vector<const site_items*>& gone,
                       const std::vector<std::shared_ptr<const site_items>>& added) const {
  // The gone sites' address ranges, sorted, so each headline's is found in O(log sites).
  std::vector<std::pair<const news_item*, const news_item*>> ranges;
  for (const auto* site : gone)
    if (!site->empty())
      ranges.emplace_back(site->data(), site->data() + site->size());
  std::sort(ranges.begin(), ranges.end());
  auto is_gone = [&](const news_item* item) {
    auto it = std::upper_bound(ranges.begin(), ranges.end(), item,
                               [](const news_item* p, const auto& r) { return p < r.first; });
    return it != ranges.begin() && item < std::prev(it)->second;
  };
  std::vector<const void*> gone_owners(gone.begin(), gone.end());
  std::sort(gone_owners.begin(), gone_owners.end());
  auto gone_owner = [&](const std::shared_ptr<const void>& owner) {
    return std::binary_search(gone_owners.begin(), gone_owners.end(), owner.get());
  };

  headline_list out;
  for (const auto& owner : owners_)
    if (!gone_owner(owner))
      out.owners_.push_back(owner);
  std::vector<const news_item*> fresh;
  for (const auto& site : added) {
    for (const auto& item : *site)
      fresh.push_back(&item);
    out.owners_.push_back(site);
  }
  auto less = [](const news_item* a, const news_item* b) { return newer_first(*a, *b); };
  std::stable_sort(fresh.begin(), fresh.end(), less);
  std::vector<const news_item*> kept;
  kept.reserve(items_.size());
  std::copy_if(items_.begin(), items_.end(), std::back_inserter(kept),
               [&](const news_item* item) { return !is_gone(item); });
  out.items_.reserve(kept.size() + fresh.size());
  std::merge(kept.begin(), kept.end(), fresh.begin(), fresh.end(), std::back_inserter(out.items_),
             less);
  return out;
}

std::string headline_json(const news_item& item) {
  return nlohmann::json(item).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string story_update_json(const news_item& item, std::size_t sources) {
  const nlohmann::json j = {{"story", item.story}, {"headline", item}, {"sources", sources}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string headlines_json(const std::vector<news_item>& items) {
  return nlohmann::json(items).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace newsdesk::server

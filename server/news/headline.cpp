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
       {"rank", item.rank},
       {"new", item.is_new},
       {"story", item.story}};
}

std::string headlines_json(const std::vector<news_item>& items) {
  return nlohmann::json(items).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace newsdesk::server

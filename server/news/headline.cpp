#include "server/news/headline.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <ctime>

namespace newsdesk::server {

std::string iso8601(std::chrono::system_clock::time_point t) {
  auto secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string iso8601_ms(std::int64_t unix_ms) {
  auto text = iso8601(std::chrono::system_clock::time_point(std::chrono::milliseconds(unix_ms)));
  auto ms = ((unix_ms % 1000) + 1000) % 1000;
  char fraction[8];
  std::snprintf(fraction, sizeof fraction, ".%03dZ", static_cast<int>(ms));
  text.replace(text.size() - 1, 1, fraction);
  return text;
}

void to_json(nlohmann::json& j, const news_item& item) {
  j = {{"id", item.id},
       {"title", item.headline.title},
       {"url", item.headline.url},
       {"site", item.headline.site},
       {"first_seen", iso8601_ms(item.first_seen_ms)},
       {"rank", item.rank},
       {"new", item.is_new}};
}

std::string headlines_json(const std::vector<news_item>& items) {
  return nlohmann::json(items).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace newsdesk::server

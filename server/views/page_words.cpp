#include "server/views/page_words.hpp"

#include "server/core/utc_time.hpp"

#include <algorithm>

namespace newsdesk::server {

std::string plural(std::size_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

std::string clock_time(std::int64_t unix_ms) {
  return format_utc(unix_ms, "%H:%M UTC");
}

std::string full_time(std::int64_t unix_ms) {
  return format_utc(unix_ms, "%a %d %b %Y, %H:%M UTC");
}

std::string age_text(std::int64_t then_ms, std::int64_t now_ms) {
  auto seconds = std::max<std::int64_t>(0, (now_ms - then_ms) / 1000);
  if (seconds < 60)
    return "just now";
  if (seconds < 3600)
    return std::to_string(seconds / 60) + " min ago";
  if (seconds < 2 * 86400)
    return std::to_string(seconds / 3600) + " h ago";
  return std::to_string(seconds / 86400) + " days ago";
}

std::string published_text(std::int64_t then_ms, std::int64_t now_ms) {
  if (now_ms - then_ms < 86'400'000)
    return age_text(then_ms, now_ms);
  return format_utc(then_ms, "%d %b %Y");
}

std::string name_list(const std::vector<std::string>& names) {
  std::string out;
  const std::size_t shown = names.size() > 3 ? 2 : names.size();
  for (std::size_t i = 0; i < shown; ++i) {
    if (i > 0)
      out += i + 1 == shown && shown == names.size() ? " and " : ", ";
    out += names[i];
  }
  if (shown < names.size())
    out += " and " + std::to_string(names.size() - shown) + " more";
  return out;
}

} // namespace newsdesk::server

// The words the page and its live events put around numbers, times and names: "3 headlines",
// "19:25 UTC", "5 min ago", "CNN, BBC and Reuters". One place, so a failure or an age told live
// reads as after a reload.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace newsdesk::server {

// "1 headline", "3 headlines".
std::string plural(std::size_t n, std::string_view one, std::string_view many);

// "19:25 UTC" and "Tue 24 Nov 2026, 19:25 UTC" for unix milliseconds.
std::string clock_time(std::int64_t unix_ms);
std::string full_time(std::int64_t unix_ms);

// "just now", "5 min ago", "3 h ago", "2 days ago".
std::string age_text(std::int64_t then_ms, std::int64_t now_ms);
// A published time as the page words it: age_text within a day, else its UTC date
// ("17 Nov 2015").
std::string published_text(std::int64_t then_ms, std::int64_t now_ms);

// "CNN", "CNN and BBC", "CNN, BBC and Reuters", "CNN, BBC and 4 more".
std::string name_list(const std::vector<std::string>& names);

} // namespace newsdesk::server

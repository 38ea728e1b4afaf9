#include "server/core/utc_time.hpp"

#include <algorithm>
#include <chrono>

namespace newsdesk::server {

namespace {

constexpr std::int64_t day_ms = 86'400'000;

constexpr std::int64_t first_day_ms(std::chrono::year_month_day date) {
  return std::int64_t{std::chrono::sys_days{date}.time_since_epoch().count()} * day_ms;
}

// The years %Y can write in four digits.
constexpr std::int64_t min_ms =
    first_day_ms(std::chrono::year{0} / std::chrono::January / std::chrono::day{1});
constexpr std::int64_t max_ms =
    first_day_ms(std::chrono::year{9999} / std::chrono::December / std::chrono::day{31}) + day_ms -
    1;

// `value` (never negative) in exactly `width` digits, zeros in front.
void append_digits(std::string& out, unsigned value, int width) {
  char digits[8];
  for (int i = width - 1; i >= 0; --i) {
    digits[i] = static_cast<char>('0' + value % 10);
    value /= 10;
  }
  out.append(digits, static_cast<std::size_t>(width));
}

constexpr std::string_view weekday_names[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
constexpr std::string_view month_names[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

} // namespace

void append_utc(std::string& out, std::int64_t unix_ms, std::string_view pattern) {
  using namespace std::chrono;
  unix_ms = std::clamp(unix_ms, min_ms, max_ms);
  // Days and the time of day, rounding down: a time before 1970 still has a positive time of
  // day.
  std::int64_t day = unix_ms / day_ms;
  std::int64_t rest = unix_ms % day_ms;
  if (rest < 0) {
    rest += day_ms;
    --day;
  }
  const sys_days date{days{day}};
  const year_month_day ymd{date};
  const auto ms = static_cast<unsigned>(rest);
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    switch (const char directive = pattern[++i]) {
    case 'Y':
      append_digits(out, static_cast<unsigned>(static_cast<int>(ymd.year())), 4);
      break;
    case 'm':
      append_digits(out, static_cast<unsigned>(ymd.month()), 2);
      break;
    case 'd':
      append_digits(out, static_cast<unsigned>(ymd.day()), 2);
      break;
    case 'H':
      append_digits(out, ms / 3'600'000, 2);
      break;
    case 'M':
      append_digits(out, ms / 60'000 % 60, 2);
      break;
    case 'S':
      append_digits(out, ms / 1000 % 60, 2);
      break;
    case 'L':
      append_digits(out, ms % 1000, 3);
      break;
    case 'a':
      out += weekday_names[weekday{date}.c_encoding()];
      break;
    case 'b':
      out += month_names[static_cast<unsigned>(ymd.month()) - 1];
      break;
    case '%':
      out += '%';
      break;
    default: // not a directive: kept as written
      out += '%';
      out += directive;
    }
  }
}

std::string format_utc(std::int64_t unix_ms, std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() + 16);
  append_utc(out, unix_ms, pattern);
  return out;
}

} // namespace newsdesk::server

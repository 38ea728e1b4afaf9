// UTC times as text: the one place newsdesk turns a time into calendar fields and digits. Log
// lines, JSON, feeds, the page and HTTP dates differ only in the pattern they pass.
//
// No libc time functions: the calendar is std::chrono's (proleptic Gregorian), so formatting
// takes no lock and reads no time zone. Any thread may call these.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace newsdesk::server {

// Appends `unix_ms` (milliseconds since 1970-01-01T00:00:00Z, before it too) as UTC text by
// `pattern`, where
//   %Y  the year, four digits      %m  the month, two digits   %d  the day, two digits
//   %H  the hour (00-23)           %M  the minute              %S  the second
//   %L  the milliseconds, three digits
//   %a  the weekday ("Mon")        %b  the month ("Jan")       %%  a percent sign
// and every other character is copied. A time outside the years 0000 to 9999 is clamped to the
// nearer end, so %Y is always four digits.
void append_utc(std::string& out, std::int64_t unix_ms, std::string_view pattern);
std::string format_utc(std::int64_t unix_ms, std::string_view pattern);

// RFC 3339, to the second and to the millisecond: "2026-11-22T09:35:25Z",
// "2026-11-22T09:35:25.042Z".
inline constexpr std::string_view rfc3339_seconds = "%Y-%m-%dT%H:%M:%SZ";
inline constexpr std::string_view rfc3339_millis = "%Y-%m-%dT%H:%M:%S.%LZ";
// HTTP's date (RFC 9110 5.6.7, IMF-fixdate): "Sun, 06 Nov 1994 08:49:37 GMT".
inline constexpr std::string_view http_date_pattern = "%a, %d %b %Y %H:%M:%S GMT";

} // namespace newsdesk::server

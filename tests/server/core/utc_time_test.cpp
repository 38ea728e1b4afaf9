#include "server/core/utc_time.hpp"

#include <doctest/doctest.h>

#include <cstdint>

using namespace newsdesk::server;

TEST_CASE("RFC 3339 to the millisecond: before 1970 too, clamped to four-digit years") {
  CHECK(format_utc(0, rfc3339_millis) == "1970-01-01T00:00:00.000Z");
  CHECK(format_utc(1'700'000'000'123, rfc3339_millis) == "2023-11-14T22:13:20.123Z");
  CHECK(format_utc(951'782'400'000, rfc3339_millis) == "2000-02-29T00:00:00.000Z");
  CHECK(format_utc(-1, rfc3339_millis) == "1969-12-31T23:59:59.999Z");
  CHECK(format_utc(253'402'300'799'999, rfc3339_millis) == "9999-12-31T23:59:59.999Z");
  CHECK(format_utc(INT64_MAX, rfc3339_millis) == "9999-12-31T23:59:59.999Z");
  CHECK(format_utc(INT64_MIN, rfc3339_millis) == "0000-01-01T00:00:00.000Z");
}

TEST_CASE("RFC 3339 to the second drops the milliseconds, rounding down") {
  CHECK(format_utc(1'700'000'000'999, rfc3339_seconds) == "2023-11-14T22:13:20Z");
  CHECK(format_utc(-1, rfc3339_seconds) == "1969-12-31T23:59:59Z");
}

TEST_CASE("HTTP dates name the weekday and the month") {
  CHECK(format_utc(0, http_date_pattern) == "Thu, 01 Jan 1970 00:00:00 GMT");
  CHECK(format_utc(784'111'777'000, http_date_pattern) == "Sun, 06 Nov 1994 08:49:37 GMT");
  CHECK(format_utc(1'735'689'599'000, http_date_pattern) == "Tue, 31 Dec 2024 23:59:59 GMT");
}

TEST_CASE("a pattern copies everything but its directives") {
  CHECK(format_utc(1'700'000'000'123, "%H:%M UTC") == "22:13 UTC");
  CHECK(format_utc(1'700'000'000'123, "%a %d %b %Y, %H:%M UTC") == "Tue 14 Nov 2023, 22:13 UTC");
  CHECK(format_utc(0, "100%% at %q, %") == "100% at %q, %");
  std::string out = "at ";
  append_utc(out, 0, "%Y");
  CHECK(out == "at 1970");
}

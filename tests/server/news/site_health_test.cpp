#include "server/news/site_health.hpp"

#include <doctest/doctest.h>

using namespace newsdesk::server;
using namespace std::chrono_literals;

namespace {

constexpr std::int64_t minute = 60'000;
constexpr std::int64_t hour = 60 * minute;

// A site refreshed every 5 minutes that finds `headlines`, `fresh` of them new.
site_health::refresh found(std::int64_t at_ms, std::size_t headlines, std::size_t fresh = 0) {
  return {at_ms, failure_kind::none, headlines, fresh, false};
}

} // namespace

TEST_CASE("site health: a site that keeps finding what it usually finds is not flagged") {
  site_health h(5min);
  for (int i = 0; i < 50; ++i)
    CHECK_FALSE(h.record(found(i * 5 * minute, 40 + i % 5, i % 3 == 0 ? 2 : 0)));
  CHECK(h.verdict().empty());
}

TEST_CASE("site health: finding no headlines three refreshes in a row is a broken site, and one "
          "good refresh clears it") {
  site_health h(5min);
  for (int i = 0; i < 10; ++i)
    h.record(found(i * 5 * minute, 40, 1));
  CHECK_FALSE(h.record({50 * minute, failure_kind::no_headlines, 0, 0, false}));
  CHECK_FALSE(h.record({55 * minute, failure_kind::no_headlines, 0, 0, false}));
  // A failure of another kind (the site was down) neither counts nor breaks the streak.
  CHECK_FALSE(h.record({58 * minute, failure_kind::timeout, 0, 0, false}));
  CHECK(h.record({60 * minute, failure_kind::no_headlines, 0, 0, false}));
  CHECK(h.verdict() == "found no headlines in its last 3 refreshes");
  CHECK(h.record(found(65 * minute, 40, 1)));
  CHECK(h.verdict().empty());
}

TEST_CASE("site health: far fewer headlines than usual for three refreshes is flagged, and does "
          "not become the usual within a few refreshes") {
  site_health h(5min);
  for (int i = 0; i < 10; ++i)
    h.record(found(i * 5 * minute, 60, 1));
  // A quarter of 60 is 15: 20 is fewer, but not far fewer.
  for (int i = 10; i < 15; ++i)
    CHECK_FALSE(h.record(found(i * 5 * minute, 20, 1)));
  site_health broken(5min);
  for (int i = 0; i < 10; ++i)
    broken.record(found(i * 5 * minute, 60, 1));
  broken.record(found(50 * minute, 4));
  broken.record(found(55 * minute, 4));
  CHECK(broken.record(found(60 * minute, 4)));
  CHECK(broken.verdict() == "found 4 headlines in its last 3 refreshes, where it usually finds "
                            "about 60");
  for (int i = 13; i < 40; ++i)
    broken.record(found(i * 5 * minute, 4));
  CHECK(broken.verdict().find("where it usually finds about 60") != std::string::npos);
  // A hundred in a row make it the usual: a redesign that shows fewer.
  for (int i = 40; i < 110; ++i)
    broken.record(found(i * 5 * minute, 4));
  CHECK(broken.verdict().empty());
  // Before it knows what is usual it judges no count.
  site_health young(5min);
  young.record(found(0, 60));
  for (int i = 1; i < 4; ++i)
    CHECK_FALSE(young.record(found(i * 5 * minute, 4)));
}

TEST_CASE("site health: selectors that match nothing three refreshes in a row are flagged") {
  site_health h(5min);
  for (int i = 0; i < 2; ++i)
    CHECK_FALSE(h.record({i * 5 * minute, failure_kind::none, 30, 1, true}));
  CHECK(h.record({10 * minute, failure_kind::none, 30, 1, true}));
  CHECK(h.verdict().find("its selectors matched nothing") == 0);
}

TEST_CASE("site health: nothing new for ten times the usual gap, and over a day, is flagged, by a "
          "refresh or by a recheck") {
  site_health h(5min);
  // Something new every 20 minutes for a while.
  std::int64_t t = 0;
  for (int i = 0; i < 12; ++i, t += 20 * minute)
    h.record(found(t, 40, 2));
  const auto last_new = t - 20 * minute;
  // The same headlines for 23 hours: a quiet night is not a broken site.
  for (; t < last_new + 23 * hour; t += 5 * minute)
    CHECK_FALSE(h.record(found(t, 40)));
  CHECK_FALSE(h.recheck(last_new + 24 * hour - minute));
  CHECK(h.recheck(last_new + 25 * hour));
  CHECK(h.verdict() ==
        "nothing new for 25 hours, where it usually finds something new every 20 minutes");
  CHECK(h.record(found(last_new + 25 * hour + minute, 40, 3)));
  CHECK(h.verdict().empty());
}

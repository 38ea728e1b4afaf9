#include "server/news/headline_state.hpp"

#include <doctest/doctest.h>

#include <functional>
#include <map>
#include <unordered_map>
#include <vector>

using namespace newsdesk::server;
using namespace std::chrono_literals;

namespace {

site_config site_named(const std::string& name) {
  site_config c;
  c.name = name;
  c.display_name = name;
  return c;
}

news_item item(std::int64_t id, const std::string& title, const std::string& site) {
  return {{title, "https://" + site + ".test/" + std::to_string(id), site}, id, 1000 * id, false};
}

// The state of two sites, a and b, on a manual clock; every update the listener is given is
// kept, and ready callbacks run at once.
struct rig {
  manual_clock clock;
  headline_state state{clock, 15s, [](std::function<void()> fn) { fn(); }};
  std::vector<headline_update> updates;

  rig() {
    state.on_update([this](const headline_update& u) { updates.push_back(u); });
    state.set_sites({site_named("a"), site_named("b")});
    state.start();
    updates.clear();
  }

  // A successful refresh of `site` at `now_ms` listing `current`, of which `added` are new.
  std::vector<news_item> refresh(const std::string& site, std::vector<news_item> current,
                                 std::vector<std::int64_t> added, std::int64_t now_ms) {
    site_change c;
    c.state = {site, now_ms, now_ms, "", 10};
    c.current = std::move(current);
    c.added = std::move(added);
    return state.apply(c);
  }
  site_report report(const std::string& site) {
    for (const auto& s : state.snapshot()->sites)
      if (s.name == site)
        return s;
    FAIL("no site " << site);
    return {};
  }
};

} // namespace

TEST_CASE("headline state: a change publishes a snapshot and announces only later refreshes' "
          "new headlines") {
  rig r;
  auto first = r.refresh("a", {item(1, "One", "a"), item(2, "Two", "a")}, {1, 2}, 1000);
  CHECK(first.empty()); // a site's first success shows its page, it announces nothing
  REQUIRE(r.updates.size() == 1);
  CHECK(r.updates[0].snapshot->headlines.size() == 2);
  CHECK(r.updates[0].added.empty());

  auto second = r.refresh("a", {item(3, "Three", "a"), item(1, "One", "a")}, {3}, 2000);
  REQUIRE(second.size() == 1);
  CHECK(second[0].id == 3);
  REQUIRE(r.updates.size() == 2);
  CHECK(r.updates[1].added.size() == 1);
  CHECK(r.updates[1].snapshot->version > r.updates[0].snapshot->version);
}

TEST_CASE("headline state: a refresh that changes nothing a reader sees publishes nothing") {
  rig r;
  r.refresh("a", {item(1, "One", "a")}, {1}, 1000);
  r.refresh("b", {item(2, "Two", "b")}, {2}, 1000);
  REQUIRE(r.updates.size() == 2);
  const auto version = r.state.snapshot()->version;
  const auto b_version = r.report("b").version;

  // The same headlines, found again: only the times move on.
  r.clock.advance(10s);
  CHECK(r.refresh("a", {item(1, "One", "a")}, {}, 11'000).empty());
  CHECK(r.updates.size() == 2);
  CHECK(r.state.snapshot()->version == version);

  // A new title for a known link is a change; it moves a's version, not b's.
  r.refresh("a", {item(1, "One, updated", "a")}, {}, 12'000);
  REQUIRE(r.updates.size() == 3);
  CHECK(r.report("a").version == r.state.snapshot()->version);
  CHECK(r.report("a").last_success_ms == 12'000);
  CHECK(r.report("b").version == b_version);

  // A failure is a change of status; the same failure again is not.
  site_change failed;
  failed.state = {"a", 13'000, 0, "Splash timed out after 30 s", 30'000, failure_kind::timeout};
  r.state.apply(failed);
  REQUIRE(r.updates.size() == 4);
  CHECK(r.report("a").stale);
  CHECK(r.report("a").failure == failure_kind::timeout);
  failed.state.last_attempt_ms = 14'000;
  r.state.apply(failed);
  CHECK(r.updates.size() == 4);

  // Times that only moved on still reach readers, at the latest after times_refresh.
  r.clock.advance(headline_state::times_refresh);
  failed.state.last_attempt_ms = 80'000;
  r.state.apply(failed);
  REQUIRE(r.updates.size() == 5);
  CHECK(r.report("a").last_attempt_ms == 80'000);
}

TEST_CASE("headline state: readiness waits for every site's first refresh, or any headline") {
  rig r;
  std::vector<std::shared_ptr<const news_snapshot>> answered;
  r.state.when_ready([&](auto snap) { answered.push_back(snap); });
  CHECK(answered.empty());
  site_change failed;
  failed.state = {"a", 1000, 0, "down", 5, failure_kind::site_unreachable};
  r.state.apply(failed);
  CHECK(answered.empty()); // b has not been tried
  failed.state.site = "b";
  r.state.apply(failed);
  REQUIRE(answered.size() == 1);
  CHECK(answered[0]->ready);
}

TEST_CASE("headline state: several sites' changes at once make one update, new ids ascending") {
  rig r;
  r.refresh("a", {item(1, "One", "a")}, {1}, 1000);
  r.refresh("b", {item(2, "Two", "b")}, {2}, 1000);
  r.updates.clear();
  // As a cluster's events arrive: b (whose new id is 4) before a (whose new id is 3).
  site_change b, a;
  b.state = {"b", 2000, 2000, "", 10};
  b.current = std::vector<news_item>{item(4, "Four", "b"), item(2, "Two", "b")};
  b.added = {4};
  a.state = {"a", 2000, 2000, "", 10};
  a.current = std::vector<news_item>{item(3, "Three", "a"), item(1, "One", "a")};
  a.added = {3};
  auto added = r.state.apply(std::vector<site_change>{b, a});
  REQUIRE(r.updates.size() == 1);
  REQUIRE(r.updates[0].added.size() == 2);
  CHECK(r.updates[0].added[0].id == 3);
  CHECK(r.updates[0].added[1].id == 4);
  CHECK(added.size() == 2);
}

TEST_CASE("headline state: a change's story merges move every site's headlines of the merged "
          "story") {
  rig r;
  auto with_story = [](news_item i, std::int64_t story) {
    i.story = story;
    return i;
  };
  r.refresh("a", {with_story(item(1, "Quake", "a"), 1)}, {1}, 1000);
  r.refresh("b", {with_story(item(2, "Fire", "b"), 2), with_story(item(3, "Rain", "b"), 3)}, {2, 3},
            1000);
  r.updates.clear();
  const auto b_version = r.report("b").version;

  // a's refresh found a headline that joined story 1 and merged story 2 into it: b's "Fire",
  // which this change does not list, moves too.
  site_change a;
  a.state = {"a", 2000, 2000, "", 10};
  a.current = std::vector<news_item>{with_story(item(4, "Quake and fire", "a"), 1),
                                     with_story(item(1, "Quake", "a"), 1)};
  a.added = {4};
  a.merges = {{2, 1}};
  r.state.apply(a);
  REQUIRE(r.updates.size() == 1);
  std::map<std::int64_t, std::int64_t> story;
  for (const auto& h : r.updates[0].snapshot->headlines)
    story[h.id] = h.story;
  CHECK(story == std::map<std::int64_t, std::int64_t>{{1, 1}, {2, 1}, {3, 3}, {4, 1}});
  CHECK(r.report("b").version > b_version); // b's own views show the new story
  // Headline 4 joined story 1, which a and (through the merge) b tell now.
  CHECK(r.updates[0].story_sources == std::unordered_map<std::int64_t, std::size_t>{{1, 2}});

  // A merge alone (a cluster's, carried by a change of a site not configured here) is a change.
  site_change elsewhere;
  elsewhere.state = {"gone", 3000, 3000, "", 10};
  elsewhere.current = std::vector<news_item>{};
  elsewhere.merges = {{3, 1}};
  r.state.apply(elsewhere);
  REQUIRE(r.updates.size() == 2);
  for (const auto& h : r.updates[1].snapshot->headlines)
    CHECK(h.story == 1);
  CHECK(r.updates[1].story_sources.empty()); // it announced nothing

  // b no longer lists story 1's headlines; a's next one joins it: one site tells it now. A
  // headline that starts its own story is not a joining one.
  r.refresh("b", {with_story(item(5, "Snow", "b"), 5)}, {5}, 4000);
  CHECK(r.updates.back().story_sources.empty());
  r.refresh("a",
            {with_story(item(6, "Quake aftershock", "a"), 1), with_story(item(1, "Quake", "a"), 1)},
            {6}, 5000);
  CHECK(r.updates.back().story_sources == std::unordered_map<std::int64_t, std::size_t>{{1, 1}});
}

TEST_CASE("headline state: one round's headlines interleave by their sites' ranks, newest lead "
          "first") {
  rig r;
  auto at = [](news_item i, std::int64_t first_seen_ms) {
    i.first_seen_ms = first_seen_ms;
    return i;
  };
  // a lists four headlines, b two, found 5 s apart: every site's lead, then every second...
  r.refresh("a",
            {at(item(1, "A1", "a"), 100'000), at(item(2, "A2", "a"), 100'000),
             at(item(3, "A3", "a"), 100'000), at(item(4, "A4", "a"), 100'000)},
            {1, 2, 3, 4}, 100'000);
  r.refresh("b", {at(item(5, "B1", "b"), 105'000), at(item(6, "B2", "b"), 105'000)}, {5, 6},
            105'000);
  std::vector<std::string> titles;
  for (const auto& h : r.state.snapshot()->headlines)
    titles.push_back(h.headline.title);
  CHECK(titles == std::vector<std::string>{"B1", "A1", "B2", "A2", "A3", "A4"});

  // A new lead found later goes first; the others keep their places (their round is the same).
  r.refresh("a",
            {at(item(7, "A0", "a"), 200'000), at(item(1, "A1", "a"), 100'000),
             at(item(2, "A2", "a"), 100'000)},
            {7}, 200'000);
  titles.clear();
  for (const auto& h : r.state.snapshot()->headlines)
    titles.push_back(h.headline.title);
  CHECK(titles == std::vector<std::string>{"A0", "B1", "A1", "B2", "A2"});
}

// Stories in the store, on both backends: assigned in the write that stores a headline, merged in
// it, kept across a restart, shared by instances on one PostgreSQL database, pruned with their
// headlines, and migrated into an older store. The story grouping is title_grouping
// (store_test_support.hpp): the store's plumbing is under test, not story_assigner.
#include "server/store/postgres_store.hpp"
#include "server/store/sqlite_store.hpp"

#include "tests/server/store/store_test_support.hpp"
#include "tests/support/harness.hpp"

#include <doctest/doctest.h>
#include <sqlite3.h>

#include <chrono>
#include <string>

using namespace newsdesk::server;
using namespace newsdesk::testing;

namespace {

using observed = title_grouping::observed;

constexpr std::int64_t quiet_ms = stories::story_limits{}.quiet_period.count();

std::int64_t id_of(headline_store& store, const std::string& site, const std::string& title) {
  for (const auto& row : store.current(site))
    if (row.title == title)
      return row.id;
  FAIL("no headline \"" << title << "\" on " << site);
  return 0;
}

std::int64_t story_of(headline_store& store, const std::string& site, const std::string& title) {
  for (const auto& row : store.current(site))
    if (row.title == title)
      return row.story;
  FAIL("no headline \"" << title << "\" on " << site);
  return 0;
}

// Runs several statements on the SQLite file `file`.
void raw_exec(const std::filesystem::path& file, const char* sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(file.string().c_str(), &db) == SQLITE_OK);
  char* error = nullptr;
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &error);
  const std::string message = error ? error : "";
  sqlite3_free(error);
  sqlite3_close(db);
  REQUIRE_MESSAGE(rc == SQLITE_OK, message);
}

std::string database_of(const std::string& url) {
  return url.substr(url.rfind('/') + 1);
}

} // namespace

TEST_CASE("stories: a new row gets its story in the write that stores it; known rows keep it") {
  auto seen = std::make_shared<observed>();
  for_each_backend(
      [](headline_store& store) {
        auto first = store.record_refresh(
            "a", page({{"Quake hits city", "https://a/1"}, {"Other", "https://a/2"}}), at(1000));
        REQUIRE(first.added.size() == 2);
        for (const auto& row : first.added)
          CHECK(row.story == row.id); // nothing like them before: each starts a story
        const auto quake = first.added[0].id;

        auto second =
            store.record_refresh("b", page({{"Quake hits city", "https://b/1"}}), at(2000));
        REQUIRE(second.added.size() == 1);
        CHECK(second.added[0].story == quake);
        CHECK(second.current == second.added);
        CHECK(second.merges.empty());
        CHECK(store.current("b") == second.current); // as stored
        CHECK(store.since(0, 10).at(2).story == quake);

        // A story's rows, every site's, newest first; an unknown story has none.
        auto story = store.story_headlines(quake, 100);
        REQUIRE(story.size() == 2);
        CHECK(story[0].id == second.added[0].id);
        CHECK(story[1].id == quake);
        CHECK(store.story_headlines(quake, 1).size() == 1);
        CHECK(store.story_headlines(first.added[1].id, 100).size() == 1);
        CHECK(store.story_headlines(quake + 1000, 100).empty());

        // A known link keeps its story whatever its title becomes.
        auto again = store.record_refresh("a", page({{"Other", "https://a/1"}}), at(3000));
        CHECK(again.added.empty());
        REQUIRE(again.current.size() == 1);
        CHECK(again.current[0].story == quake);
        CHECK(store.current("a")[0].story == quake);
      },
      title_grouping::options(seen));
}

TEST_CASE("stories: an item published long before it was first seen joins no story of today") {
  constexpr std::int64_t now = 1'780'000'000'000;
  constexpr std::int64_t day = 24 * 3600 * 1000;
  for_each_backend([](headline_store& store) {
    const char* title = "Magnitude 7.1 earthquake strikes off the coast of central Chile";
    auto today = store.record_refresh("a", page({{title, "https://a/quake"}}), at(now));
    REQUIRE(today.added.size() == 1);
    const auto story = today.added[0].story;
    // A feed's months-old item on the same words (another quake, or an archive page) is not
    // today's event; an item published an hour ago is.
    std::vector<newsdesk::scrapers::headline> old = {
        {title, "https://b/archive/quake", "ignored", now - 90 * day}};
    std::vector<newsdesk::scrapers::headline> fresh = {
        {title, "https://c/quake", "ignored", now - 3600 * 1000}};
    auto archive = store.record_refresh("b", old, at(now + 60'000));
    REQUIRE(archive.added.size() == 1);
    CHECK(archive.added[0].story == archive.added[0].id);
    auto recent = store.record_refresh("c", fresh, at(now + 120'000));
    REQUIRE(recent.added.size() == 1);
    CHECK(recent.added[0].story == story);
    // A published time in the future (a site's clock) is taken as when it was first seen.
    std::vector<newsdesk::scrapers::headline> ahead = {
        {title, "https://d/quake", "ignored", now + 30 * day}};
    auto future = store.record_refresh("d", ahead, at(now + 180'000));
    REQUIRE(future.added.size() == 1);
    CHECK(future.added[0].story == story);
  });
}

TEST_CASE("stories: a headline's summary is stored, follows its source, and reads back") {
  for_each_backend([](headline_store& store) {
    std::vector<newsdesk::scrapers::headline> found = {
        {"Bridge opens", "https://a/bridge", "ignored"},
        {"Rain ahead", "https://a/rain", "ignored"}};
    found[0].summary = "The span links the two banks after ten years.";
    auto first = store.record_refresh("a", found, at(1000));
    REQUIRE(first.added.size() == 2);
    CHECK(first.added[0].summary == found[0].summary);
    CHECK(first.added[1].summary.empty());
    found[0].summary = "The span links the two banks after ten years; traffic from noon.";
    found[1].summary = "Showers from noon.";
    auto second = store.record_refresh("a", found, at(2000));
    CHECK(second.added.empty());
    REQUIRE(second.current.size() == 2);
    CHECK(second.current[0].summary == found[0].summary);
    CHECK(second.current[1].summary == found[1].summary);
    const auto rows = store.current("a");
    REQUIRE(rows.size() == 2);
    CHECK(rows[0].summary == found[0].summary);
    CHECK(rows[1].summary == "Showers from noon.");
    CHECK(store.since(0, 10).at(1).summary == "Showers from noon.");
  });
}

TEST_CASE("stories: a merge moves every row of the merged story in the same write, and is "
          "logged") {
  auto seen = std::make_shared<observed>();
  for_each_backend(
      [](headline_store& store) {
        CHECK(store.last_merge_seq() == 0);
        store.record_refresh("a", page({{"Quake", "https://a/1"}}), at(1000));
        store.record_refresh("b", page({{"Fire", "https://b/1"}}), at(1000));
        const auto quake = id_of(store, "a", "Quake"), fire = id_of(store, "b", "Fire");
        auto written = store.record_refresh("c", page({{"Quake + Fire", "https://c/1"}}), at(2000));
        CHECK(written.merges == std::vector<stories::story_merge>{{fire, quake}});
        CHECK(written.added.at(0).story == quake);
        CHECK(story_of(store, "b", "Fire") == quake); // another site's row moved too
        CHECK(store.story_headlines(quake, 100).size() == 3);
        CHECK(store.story_headlines(fire, 100).empty());

        auto log = store.merges_after(0, 10);
        REQUIRE(log.size() == 1);
        CHECK(log[0].seq > 0);
        CHECK(log[0].merge == stories::story_merge{fire, quake});
        CHECK(store.last_merge_seq() == log[0].seq);
        CHECK(store.merges_after(log[0].seq, 10).empty());

        // A row stored earlier in the same write is moved as well, in the store and in what the
        // write returns.
        written = store.record_refresh(
            "d", page({{"Flood", "https://d/1"}, {"Quake + Flood", "https://d/2"}}), at(3000));
        REQUIRE(written.merges.size() == 1);
        const auto flood = written.merges[0].from;
        CHECK(flood == written.added.at(0).id);
        for (const auto& row : written.current)
          CHECK(row.story == quake);
        CHECK(written.added == written.current);
        CHECK(store.current("d") == written.current);
        CHECK(store.merges_after(log[0].seq, 10).at(0).merge == stories::story_merge{flood, quake});
      },
      title_grouping::options(seen));
}

TEST_CASE("stories: a write that fails after assigning leaves nothing of itself in the "
          "assignment") {
  auto seen = std::make_shared<observed>();
  for_each_backend(
      [&seen](headline_store& store) {
        const int made = seen->made;
        CHECK_THROWS(store.record_refresh(
            "a", page({{"Quake", "https://a/1"}, {"fail", "https://a/2"}}), at(1000)));
        CHECK(store.since(0, 10).empty()); // rolled back
        CHECK(seen->made == made + 1);     // the grouping that assigned "Quake" is gone
        // Had the rolled-back "Quake" stayed in the assignment, this one would join its story.
        auto written = store.record_refresh("b", page({{"Quake", "https://b/1"}}), at(2000));
        REQUIRE(written.added.size() == 1);
        CHECK(written.added[0].story == written.added[0].id);
      },
      title_grouping::options(seen));
}

TEST_CASE("stories: pruning removes a story with its last headline, and merges older than the "
          "quiet period") {
  auto seen = std::make_shared<observed>();
  for_each_backend(
      [](headline_store& store) {
        store.record_refresh("a", page({{"Quake", "https://a/1"}}), at(1000));
        store.record_refresh("b", page({{"Fire", "https://b/1"}}), at(1000));
        store.record_refresh("c", page({{"Quake + Fire", "https://c/1"}}), at(1000));
        const auto quake = id_of(store, "a", "Quake");
        REQUIRE(store.merges_after(0, 10).size() == 1);

        const auto later = 1000 + quiet_ms + 1;
        for (const char* site : {"a", "b", "c"})
          store.record_refresh(site, page({{"Later", "https://later/1"}}), at(later));
        CHECK(store.prune(later) == 3);
        CHECK(store.story_headlines(quake, 100).empty());
        CHECK(store.merges_after(0, 10).empty());
        CHECK(store.last_merge_seq() == 1); // never reused
      },
      title_grouping::options(seen));
}

TEST_CASE("stories: ids survive closing and reopening, and assignment goes on from the store") {
  auto seen = std::make_shared<observed>();
  auto check = [&](auto open) {
    std::int64_t quake = 0, fire = 0;
    {
      auto store = open();
      store->record_refresh("a", page({{"Quake", "https://a/1"}, {"Fire", "https://a/2"}}),
                            at(1000));
      store->record_refresh("b", page({{"Quake + Fire", "https://b/1"}}), at(2000));
      quake = id_of(*store, "a", "Quake");
      fire = id_of(*store, "a", "Fire");
    }
    seen->ids.clear();
    seen->merges.clear();
    auto store = open();
    CHECK(story_of(*store, "a", "Fire") == quake);
    CHECK(story_of(*store, "b", "Quake + Fire") == quake);
    // The reopened store replayed its rows and merges into a new grouping...
    CHECK(seen->ids.size() == 3);
    CHECK(seen->merges == std::vector<stories::story_merge>{{fire, quake}});
    // ...so a headline seen now joins the story it started before.
    auto written = store->record_refresh("c", page({{"Fire", "https://c/1"}}), at(3000));
    CHECK(written.added.at(0).story == quake);
  };
  SUBCASE("sqlite") {
    temp_dir dir;
    check([&] { return sqlite_store::open(dir.path / "news.db", title_grouping::options(seen)); });
  }
  SUBCASE("postgresql") {
    const auto url = postgres_cluster::shared().fresh_database();
    check([&] { return postgres_store::open(url, title_grouping::options(seen)); });
  }
}

TEST_CASE("stories: a headline's language is decided when it is stored, kept in its row and "
          "read again after reopening") {
  auto seen = std::make_shared<observed>();
  auto check = [&](auto open) {
    {
      auto store = open();
      auto found = page({{"Erdbeben der Stärke 6,4 erschüttert die Osttürkei", "https://a/1"},
                         {"東京で震度5強の地震　けが人の情報なし", "https://a/2"},
                         {"Merz stellt Rente mit 63 infrage", "https://a/3"}});
      found[0].language = "de-DE"; // as the page declared it
      found[1].language = "en";    // a template's lang="en" on a Japanese title
      auto written = store->record_refresh("a", found, at(1000));
      REQUIRE(written.added.size() == 3);
      CHECK(written.added[0].language == "de");
      CHECK(written.added[1].language == "ja");
      CHECK(written.added[2].language == "de"); // none declared: detected
      CHECK(seen->languages == std::vector<std::string>{"de", "ja", "de"});
      const auto rows = store->since(0, 10);
      REQUIRE(rows.size() == 3);
      CHECK(rows[1].language == "ja");
    }
    seen->languages.clear();
    auto store = open();
    CHECK(seen->languages == std::vector<std::string>{"de", "ja", "de"}); // replayed with them
  };
  SUBCASE("sqlite") {
    temp_dir dir;
    check([&] { return sqlite_store::open(dir.path / "news.db", title_grouping::options(seen)); });
  }
  SUBCASE("postgresql") {
    const auto url = postgres_cluster::shared().fresh_database();
    check([&] { return postgres_store::open(url, title_grouping::options(seen)); });
  }
}

TEST_CASE("stories: a database of schema version 6 is migrated; its rows keep '' as their "
          "language and new rows get theirs") {
  auto check = [](headline_store& store) {
    auto rows = store.since(0, 10);
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].language.empty()); // stored before languages were
    const auto added =
        store
            .record_refresh(
                "b", page({{"Erdbeben der Stärke 6,4 erschüttert die Osttürkei", "https://b/1"}}),
                at(2000))
            .added;
    REQUIRE(added.size() == 1);
    CHECK(added[0].language == "de");
    CHECK(store.since(0, 10).at(1).language == "de");
  };
  SUBCASE("sqlite") {
    temp_dir dir;
    const auto file = dir.path / "old.db";
    sqlite_store::open(file)->record_refresh("a", page({{"A", "https://a/1"}}), at(1000));
    raw_exec(file, "ALTER TABLE headlines DROP COLUMN language; "
                   "ALTER TABLE headlines DROP COLUMN summary; ALTER TABLE headlines DROP COLUMN "
                   "image; DROP TABLE pictures; PRAGMA user_version = 6;");
    check(*sqlite_store::open(file));
  }
  SUBCASE("postgresql") {
    auto& pg = postgres_cluster::shared();
    const auto url = pg.fresh_database();
    postgres_store::open(url)->record_refresh("a", page({{"A", "https://a/1"}}), at(1000));
    pg.exec(database_of(url), "ALTER TABLE headlines DROP COLUMN language, DROP COLUMN summary, "
                              "DROP COLUMN image; DROP TABLE pictures; "
                              "UPDATE newsdesk_schema SET version = 6;");
    auto store = postgres_store::open(url);
    CHECK(pg.exec(database_of(url), "SELECT version FROM newsdesk_schema") ==
          std::to_string(postgres_store::schema_version));
    check(*store);
  }
}

TEST_CASE("stories: two instances on one PostgreSQL database agree, each catching up on the "
          "other's rows and merges before it assigns") {
  const auto url = postgres_cluster::shared().fresh_database();
  auto seen_a = std::make_shared<observed>(), seen_b = std::make_shared<observed>();
  auto a = postgres_store::open(url, title_grouping::options(seen_a));
  auto b = postgres_store::open(url, title_grouping::options(seen_b));

  a->record_refresh("x", page({{"Quake", "https://x/1"}}), at(1000));
  const auto quake = id_of(*a, "x", "Quake");
  // B never wrote "Quake": it joins A's story because B observed A's row first.
  auto written = b->record_refresh("y", page({{"Quake", "https://y/1"}}), at(2000));
  CHECK(written.added.at(0).story == quake);
  CHECK(seen_b->ids == std::vector<std::int64_t>{quake});

  // A merge B makes reaches A's assignment before A assigns again.
  a->record_refresh("z", page({{"Fire", "https://z/1"}}), at(3000));
  const auto fire = id_of(*a, "z", "Fire");
  written = b->record_refresh("w", page({{"Quake + Fire", "https://w/1"}}), at(4000));
  CHECK(written.merges == std::vector<stories::story_merge>{{fire, quake}});
  written = a->record_refresh("v", page({{"Fire", "https://v/1"}}), at(5000));
  CHECK(seen_a->merges == std::vector<stories::story_merge>{{fire, quake}});
  CHECK(written.added.at(0).story == quake);
  // Both read the same stories.
  for (const char* site : {"x", "y", "z", "w", "v"}) {
    CHECK(a->current(site).at(0).story == quake);
    CHECK(b->current(site).at(0).story == quake);
  }
  CHECK(a->story_headlines(quake, 100).size() == 5);
}

TEST_CASE("stories: an SQLite file of schema version 3 is migrated; each row is a story of its "
          "own") {
  temp_dir dir;
  const auto file = dir.path / "old.db";
  sqlite_store::open(file)->record_refresh("a", page({{"A", "https://a/1"}}), at(1000));
  // Back to version 3: what versions 4 to 9 added, gone; then a row as version 3 wrote them.
  raw_exec(
      file,
      "DROP TABLE site_icons; ALTER TABLE headlines DROP COLUMN published_ms; "
      "ALTER TABLE headlines DROP COLUMN first_look; ALTER TABLE headlines DROP COLUMN language; "
      "ALTER TABLE headlines DROP COLUMN summary; ALTER TABLE headlines DROP COLUMN image; "
      "DROP TABLE pictures; "
      "DROP INDEX headlines_story; DROP "
      "INDEX headlines_first_seen; "
      "ALTER TABLE headlines DROP COLUMN story; DROP TABLE story_merges; "
      "INSERT INTO headlines (site, url, title, first_seen_ms, last_seen_ms, seen_seq, "
      "position) VALUES ('a', 'https://a/2', 'B', 1000, 1000, 1, 1); "
      "PRAGMA user_version = 3;");

  auto store = sqlite_store::open(file);
  auto rows = store->since(0, 10);
  REQUIRE(rows.size() == 2);
  for (const auto& row : rows)
    CHECK(row.story == row.id);
  CHECK(store->story_headlines(rows[1].id, 10).size() == 1);
  CHECK(store->last_merge_seq() == 0);
  CHECK(store->record_refresh("b", page({{"C", "https://b/1"}}), at(2000)).added.at(0).id ==
        rows[1].id + 1);
}

TEST_CASE("stories: a PostgreSQL database of schema version 2 is migrated; each row is a story "
          "of its own") {
  auto& pg = postgres_cluster::shared();
  const auto url = pg.fresh_database();
  postgres_store::open(url)->record_refresh("a", page({{"A", "https://a/1"}}), at(1000));
  // Back to version 2: what versions 3 to 9 added, gone; then a row as version 2 wrote them.
  pg.exec(database_of(url),
          "DROP TABLE instances; ALTER TABLE schedule DROP COLUMN last_owner; "
          "DROP TABLE site_icons; "
          "ALTER TABLE headlines DROP COLUMN published_ms, DROP COLUMN first_look, "
          "DROP COLUMN language, DROP COLUMN summary, DROP COLUMN image; DROP TABLE pictures; "
          "DROP TABLE story_merges; DROP INDEX headlines_first_seen; "
          "ALTER TABLE headlines DROP COLUMN story; "
          "ALTER TABLE newsdesk_meta DROP COLUMN last_merge; "
          "INSERT INTO headlines (id, site, url, title, first_seen_ms, last_seen_ms, seen_seq, "
          "position) VALUES (2, 'a', 'https://a/2', 'B', 1000, 1000, 1, 1); "
          "UPDATE newsdesk_meta SET last_id = 2; UPDATE newsdesk_schema SET version = 2;");

  auto store = postgres_store::open(url);
  CHECK(pg.exec(database_of(url), "SELECT version FROM newsdesk_schema") ==
        std::to_string(postgres_store::schema_version));
  auto rows = store->since(0, 10);
  REQUIRE(rows.size() == 2);
  for (const auto& row : rows)
    CHECK(row.story == row.id);
  CHECK(store->last_merge_seq() == 0);
  CHECK(store->record_refresh("b", page({{"C", "https://b/1"}}), at(2000)).added.at(0).story == 3);
}

#include "server/store/postgres_store.hpp"
#include "server/store/sqlite_store.hpp"

#include "tests/server/store/store_test_support.hpp"
#include "tests/support/harness.hpp"

#include <doctest/doctest.h>
#include <sqlite3.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace newsdesk::server;
using newsdesk::scrapers::headline;
using namespace newsdesk::testing;

namespace {

// Runs one statement on `file` with a raw SQLite connection; returns the first column of the
// first row as text (empty when none).
std::string raw_sql(const std::filesystem::path& file, const char* sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(file.string().c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) == SQLITE_OK);
  std::string result;
  if (sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_text(stmt, 0))
    result = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return result;
}

std::string open_error(const std::filesystem::path& file) {
  try {
    sqlite_store::open(file);
  } catch (const store_error& e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("store: new links get rows with first_seen = last_seen, known links only move on") {
  for_each_backend([](headline_store& store) {
    auto written =
        store.record_refresh("cnn", page({{"A", "https://x/a"}, {"B", "https://x/b"}}), at(1000));
    CHECK(written.current == written.added); // a first refresh: everything is new
    auto added = written.added;
    REQUIRE(added.size() == 2);
    CHECK(added[0].id < added[1].id);
    // A new row with nothing like it before starts a story of its own.
    // Found by the site's first refresh: its first look (no published time given).
    CHECK(added[0] == stored_headline{added[0].id, "cnn", "A", "https://x/a", 1000, 1000,
                                      added[0].id, std::nullopt, true, added[0].language});
    CHECK(added[1].site == "cnn"); // the argument wins over headline::site

    written =
        store.record_refresh("cnn", page({{"B", "https://x/b"}, {"C", "https://x/c"}}), at(2000));
    // What is current now, in the site's order, as a read would give it: the known link keeps
    // its id and first-seen time.
    CHECK(written.current == store.current("cnn"));
    REQUIRE(written.current.size() == 2);
    CHECK(written.current[0] == stored_headline{added[1].id, "cnn", "B", "https://x/b", 1000, 2000,
                                                added[1].id, std::nullopt, true,
                                                added[1].language});
    added = written.added;
    REQUIRE(added.size() == 1);
    CHECK(added[0].title == "C");
    CHECK(added[0].id > store.since(0, 10)[1].id);

    auto all = store.since(0, 100);
    REQUIRE(all.size() == 3);
    CHECK(all[0].last_seen_ms == 1000); // A not seen again
    CHECK(all[1].first_seen_ms == 1000);
    CHECK(all[1].last_seen_ms == 2000);
    CHECK(store.last_id() == all[2].id);
  });
}

TEST_CASE("store: the same URL on another site is another headline") {
  for_each_backend([](headline_store& store) {
    CHECK(store.record_refresh("a", page({{"T", "https://x/1"}}), at(1)).added.size() == 1);
    CHECK(store.record_refresh("b", page({{"T", "https://x/1"}}), at(1)).added.size() == 1);
    CHECK(store.since(0, 10).size() == 2);
  });
}

TEST_CASE("store: a known link takes the latest title") {
  for_each_backend([](headline_store& store) {
    store.record_refresh("cnn", page({{"Old title", "https://x/a"}}), at(1000));
    auto added = store.record_refresh("cnn", page({{"New title", "https://x/a"}}), at(2000)).added;
    CHECK(added.empty());
    auto cur = store.current("cnn");
    REQUIRE(cur.size() == 1);
    CHECK(cur[0].title == "New title");
    CHECK(cur[0].first_seen_ms == 1000);
    CHECK(cur[0].last_seen_ms == 2000);
  });
}

TEST_CASE("store: current is the latest refresh in the site's order; the rest stays history") {
  for_each_backend([](headline_store& store) {
    CHECK(store.current("cnn").empty());
    store.record_refresh("cnn", page({{"A", "https://x/a"}, {"B", "https://x/b"}}), at(1000));
    store.record_refresh("bbc", page({{"Z", "https://y/z"}}), at(1000));
    store.record_refresh("cnn", page({{"C", "https://x/c"}, {"A", "https://x/a"}}), at(2000));
    CHECK(titles(store.current("cnn")) == std::vector<std::string>{"C", "A"});
    CHECK(titles(store.current("bbc")) == std::vector<std::string>{"Z"});
    CHECK(titles(store.since(0, 100)) == std::vector<std::string>{"A", "B", "Z", "C"});

    SUBCASE("two refreshes in the same millisecond still replace what is current") {
      store.record_refresh("cnn", page({{"B", "https://x/b"}}), at(2000));
      CHECK(titles(store.current("cnn")) == std::vector<std::string>{"B"});
    }
    SUBCASE("a refresh that found nothing leaves nothing current") {
      store.record_refresh("cnn", {}, at(3000));
      CHECK(store.current("cnn").empty());
      CHECK(store.since(0, 100).size() == 4);
    }
    SUBCASE("a failure keeps the last good headlines current") {
      store.record_failure("cnn", "Splash timed out after 30 s", at(3000));
      CHECK(titles(store.current("cnn")) == std::vector<std::string>{"C", "A"});
    }
  });
}

TEST_CASE("store: duplicate URLs in one refresh count once, the first listing wins") {
  for_each_backend([](headline_store& store) {
    auto added =
        store
            .record_refresh("s", page({{"First", "https://x/a"}, {"Second", "https://x/a"}}), at(1))
            .added;
    REQUIRE(added.size() == 1);
    CHECK(added[0].title == "First");
    CHECK(titles(store.current("s")) == std::vector<std::string>{"First"});
  });
}

TEST_CASE("store: limits cut long titles at a character boundary and skip long URLs") {
  for_each_backend([](headline_store& store) {
    std::string title(store_limits::max_title_bytes - 1, 'x');
    title += "\xC3\xA9\xC3\xA9"; // two 2-byte characters straddling the limit
    std::string long_url = "https://x/" + std::string(store_limits::max_url_bytes, 'a');
    auto added =
        store
            .record_refresh(
                "s", {{title, "https://x/1", "s"}, {"Too long", long_url, "s"}, {"Empty", "", "s"}},
                at(1))
            .added;
    REQUIRE(added.size() == 1);
    CHECK(added[0].title.size() == store_limits::max_title_bytes - 1);
    CHECK(store.current("s")[0].title == added[0].title);

    std::vector<headline> many;
    for (std::size_t i = 0; i < store_limits::max_headlines_per_refresh + 5; ++i)
      many.push_back({"t", "https://x/m" + std::to_string(i), "s"});
    CHECK(store.record_refresh("s", many, at(2)).added.size() ==
          store_limits::max_headlines_per_refresh);

    CHECK_THROWS_AS(store.record_refresh("", {}, at(1)), store_error);
    CHECK_THROWS_AS(
        store.record_failure(std::string(store_limits::max_site_bytes + 1, 's'), "e", at(1)),
        store_error);
  });
}

TEST_CASE("store: successes and failures are recorded per site") {
  for_each_backend([](headline_store& store) {
    store.record_refresh("cnn", page({{"A", "https://x/a"}}), at(1000));
    store.record_failure("cnn", "Splash timed out after 30 s", at(2000));
    store.record_failure("bbc", "", at(2500));
    auto sites = store.sites();
    REQUIRE(sites.size() == 2);
    CHECK(sites[0] == site_state{"bbc", 2500, 0, "refresh failed", 0});
    CHECK(sites[1] == site_state{"cnn", 2000, 1000, "Splash timed out after 30 s"});

    store.record_refresh("cnn", page({{"A", "https://x/a"}}), at(3000));
    CHECK(store.sites()[1] == site_state{"cnn", 3000, 3000, ""});
  });
}

TEST_CASE("store: since returns rows after an id, ascending, at most limit") {
  for_each_backend([](headline_store& store) {
    CHECK(store.last_id() == 0);
    CHECK(store.since(0, 10).empty());
    std::vector<headline> hs;
    for (int i = 0; i < 10; ++i)
      hs.push_back({"t" + std::to_string(i), "https://x/" + std::to_string(i), "s"});
    auto added = store.record_refresh("s", hs, at(1)).added;
    REQUIRE(added.size() == 10);

    auto rows = store.since(added[3].id, 4);
    REQUIRE(rows.size() == 4);
    for (std::size_t i = 0; i < rows.size(); ++i)
      CHECK(rows[i] == added[4 + i]);
    CHECK(store.since(added[9].id, 10).empty());
    CHECK(store.since(0, 0).empty());
    CHECK(store.since(-5, 100).size() == 10);
    CHECK(store.last_id() == added[9].id);
  });
}

TEST_CASE("store: prune deletes old history but keeps what is current; ids are not reused") {
  for_each_backend([](headline_store& store) {
    store.record_refresh("s", page({{"Old", "https://x/old"}, {"Kept", "https://x/kept"}}),
                         at(1000));
    store.record_refresh("s", page({{"Kept", "https://x/kept"}, {"New", "https://x/new"}}),
                         at(5000));
    store.record_refresh("t", page({{"Stale but current", "https://y/1"}}), at(500));
    auto top = store.last_id();

    CHECK(store.prune(2000) == 1); // "Old"; the other site's only refresh is still current
    CHECK(titles(store.since(0, 10)) ==
          std::vector<std::string>{"Kept", "New", "Stale but current"});
    CHECK(store.prune(2000) == 0);

    store.record_refresh("s", page({{"Newest", "https://x/newest"}}), at(6000));
    CHECK(store.prune(5500) == 2); // "Kept" and "New" are no longer current
    CHECK(store.last_id() == top + 1);
    auto added = store.record_refresh("s", page({{"Old", "https://x/old"}}), at(7000)).added;
    REQUIRE(added.size() == 1);
    CHECK(added[0].id == top + 2); // seen again after pruning: a new row with a new id
  });
}

TEST_CASE("store: reopening a file keeps its history and current headlines; WAL is on") {
  temp_dir dir;
  auto file = dir.path / "news.db";
  std::int64_t last = 0;
  {
    auto owned = sqlite_store::open(file);
    auto& store = *owned;
    store.record_refresh("cnn", page({{"A", "https://x/a"}, {"B", "https://x/b"}}), at(1000));
    store.record_failure("bbc", "down", at(1500));
    last = store.last_id();
  }
  CHECK(raw_sql(file, "PRAGMA journal_mode") == "wal");
  CHECK(raw_sql(file, "PRAGMA user_version") == std::to_string(sqlite_store::schema_version));

  auto owned = sqlite_store::open(file);
  auto& store = *owned;
  CHECK(store.location() == file.string());
  CHECK(titles(store.current("cnn")) == std::vector<std::string>{"A", "B"});
  CHECK(store.sites().size() == 2);
  CHECK(store.last_id() == last);
  CHECK(store.record_refresh("cnn", page({{"A", "https://x/a"}}), at(2000)).added.empty());
}

TEST_CASE("store: an empty file is migrated from schema version 0") {
  temp_dir dir;
  auto file = dir.path / "empty.db";
  std::ofstream(file).close();
  REQUIRE(std::filesystem::file_size(file) == 0);
  auto owned = sqlite_store::open(file);
  auto& store = *owned;
  store.record_refresh("s", page({{"A", "https://x/a"}}), at(1));
  CHECK(raw_sql(file, "PRAGMA user_version") == std::to_string(sqlite_store::schema_version));
}

TEST_CASE("store: a file that is not an SQLite database gives an error naming the file") {
  temp_dir dir;
  auto file = dir.path / "not-a-db.txt";
  {
    std::ofstream out(file);
    for (int i = 0; i < 200; ++i)
      out << "this is plainly not an SQLite database, line " << i << "\n";
  }
  auto message = open_error(file);
  INFO(message);
  CHECK(message.find(file.string()) != std::string::npos);
  CHECK(message.find("it is not an SQLite database") != std::string::npos);
}

TEST_CASE("store: a missing folder or a folder in the file's place is named as the cause") {
  temp_dir dir;
  auto missing = dir.path / "no-such-folder" / "news.db";
  auto message = open_error(missing);
  INFO(message);
  CHECK(message.find("its folder " + (dir.path / "no-such-folder").string() + " does not exist") !=
        std::string::npos);
  std::filesystem::create_directories(dir.path / "a-folder.db");
  CHECK(open_error(dir.path / "a-folder.db").find("it is a folder, not a file") !=
        std::string::npos);
}

TEST_CASE("store: a newer schema version is refused with a clear message") {
  temp_dir dir;
  auto file = dir.path / "future.db";
  raw_sql(file, "PRAGMA user_version = 99");
  auto message = open_error(file);
  INFO(message);
  CHECK(message.find(file.string()) != std::string::npos);
  CHECK(message.find("schema version 99") != std::string::npos);
  CHECK(message.find("newer") != std::string::npos);
  CHECK(raw_sql(file, "PRAGMA user_version") == "99"); // left untouched
}

TEST_CASE("store: a database newsdesk did not create is refused") {
  temp_dir dir;
  auto file = dir.path / "other.db";
  raw_sql(file, "CREATE TABLE something_else (x)");
  auto message = open_error(file);
  INFO(message);
  CHECK(message.find(file.string()) != std::string::npos);
  CHECK(message.find("did not create") != std::string::npos);
}

TEST_CASE("store: a file that cannot be created gives an error naming it") {
  auto file = std::filesystem::path("/nonexistent-newsdesk-dir/sub/news.db");
  auto message = open_error(file);
  CHECK(message.find(file.string()) != std::string::npos);
}

TEST_CASE("store: calls from several threads at once are serialised and counted right") {
  temp_dir dir;
  auto owned = sqlite_store::open(dir.path / "threads.db");
  auto& store = *owned;
  constexpr int writers = 4, refreshes = 25, per_refresh = 20;
  std::atomic<std::size_t> added{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w)
    threads.emplace_back([&, w] {
      const auto site = "site" + std::to_string(w);
      for (int r = 0; r < refreshes; ++r) {
        std::vector<headline> hs;
        // Each refresh shows the previous refresh's second half again plus new links.
        for (int i = 0; i < per_refresh; ++i)
          hs.push_back({"t", "https://x/" + std::to_string(r * per_refresh / 2 + i), site});
        added += store.record_refresh(site, hs, at(1000 + r)).added.size();
        if (r % 5 == 0)
          store.record_failure(site, "transient", at(1000 + r));
      }
    });
  std::thread reader([&] {
    std::int64_t after = 0;
    std::size_t seen = 0;
    while (!done) {
      for (const auto& row : store.since(after, 50)) {
        CHECK(row.id > after);
        after = row.id;
        ++seen;
      }
      store.current("site0");
      store.sites();
    }
    seen += store.since(after, store_limits::max_since_rows).size();
    CHECK(seen == added.load());
  });
  for (auto& t : threads)
    t.join();
  done = true;
  reader.join();

  const std::size_t expected = writers * (per_refresh + (refreshes - 1) * per_refresh / 2);
  CHECK(added.load() == expected);
  CHECK(store.since(0, store_limits::max_since_rows).size() == expected);
  CHECK(static_cast<std::size_t>(store.last_id()) == expected);
  for (int w = 0; w < writers; ++w)
    CHECK(store.current("site" + std::to_string(w)).size() == per_refresh);
}

TEST_CASE("store: a headline's published time and first look are kept (issue 28)") {
  for_each_backend([](headline_store& store) {
    auto first = page({{"Dated", "https://x/a"}, {"Undated", "https://x/b"}});
    first[0].published_ms = 1'447'751'520'000;
    auto added = store.record_refresh("cnn", first, at(1000)).added;
    REQUIRE(added.size() == 2);
    CHECK(added[0].published_ms == 1'447'751'520'000);
    CHECK_FALSE(added[1].published_ms);
    CHECK(added[0].first_look); // the site's first successful refresh found them
    CHECK(added[1].first_look);
    auto later = page({{"Dated", "https://x/a"}, {"Later", "https://x/c"}});
    later[1].published_ms = 1'447'751'580'000;
    auto again = store.record_refresh("cnn", later, at(2000));
    REQUIRE(again.added.size() == 1);
    CHECK_FALSE(again.added[0].first_look);
    CHECK(again.added[0].published_ms == 1'447'751'580'000);
    auto current = store.current("cnn");
    REQUIRE(current.size() == 2);
    CHECK(current[0].published_ms == 1'447'751'520'000);
    CHECK(current[0].first_look);
    CHECK(current[1].published_ms == 1'447'751'580'000);
    CHECK_FALSE(current[1].first_look);
    CHECK(store.since(0, 10).size() == 3);
    CHECK(store.since(0, 10)[0].published_ms == 1'447'751'520'000);
  });
}

TEST_CASE("store: published times survive reopening the file") {
  temp_dir dir;
  auto file = dir.path / "news.db";
  {
    auto owned = sqlite_store::open(file);
    auto found = page({{"Dated", "https://x/a"}, {"Undated", "https://x/b"}});
    found[0].published_ms = 1'447'751'520'000;
    owned->record_refresh("cnn", found, at(1000));
  }
  auto owned = sqlite_store::open(file);
  auto current = owned->current("cnn");
  REQUIRE(current.size() == 2);
  CHECK(current[0].published_ms == 1'447'751'520'000);
  CHECK_FALSE(current[1].published_ms);
  CHECK(current[0].first_look);
}

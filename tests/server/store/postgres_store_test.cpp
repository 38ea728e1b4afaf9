// What only the shared store does: migrations under a lock, leases, the event log in commit
// order, notifications, and a database that goes away and comes back. A real PostgreSQL,
// started by the test (tests/support/postgres_cluster.hpp).
#include "server/store/postgres_store.hpp"

#include "tests/support/postgres_cluster.hpp"

#include <doctest/doctest.h>
#include <libpq-fe.h>
#include <poll.h>

#include <atomic>
#include <memory>
#include <set>
#include <thread>
#include <vector>

using namespace newsdesk::server;
using namespace std::chrono_literals;
using newsdesk::scrapers::headline;
using newsdesk::testing::postgres_cluster;

namespace {

std::vector<headline> page(std::initializer_list<std::pair<const char*, const char*>> items) {
  std::vector<headline> out;
  for (auto [title, url] : items)
    out.push_back({title, url, "ignored"});
  return out;
}

refresh_record at(std::int64_t now_ms, std::string owner = {},
                  std::chrono::milliseconds due_again_in = {}) {
  return {now_ms, 0, std::move(owner), due_again_in};
}

// A scheduled claim unless `manual`.
claim_result claim(postgres_store& store, const char* site, const char* owner,
                   std::chrono::milliseconds lease, bool manual = false,
                   std::chrono::milliseconds manual_min_interval = {}) {
  return store.claim(site, owner, lease, manual, manual_min_interval);
}

std::string database_of(const std::string& url) {
  return url.substr(url.rfind('/') + 1);
}

} // namespace

TEST_CASE("postgres store: instances opening an empty database at once both migrate it safely") {
  auto& pg = postgres_cluster::shared();
  const auto url = pg.fresh_database();
  std::vector<std::unique_ptr<postgres_store>> stores(4);
  std::vector<std::string> errors(4);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < stores.size(); ++i)
    threads.emplace_back([&, i] {
      try {
        stores[i] = postgres_store::open(url);
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  for (auto& t : threads)
    t.join();
  for (std::size_t i = 0; i < stores.size(); ++i) {
    INFO(errors[i]);
    REQUIRE(stores[i]);
    CHECK(stores[i]->epoch() == stores[0]->epoch()); // one database, one epoch
  }
  CHECK(pg.exec(database_of(url), "SELECT version FROM newsdesk_schema") ==
        std::to_string(postgres_store::schema_version));
  CHECK(pg.exec(database_of(url), "SELECT count(*) FROM newsdesk_schema") == "1");
}

TEST_CASE("postgres store: the epoch names the database; a newer schema is refused") {
  auto& pg = postgres_cluster::shared();
  const auto url = pg.fresh_database();
  std::string epoch;
  {
    auto store = postgres_store::open(url);
    epoch = store->epoch();
    CHECK(epoch.size() == 32);
  }
  CHECK(postgres_store::open(url)->epoch() == epoch);
  CHECK(postgres_store::open(pg.fresh_database())->epoch() != epoch);

  pg.exec(database_of(url), "UPDATE newsdesk_schema SET version = 99");
  try {
    postgres_store::open(url);
    FAIL("a newer schema was accepted");
  } catch (const store_error& e) {
    CHECK(std::string(e.what()).find("schema version 99") != std::string::npos);
  }
}

TEST_CASE("postgres store: messages name the database, never the password") {
  CHECK(without_password("postgresql://user:secret@db:5432/news") ==
        "postgresql://user@db:5432/news");
  CHECK(without_password("postgres://db/news?password=secret&sslmode=require") ==
        "postgres://db/news?sslmode=require");
  CHECK(without_password("postgresql://db/news") == "postgresql://db/news");
  try {
    postgres_store::open("postgresql://nobody:secret@127.0.0.1:1/none");
    FAIL("connected to nothing");
  } catch (const store_error& e) {
    std::string message = e.what();
    CHECK(message.find("postgresql://nobody@127.0.0.1:1/none") != std::string::npos);
    CHECK(message.find("secret") == std::string::npos);
  }
}

TEST_CASE("postgres store: a claim is exclusive until its lease ends or is released") {
  auto store = postgres_store::open(postgres_cluster::shared().fresh_database());
  // A lease holds while its holder beats (cluster_store): these holders all do.
  for (const auto* owner : {"one", "two", "three"})
    store->heartbeat(owner, 60s);
  // A site never scheduled is due at once.
  CHECK(claim(*store, "a", "one", 400ms).status == claim_status::claimed);
  auto other = claim(*store, "a", "two", 400ms);
  CHECK(other.status == claim_status::leased);
  CHECK(other.retry_in > 0ms);
  CHECK(other.retry_in <= 400ms);

  CHECK(store->renew("a", "one", 400ms));
  CHECK_FALSE(store->renew("a", "two", 400ms));
  std::this_thread::sleep_for(500ms); // the lease runs out: anyone may take the site
  CHECK(claim(*store, "a", "two", 400ms).status == claim_status::claimed);
  CHECK_FALSE(store->renew("a", "one", 400ms));

  store->release("a", "two");
  CHECK(claim(*store, "a", "three", 400ms).status == claim_status::claimed);
}

TEST_CASE("postgres store: the lease of a holder whose heartbeat ran out is taken before it ends") {
  auto store = postgres_store::open(postgres_cluster::shared().fresh_database());
  store->heartbeat("gone", 200ms);
  store->heartbeat("alive", 60s);
  CHECK(claim(*store, "a", "gone", 60s).status == claim_status::claimed);
  CHECK(claim(*store, "a", "alive", 60s).status == claim_status::leased);
  std::this_thread::sleep_for(300ms); // its heartbeat runs out; its lease has a minute left
  CHECK(store->release_dead_leases() == std::vector<std::string>{"a"});
  CHECK(claim(*store, "a", "alive", 60s).status == claim_status::claimed);
  CHECK_FALSE(store->renew("a", "gone", 60s));
}

TEST_CASE("postgres store: a write under a lease ends it and sets when the site is due again") {
  auto store = postgres_store::open(postgres_cluster::shared().fresh_database());
  REQUIRE(claim(*store, "a", "one", 10s).status == claim_status::claimed);
  store->record_refresh("a", page({{"A", "https://x/a"}}), at(1000, "one", 600ms));
  auto again = claim(*store, "a", "two", 10s);
  CHECK(again.status == claim_status::not_due);
  CHECK(again.retry_in > 300ms);
  CHECK(again.retry_in <= 600ms);
  std::this_thread::sleep_for(again.retry_in + 50ms);
  CHECK(claim(*store, "a", "two", 10s).status == claim_status::claimed);
}

TEST_CASE("postgres store: a stale owner's write is refused and changes nothing") {
  auto store = postgres_store::open(postgres_cluster::shared().fresh_database());
  REQUIRE(claim(*store, "a", "stale", 200ms).status == claim_status::claimed);
  std::this_thread::sleep_for(300ms);
  REQUIRE(claim(*store, "a", "fresh", 10s).status == claim_status::claimed);
  const auto events = store->last_event_seq();
  CHECK_THROWS_AS(store->record_refresh("a", page({{"Late", "https://x/late"}}), at(1, "stale")),
                  lease_lost);
  CHECK_THROWS_AS(store->record_failure("a", "late", at(1, "stale")), lease_lost);
  CHECK(store->since(0, 10).empty());
  CHECK(store->last_event_seq() == events);
  // The owner's write goes through.
  CHECK(
      store->record_refresh("a", page({{"On time", "https://x/1"}}), at(2, "fresh")).added.size() ==
      1);
}

TEST_CASE("postgres store: manual claims make a site due now, at most once per interval") {
  auto store = postgres_store::open(postgres_cluster::shared().fresh_database());
  REQUIRE(claim(*store, "a", "one", 10s).status == claim_status::claimed);
  store->record_refresh("a", page({{"A", "https://x/a"}}), at(1, "one", 1h));
  CHECK(claim(*store, "a", "one", 10s).status == claim_status::not_due);

  CHECK(claim(*store, "a", "two", 10s, true, 500ms).status == claim_status::claimed);
  store->record_refresh("a", page({{"A", "https://x/a"}}), at(2, "two", 1h));
  auto limited = claim(*store, "a", "two", 10s, true, 500ms);
  CHECK(limited.status == claim_status::rate_limited);
  CHECK(limited.retry_in > 0ms);
  CHECK(limited.retry_in <= 500ms);
  std::this_thread::sleep_for(limited.retry_in + 50ms);
  CHECK(claim(*store, "a", "two", 10s, true, 500ms).status == claim_status::claimed);
}

TEST_CASE("postgres store: a claimer past its share leaves a due site to a live instance with "
          "fewer, for share_wait at most") {
  auto store = postgres_store::open(postgres_cluster::shared().fresh_database());
  const auto rendered = [&](const char* site, const char* owner) {
    // Due again at once, so the next claim is about shares only.
    store->record_refresh(site, page({{"A", "https://x/a"}}), at(1, owner, 0ms));
  };
  store->heartbeat("one", 10s);
  store->heartbeat("two", 10s);
  REQUIRE(claim(*store, "a", "one", 10s).status == claim_status::claimed);
  rendered("a", "one");
  // Taking b too would give one both sites while two has none.
  auto deferred = claim(*store, "b", "one", 10s);
  CHECK(deferred.status == claim_status::deferred);
  CHECK(deferred.retry_in > 0ms);
  CHECK(deferred.retry_in <= cluster_store::share_wait);
  CHECK(claim(*store, "b", "two", 10s).status == claim_status::claimed);
  rendered("b", "two");
  // At their shares, each takes its own site at once.
  CHECK(claim(*store, "a", "one", 10s).status == claim_status::claimed);
  rendered("a", "one");
  CHECK(claim(*store, "b", "two", 10s).status == claim_status::claimed);
  rendered("b", "two");

  // A manual claim is never deferred.
  CHECK(claim(*store, "b", "one", 10s, true, 0ms).status == claim_status::claimed);
  rendered("b", "one");
  // Past share_wait anyone takes a due site, so a share never holds a render up for longer.
  auto waiting = claim(*store, "a", "one", 10s);
  REQUIRE(waiting.status == claim_status::deferred);
  std::this_thread::sleep_for(waiting.retry_in + 50ms);
  CHECK(claim(*store, "a", "one", 10s).status == claim_status::claimed);
  rendered("a", "one");
  // An instance that left counts no more: one, alone, takes every site at once.
  REQUIRE(claim(*store, "b", "one", 10s, true, 0ms).status == claim_status::claimed);
  rendered("b", "one");
  REQUIRE(claim(*store, "b", "one", 10s).status == claim_status::deferred);
  store->leave("two");
  CHECK(claim(*store, "b", "one", 10s).status == claim_status::claimed);
}

TEST_CASE("postgres store: one instance prunes per period") {
  auto store = postgres_store::open(postgres_cluster::shared().fresh_database());
  CHECK(store->claim_prune("one", 400ms));
  CHECK_FALSE(store->claim_prune("two", 400ms));
  CHECK_FALSE(store->claim_prune("one", 400ms));
  std::this_thread::sleep_for(500ms);
  CHECK(store->claim_prune("two", 400ms));
}

TEST_CASE("postgres store: every write appends one event, in order, and notifies its seq") {
  auto& pg = postgres_cluster::shared();
  const auto url = pg.fresh_database();
  auto store = postgres_store::open(url);
  std::unique_ptr<PGconn, void (*)(PGconn*)> listen(PQconnectdb(url.c_str()), PQfinish);
  REQUIRE(PQstatus(listen.get()) == CONNECTION_OK);
  PQclear(PQexec(listen.get(), "LISTEN newsdesk_events"));

  CHECK(store->last_event_seq() == 0);
  store->record_refresh("a", page({{"A", "https://x/a"}}), at(1));
  store->record_failure("b", "down", at(2));
  store->record_refresh("a", page({{"A", "https://x/a"}}), at(3)); // nothing new: still an event
  auto events = store->events_after(0, 10);
  REQUIRE(events.size() == 3);
  CHECK(events[0] == store_event{1, "a"});
  CHECK(events[1] == store_event{2, "b"});
  CHECK(events[2] == store_event{3, "a"});
  CHECK(store->events_after(1, 1) == std::vector<store_event>{{2, "b"}});
  CHECK(store->last_event_seq() == 3);

  std::vector<std::string> payloads;
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (payloads.size() < 3 && std::chrono::steady_clock::now() < deadline) {
    pollfd p{PQsocket(listen.get()), POLLIN, 0};
    ::poll(&p, 1, 100);
    PQconsumeInput(listen.get());
    while (PGnotify* n = PQnotifies(listen.get())) {
      payloads.push_back(n->extra);
      PQfreemem(n);
    }
  }
  CHECK(payloads == std::vector<std::string>{"1", "2", "3"});
}

TEST_CASE("postgres store: ids follow commit order, so a polling reader never skips a row") {
  auto store = postgres_store::open(postgres_cluster::shared().fresh_database());
  constexpr int writers = 4, refreshes = 20, per_refresh = 10;
  std::atomic<std::size_t> added{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w)
    threads.emplace_back([&, w] {
      const auto site = "site" + std::to_string(w);
      for (int r = 0; r < refreshes; ++r) {
        std::vector<headline> hs;
        for (int i = 0; i < per_refresh; ++i)
          hs.push_back({"t", "https://x/" + std::to_string(r) + "/" + std::to_string(i), site});
        added += store->record_refresh(site, hs, at(1000 + r)).added.size();
      }
    });
  std::multiset<std::int64_t> seen;
  std::int64_t events_seen = 0;
  std::size_t events = 0;
  std::thread reader([&] {
    std::int64_t after = 0;
    auto poll_once = [&] {
      for (const auto& row : store->since(after, 7)) {
        CHECK(row.id == after + 1); // no gaps: a gap now would be a row committed later
        after = row.id;
        seen.insert(row.id);
      }
      for (const auto& e : store->events_after(events_seen, 3)) {
        CHECK(e.seq == events_seen + 1);
        events_seen = e.seq;
        ++events;
      }
    };
    while (!done)
      poll_once();
    for (int i = 0; i < 1000 && (seen.size() < added || events < writers * refreshes); ++i)
      poll_once();
  });
  for (auto& t : threads)
    t.join();
  done = true;
  reader.join();
  CHECK(added.load() == writers * refreshes * per_refresh);
  CHECK(seen.size() == added.load());
  CHECK(std::set<std::int64_t>(seen.begin(), seen.end()).size() == seen.size());
  CHECK(events == writers * refreshes);
  CHECK(static_cast<std::size_t>(store->last_id()) == added.load());
}

TEST_CASE("postgres store: pruning records how far it deleted") {
  auto store = postgres_store::open(postgres_cluster::shared().fresh_database());
  store->record_refresh("s", page({{"Old", "https://x/old"}, {"Kept", "https://x/kept"}}),
                        at(1000));
  store->record_refresh("s", page({{"Kept", "https://x/kept"}}), at(5000));
  CHECK(store->pruned_through() == 0);
  CHECK(store->prune(2000) == 1);
  CHECK(store->pruned_through() == 1); // "Old" had id 1
}

TEST_CASE("postgres store: with the database down calls fail with a clear error, and work again "
          "when it is back") {
  postgres_cluster pg; // its own: this test stops it
  auto store = postgres_store::open(pg.fresh_database());
  store->record_refresh("a", page({{"A", "https://x/a"}}), at(1));
  pg.stop();
  try {
    store->current("a");
    FAIL("a query worked with the database down");
  } catch (const store_error& e) {
    CHECK(std::string(e.what()).find("127.0.0.1:" + std::to_string(pg.port())) !=
          std::string::npos);
  }
  CHECK_THROWS_AS(store->record_refresh("a", page({{"B", "https://x/b"}}), at(2)), store_error);
  CHECK_THROWS_AS(claim(*store, "a", "one", 1s), store_error);
  pg.start();
  CHECK(store->current("a").size() == 1); // committed before the outage: kept
  CHECK(store->record_refresh("a", page({{"B", "https://x/b"}}), at(3)).added.size() == 1);
}

TEST_CASE("postgres store: out of slots, the pool works on with the connections it has and hands "
          "one to the listener that was refused") {
  auto& pg = postgres_cluster::shared();
  const auto database = database_of(pg.fresh_database());
  const auto role = "yield_" + database;
  pg.exec(database, "CREATE ROLE " + role + " LOGIN CONNECTION LIMIT 2");
  pg.exec(database, "ALTER DATABASE " + database + " OWNER TO " + role);
  const auto url =
      "postgresql://" + role + "@127.0.0.1:" + std::to_string(pg.port()) + "/" + database;
  auto store = postgres_store::open(url, {.max_connections = 3}); // a pool of 2
  const auto connections = [&] {
    return pg.exec(database,
                   "SELECT count(*) FROM pg_stat_activity WHERE usename = '" + role + "'");
  };
  // Claims from two threads at once, none failing whatever the pool has.
  const auto claims_side_by_side = [&] {
    std::atomic<int> failed{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t)
      threads.emplace_back([&, t] {
        for (int i = 0; i < 20; ++i)
          try {
            claim(*store, t ? "a" : "b", "one", 10s);
          } catch (const store_error&) {
            ++failed;
          }
      });
    for (auto& t : threads)
      t.join();
    return failed.load();
  };
  for (int round = 0; round < 50 && connections() != "2"; ++round)
    REQUIRE(claims_side_by_side() == 0);
  REQUIRE(connections() == "2"); // the pool holds both of the role's slots

  // The listener was refused: the pool closes an idle connection, and its slot is free for it.
  store->yield_connection();
  for (int i = 0; i < 100 && connections() != "1"; ++i)
    std::this_thread::sleep_for(20ms);
  REQUIRE(connections() == "1");
  std::unique_ptr<PGconn, void (*)(PGconn*)> listener(PQconnectdb(url.c_str()), PQfinish);
  CHECK_MESSAGE(PQstatus(listener.get()) == CONNECTION_OK, PQerrorMessage(listener.get()));
  // The pool makes do with the one it kept: no call fails for want of a slot.
  CHECK(claims_side_by_side() == 0);
  CHECK(connections() == "2");
}

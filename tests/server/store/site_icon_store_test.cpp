// Sites' icons in both stores: kept with their bytes (NUL bytes and all), a failed attempt keeps
// the icon before it, and a reopened store still has them.
#include "server/store/postgres_store.hpp"
#include "server/store/sqlite_store.hpp"

#include "tests/support/harness.hpp"
#include "tests/support/postgres_cluster.hpp"

#include <doctest/doctest.h>

using namespace newsdesk::server;
using newsdesk::testing::postgres_cluster;

namespace {

// A PNG's signature with NUL bytes and high bytes after it: what text columns would mangle.
const std::string png_bytes = std::string("\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\xff\xfe", 18);

void check_icons(headline_store& store) {
  CHECK_FALSE(store.icon("cnn"));
  CHECK(store.icons().empty());

  store.record_icon({"cnn", "image/png", png_bytes, "\"e1\"", 1000, ""});
  auto icon = store.icon("cnn");
  REQUIRE(icon);
  CHECK(icon->body == png_bytes);
  CHECK(icon->content_type == "image/png");
  CHECK(icon->etag == "\"e1\"");
  CHECK(icon->checked_ms == 1000);
  CHECK(icon->error.empty());

  // A failed attempt a day later: the time and the error change, the icon stays.
  store.record_icon({"cnn", "", "", "", 2000, "it is an HTML page, not an image"});
  icon = store.icon("cnn");
  REQUIRE(icon);
  CHECK(icon->body == png_bytes);
  CHECK(icon->checked_ms == 2000);
  CHECK(icon->error == "it is an HTML page, not an image");

  // A site whose only attempt failed: tried, no image.
  store.record_icon({"bbc", "", "", "", 3000, "the server answered HTTP 404"});
  auto all = store.icons();
  REQUIRE(all.size() == 2);
  CHECK(all[0].site == "bbc");
  CHECK_FALSE(all[0].has_image());
  CHECK(all[0].checked_ms == 3000);
  CHECK(all[1].site == "cnn");
  CHECK(all[1].has_image());
  CHECK(all[1].etag == "\"e1\"");

  CHECK_THROWS_AS(store.record_icon({"", "image/png", png_bytes, "\"x\"", 1, ""}), store_error);
}

} // namespace

TEST_CASE("site icons: the SQLite store keeps them, across a reopen") {
  newsdesk::testing::temp_dir dir;
  const auto file = dir.path / "store.db";
  {
    auto store = sqlite_store::open(file);
    check_icons(*store);
  }
  auto reopened = sqlite_store::open(file);
  auto icon = reopened->icon("cnn");
  REQUIRE(icon);
  CHECK(icon->body == png_bytes);
}

TEST_CASE("site icons: the PostgreSQL store keeps them") {
  auto& pg = postgres_cluster::shared();
  const auto url = pg.fresh_database();
  {
    auto store = postgres_store::open(url);
    check_icons(*store);
  }
  auto other = postgres_store::open(url); // another instance reads what the first wrote
  auto icon = other->icon("cnn");
  REQUIRE(icon);
  CHECK(icon->body == png_bytes);
}

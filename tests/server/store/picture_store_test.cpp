// Pictures in both stores: a headline's image URL follows its source; a picture's record keeps
// its bytes (NUL bytes and all), a refused attempt is kept without a body, and a site's bodies
// stay within its bytes, the oldest losing theirs first while their records stay.
#include "tests/server/store/store_test_support.hpp"

#include <algorithm>

using namespace newsdesk::server;
using namespace newsdesk::testing;

namespace {

// A WebP's first bytes with NUL and high bytes in them: what a text column would mangle.
std::string webp_body(std::size_t size, char fill) {
  std::string body("RIFF\0\0\0\0WEBPVP8 \xff\xfe", 18);
  body.resize(std::max(size, body.size()), fill);
  return body;
}

stored_picture shown(const std::string& source, const std::string& site, const std::string& name,
                     std::size_t bytes, std::int64_t tried_ms) {
  return {source, site, name, "image/webp", webp_body(bytes, 'x'), 480, 270, tried_ms, ""};
}

const stored_picture* find_source(const std::vector<stored_picture>& all,
                                  const std::string& source) {
  auto at = std::find_if(all.begin(), all.end(),
                         [&](const stored_picture& p) { return p.source == source; });
  return at == all.end() ? nullptr : &*at;
}

} // namespace

TEST_CASE("pictures: a headline's image URL is stored, follows its source, and reads back") {
  for_each_backend([](headline_store& store) {
    std::vector<newsdesk::scrapers::headline> found = {
        {"Bridge opens", "https://a/bridge", "ignored"},
        {"Rain ahead", "https://a/rain", "ignored"}};
    found[0].image = "https://a/img/bridge.jpg";
    auto first = store.record_refresh("a", found, at(1000));
    REQUIRE(first.added.size() == 2);
    CHECK(first.added[0].image == "https://a/img/bridge.jpg");
    CHECK(first.added[1].image.empty());
    found[0].image = "https://a/img/bridge-night.jpg";
    found[1].image = "https://a/img/rain.png";
    auto second = store.record_refresh("a", found, at(2000));
    CHECK(second.added.empty());
    REQUIRE(second.current.size() == 2);
    CHECK(second.current[0].image == "https://a/img/bridge-night.jpg");
    const auto rows = store.current("a");
    REQUIRE(rows.size() == 2);
    CHECK(rows[0].image == "https://a/img/bridge-night.jpg");
    CHECK(rows[1].image == "https://a/img/rain.png");
    CHECK(store.since(0, 10).at(1).image == "https://a/img/rain.png");
  });
}

TEST_CASE("pictures: a record keeps its bytes, a refusal has none, and each site stays within "
          "its bytes, the oldest dropped first") {
  for_each_backend([](headline_store& store) {
    CHECK(store.pictures().empty());
    CHECK_FALSE(store.picture("0a.webp"));
    CHECK_FALSE(store.picture(""));

    // One picture: read back by the name it is served as, bytes intact.
    CHECK(store.record_picture(shown("https://a/1.jpg", "a", "0a.webp", 100, 1000), 1000).empty());
    auto one = store.picture("0a.webp");
    REQUIRE(one);
    CHECK(one->source == "https://a/1.jpg");
    CHECK(one->site == "a");
    CHECK(one->content_type == "image/webp");
    CHECK(one->body == webp_body(100, 'x'));
    CHECK(one->width == 480);
    CHECK(one->height == 270);
    CHECK(one->tried_ms == 1000);
    CHECK(one->error.empty());

    // A refused attempt: a record without a body, so it is not fetched again; nothing served.
    CHECK(store
              .record_picture({"https://a/page.jpg", "a", "", "", "", 0, 0, 1500,
                               "not a JPEG, PNG, GIF or WebP image: HTML"},
                              1000)
              .empty());
    auto all = store.pictures();
    REQUIRE(all.size() == 2);
    const auto* refused = find_source(all, "https://a/page.jpg");
    REQUIRE(refused);
    CHECK_FALSE(refused->has_image());
    CHECK(refused->error == "not a JPEG, PNG, GIF or WebP image: HTML");
    CHECK(refused->body.empty()); // pictures() never carries bodies
    CHECK(find_source(all, "https://a/1.jpg")->has_image());

    // Site a at 1,000 bytes: a second picture of 600 makes 700 (kept), a third of 400 makes
    // 1,100, so the oldest (0a, 100 bytes) loses its body and 1,000 remain.
    CHECK(store.record_picture(shown("https://a/2.jpg", "a", "0b.webp", 600, 2000), 1000).empty());
    const auto dropped =
        store.record_picture(shown("https://a/3.jpg", "a", "0c.webp", 400, 3000), 1000);
    CHECK(dropped == std::vector<std::string>{"https://a/1.jpg"});
    CHECK_FALSE(store.picture("0a.webp"));
    REQUIRE(store.picture("0b.webp"));
    REQUIRE(store.picture("0c.webp"));
    all = store.pictures();
    const auto* first = find_source(all, "https://a/1.jpg");
    REQUIRE(first);
    CHECK_FALSE(first->has_image());
    CHECK(first->error.find("over 1000 bytes") != std::string::npos);

    // Another site's bytes are its own: b's picture drops nothing of a's.
    CHECK(store.record_picture(shown("https://b/1.jpg", "b", "0d.webp", 900, 4000), 1000).empty());
    CHECK(store.picture("0b.webp"));
    CHECK(store.pictures().size() == 5);

    // The same source again (fetched anew): one record, the newest attempt's.
    CHECK(store.record_picture(shown("https://b/1.jpg", "b", "0e.webp", 50, 5000), 1000).empty());
    CHECK_FALSE(store.picture("0d.webp"));
    REQUIRE(store.picture("0e.webp"));
    CHECK(store.picture("0e.webp")->body.size() == 50);
    CHECK(store.pictures().size() == 5);

    CHECK_THROWS_AS(store.record_picture(shown("https://c/1.jpg", "", "0f.webp", 10, 6000), 1000),
                    store_error);
  });
}

#include "scrapers/registry.hpp"

#include <doctest/doctest.h>

#include <memory>
#include <stdexcept>
#include <string>

using namespace newsdesk::scrapers;

namespace {

class fake_scraper final : public scraper {
 public:
  explicit fake_scraper(std::string name) { info_.name = std::move(name); }
  const site_info& site() const override { return info_; }
  std::vector<headline> extract(const dom::document&, std::string_view) const override {
    return {};
  }

 private:
  site_info info_;
};

std::unique_ptr<scraper> fake(std::string name) {
  return std::make_unique<fake_scraper>(std::move(name));
}

} // namespace

TEST_CASE("site names are one or more of [a-z0-9_-]") {
  CHECK(is_valid_site_name("cnn"));
  CHECK(is_valid_site_name("al-jazeera_2"));
  CHECK_FALSE(is_valid_site_name(""));
  CHECK_FALSE(is_valid_site_name("CNN"));
  CHECK_FALSE(is_valid_site_name("bbc news"));
  CHECK_FALSE(is_valid_site_name("bbc/news"));
  CHECK_FALSE(is_valid_site_name("caf\xc3\xa9"));
}

TEST_CASE("a registry finds scrapers by name and returns null for unknown names") {
  registry r;
  r.add(fake("b"));
  r.add(fake("a"));
  REQUIRE(r.find("a") != nullptr);
  CHECK(r.find("a")->site().name == "a");
  CHECK(r.find("c") == nullptr);
  CHECK(r.size() == 2);
}

TEST_CASE("a registry lists its scrapers sorted by name") {
  registry r;
  r.add(fake("zeta"));
  r.add(fake("alpha"));
  r.add(fake("mid"));
  auto all = r.all();
  REQUIRE(all.size() == 3);
  CHECK(all[0]->site().name == "alpha");
  CHECK(all[1]->site().name == "mid");
  CHECK(all[2]->site().name == "zeta");
}

TEST_CASE("a duplicate name is rejected with a message naming it, keeping the first") {
  registry r;
  r.add(fake("cnn"));
  CHECK_THROWS_WITH_AS(r.add(fake("cnn")), doctest::Contains("\"cnn\""), std::invalid_argument);
  CHECK(r.size() == 1);
}

TEST_CASE("invalid names and null scrapers are rejected") {
  registry r;
  CHECK_THROWS_WITH_AS(r.add(fake("Bad Name")), doctest::Contains("\"Bad Name\""),
                       std::invalid_argument);
  CHECK_THROWS_AS(r.add(fake("")), std::invalid_argument);
  CHECK_THROWS_AS(r.add(nullptr), std::invalid_argument);
  CHECK(r.size() == 0);
}

TEST_CASE("the built-in scrapers cnn and aljazeera are registered with their site info") {
  registry r;
  register_builtin_scrapers(r);
  const scraper* cnn = r.find("cnn");
  const scraper* aljazeera = r.find("aljazeera");
  REQUIRE(cnn != nullptr);
  REQUIRE(aljazeera != nullptr);
  CHECK(cnn->site().display_name == "CNN");
  CHECK(cnn->site().url == "https://edition.cnn.com/");
  CHECK(aljazeera->site().display_name == "Al Jazeera");
  CHECK(aljazeera->site().url == "https://www.aljazeera.com/");
  CHECK(cnn->site().colour != aljazeera->site().colour);
  for (const scraper* s : r.all()) {
    CAPTURE(s->site().name);
    CHECK(is_valid_site_name(s->site().name));
    CHECK_FALSE(s->site().display_name.empty());
    CHECK(s->site().colour.starts_with("#"));
  }
}

TEST_CASE("registering the built-ins twice fails on the duplicate") {
  registry r;
  register_builtin_scrapers(r);
  CHECK_THROWS_AS(register_builtin_scrapers(r), std::invalid_argument);
}

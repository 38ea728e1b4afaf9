#include "server/news/news_query.hpp"

#include <doctest/doctest.h>

#include <string>
#include <variant>
#include <vector>

using namespace newsdesk::server;

namespace {
const std::vector<site_report> sites{{"bbc", "BBC"}, {"cnn", "CNN"}};
} // namespace

TEST_CASE("chips=all asks for every site's chip and filters no headline") {
  auto parsed = parse_news_query("chips=all", sites);
  REQUIRE(std::holds_alternative<news_query>(parsed));
  auto query = std::get<news_query>(parsed);
  CHECK(query.all_chips);
  // A view of its own, not the one built ahead for everybody, but of every headline.
  CHECK_FALSE(query.empty());
  CHECK_FALSE(query.filters_headlines());
  CHECK_FALSE(std::get<news_query>(parse_news_query("", sites)).all_chips);

  auto with_site = std::get<news_query>(parse_news_query("site=cnn&chips=all", sites));
  CHECK(with_site.all_chips);
  CHECK(with_site.sites == std::vector<std::string>{"cnn"});

  news_snapshot snapshot;
  snapshot.sites = sites;
  snapshot.headlines = {{{"One", "https://bbc.test/1", "bbc"}, 1, 2},
                        {{"Two", "https://cnn.test/2", "cnn"}, 2, 1}};
  auto view = apply_query(snapshot, query);
  CHECK(view.sites.size() == 2);
  REQUIRE(view.headlines.size() == 2);
  CHECK(view.headlines[0].id == 1);
  CHECK(view.next.empty());
}

TEST_CASE("chips= other than all is refused, naming the parameter") {
  for (const char* bad : {"chips=", "chips", "chips=ALL", "chips=some", "chips=30"}) {
    auto refused = parse_news_query(bad, sites);
    REQUIRE_MESSAGE(std::holds_alternative<std::string>(refused), bad);
    CHECK(std::get<std::string>(refused) ==
          "chips: expected all (a chip for every site), or no chips= (the most active)");
  }
}

TEST_CASE("section= is the sites its section lists, shown as one view; a section no site is in, "
          "or one with site=, is refused") {
  std::vector<site_report> with_sections{{"bbc", "BBC"}, {"cnn", "CNN"}, {"ars", "Ars"}};
  with_sections[0].section = "World";
  with_sections[1].section = "World";
  with_sections[2].section = "Science & tech";
  auto world = std::get<news_query>(parse_news_query("section=World", with_sections));
  CHECK(world.section == "World");
  CHECK(world.sites == std::vector<std::string>{"bbc", "cnn"});
  CHECK(world.filters_headlines());
  CHECK_FALSE(world.one_site());
  auto tech = std::get<news_query>(parse_news_query("section=Science+%26+tech", with_sections));
  CHECK(tech.sites == std::vector<std::string>{"ars"});
  CHECK_FALSE(tech.one_site()); // a section of one site is still a section, newest first
  for (const char* bad : {"section=Sport", "section=World&site=ars", "section="}) {
    auto refused = parse_news_query(bad, with_sections);
    REQUIRE_MESSAGE(std::holds_alternative<std::string>(refused), bad);
    CHECK(std::get<std::string>(refused).rfind("section: ", 0) == 0);
  }
}

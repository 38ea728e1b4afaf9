#include "scrapers/registry.hpp"

#include "../test_files.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace newsdesk::scrapers;
using newsdesk::scrapers::testing::own_fixture;

namespace {

const scraper& aljazeera() {
  static const registry builtins = [] {
    registry r;
    register_builtin_scrapers(r);
    return r;
  }();
  return *builtins.find("aljazeera");
}

} // namespace

TEST_CASE("aljazeera: current gc__title cards give dated /news/ stories, once each") {
  auto got =
      aljazeera().parse(own_fixture("aljazeera-2024-home.html"), "https://www.aljazeera.com/");
  REQUIRE(got.size() == 5);
  headline lead{"Aid convoy reaches northern Gaza for first time in weeks",
                "https://www.aljazeera.com/news/2024/3/5/gaza-aid-convoy-reaches-north",
                "aljazeera",
                std::nullopt,
                "",
                "en"};
  lead.image = "https://www.aljazeera.com/wp-content/uploads/2024/03/aid.jpg"; // its card's
  CHECK(got[0] == lead);
  // An absolute href, kept with its trailing slash.
  CHECK(got[1] ==
        headline{"UN Security Council vote delayed again",
                 "https://www.aljazeera.com/news/2024/3/4/un-security-council-vote-delayed/",
                 "aljazeera", std::nullopt, "", "en"});
  // Nested spans inside the link are part of the title.
  CHECK(got[2] == headline{"Live updates: Israel’s war on Gaza, day 151",
                           "https://www.aljazeera.com/news/liveblog/2024/3/5/"
                           "live-israel-war-on-gaza-day-151",
                           "aljazeera", std::nullopt, "", "en"});
  // Escaped markup stays literal text; the padded href is trimmed.
  CHECK(got[3] ==
        headline{"<script>alert(1)</script> demo published",
                 "https://www.aljazeera.com/news/2024/2/29/security-researchers-publish-xss-demo",
                 "aljazeera", std::nullopt, "", "en"});
  CHECK(got[4].url == "http://aljazeera.com/news/2024/12/31/year-in-pictures");
}

TEST_CASE("aljazeera: older pages give /news/ links ending in .html") {
  auto got =
      aljazeera().parse(own_fixture("aljazeera-2017-home.html"), "http://www.aljazeera.com/");
  REQUIRE(got.size() == 3);
  headline lead{"Syria peace talks resume in Geneva",
                "http://www.aljazeera.com/news/2017/03/"
                "syria-peace-talks-resume-geneva-170305081522101.html",
                "aljazeera"};
  lead.image = "http://www.aljazeera.com/mritems/imagecache/mbdxxlarge/mritems/Images/2017/3/5/"
               "geneva.jpg"; // its card's picture
  CHECK(got[0] == lead);
  CHECK(got[1].title == "South Korea court rules on impeachment");
  CHECK(got[2].url == "http://www.aljazeera.com/news/middleeast/2017/03/"
                      "iraqi-forces-advance-west-mosul-170305110204567.html");
}

TEST_CASE("aljazeera: section, tag, other-site and script links are not headlines") {
  auto got = aljazeera().parse(
      R"html(<a href="/news/">News</a>
         <a href="/news/2024/3/5/">No slug</a>
         <a href="/news/24/3/5/short-year">Short year</a>
         <a href="/news/2024/3/5/a/b">Too deep</a>
         <a href="/features/2024/3/5/feature">Feature</a>
         <a href="https://www.aljazeera.com.evil.test/news/2024/3/5/x">Look-alike host</a>
         <a href="javascript:location='/news/2024/3/5/x'">Script</a>
         <a href="/news/2024/3/5/real-one?utm=x#top">Real one</a>)html",
      "https://www.aljazeera.com/");
  REQUIRE(got.size() == 1);
  CHECK(got[0].url == "https://www.aljazeera.com/news/2024/3/5/real-one?utm=x#top");
}

#include "scrapers/scraper.hpp"

#include "scrapers/dom.hpp"
#include "scrapers/headlines.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace newsdesk::scrapers;

namespace {

// Every link is a headline: enough to see what parse() hands to extract().
class every_link final : public scraper {
 public:
  const site_info& site() const override { return info_; }
  std::vector<headline> extract(const dom::document& page,
                                std::string_view page_url) const override {
    headline_collector c(info_.name, page_url, page);
    for (dom::node n : page.root().descendant_elements()) {
      if (n.has_tag("a") && n.attr("href")) {
        c.add(n.text(), *n.attr("href"));
      }
    }
    return c.take();
  }

 private:
  site_info info_{.name = "links",
                  .display_name = "Links",
                  .url = "https://links.test/",
                  .colour = "#000",
                  .wait_seconds = {},
                  .timeout_seconds = {},
                  .renderer = {}};
};

} // namespace

TEST_CASE("parse parses the bytes and extracts from the resulting document") {
  every_link s;
  auto got = s.parse("<ul><li><a href='/a'>Story A</a><li><a href=b>Story B</a></ul>",
                     "https://l.test/x/");
  REQUIRE(got.size() == 2);
  CHECK(got[0] == headline{"Story A", "https://l.test/a", "links"});
  CHECK(got[1] == headline{"Story B", "https://l.test/x/b", "links"});
}

TEST_CASE("a headline whose text is escaped markup comes out as that literal text") {
  every_link s;
  auto got =
      s.parse("<a href='/x'>&lt;script&gt;alert(1)&lt;/script&gt; demo</a>", "https://l.test/");
  REQUIRE(got.size() == 1);
  CHECK(got[0].title == "<script>alert(1)</script> demo");
}

TEST_CASE("parse tolerates any bytes") {
  every_link s;
  std::string junk;
  for (int i = 0; i < 256; ++i) {
    junk.push_back(static_cast<char>(i));
  }
  junk += "<a href='/ok'>\xff\xfe ok \xc3</a>";
  auto got = s.parse(junk, "https://l.test/");
  REQUIRE(got.size() == 1);
  CHECK(got[0].url == "https://l.test/ok");
  CHECK(s.parse("", "https://l.test/").empty());
}

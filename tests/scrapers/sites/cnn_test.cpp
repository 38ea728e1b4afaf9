#include "scrapers/registry.hpp"
#include "scrapers/titles.hpp"

#include "../test_files.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

using namespace newsdesk::scrapers;
using newsdesk::scrapers::testing::shared_page;

namespace {

const scraper& cnn() {
  static const registry builtins = [] {
    registry r;
    register_builtin_scrapers(r);
    return r;
  }();
  return *builtins.find("cnn");
}

bool has_url(const std::vector<headline>& list, const std::string& url) {
  return std::any_of(list.begin(), list.end(), [&](const headline& h) { return h.url == url; });
}

} // namespace

TEST_CASE("cnn: the 2015 edition page gives its 18 cd__headline-text headlines") {
  auto page = shared_page("cnn-2015-edition.html");
  if (!page) {
    MESSAGE("skipped: cnn-2015-edition.html not found in " << NEWSDESK_SHARED_PAGES);
    return;
  }
  auto got = cnn().parse(*page, "https://edition.cnn.com/");
  REQUIRE(got.size() == 18);
  CHECK(got[0] == headline{"PARIS ATTACKS: Everything we know so far",
                           "https://edition.cnn.com/2015/11/17/europe/paris-attacks-at-a-glance/"
                           "index.html",
                           "cnn"});
  // The kicker in its own <strong> is kept apart (issue 28).
  CHECK(got[3].title == "ISIS video warns of DC attack");
  CHECK(got[3].kicker == "NEW THREAT?");
  CHECK(got[3].url == "https://edition.cnn.com/videos/world/2015/11/16/"
                      "isis-new-video-paris-attack-washington-npw.cnn");
  CHECK(got[17].title == "To thwart ISIS, first consider history");
}

TEST_CASE("cnn: the 2025 rendered page gives 91 unique links, full headlines before labels") {
  auto page = shared_page("cnn-2025-home-rendered.html");
  if (!page) {
    MESSAGE("skipped: cnn-2025-home-rendered.html not found in " << NEWSDESK_SHARED_PAGES);
    return;
  }
  auto got = cnn().parse(*page, "https://www.cnn.com/");
  // 96 headline links: 5 repeat a URL (4 of them trending labels), leaving 91.
  REQUIRE(got.size() == 91);
  // The lead package's first card gives a summary; its title is the package's (issue 43: a
  // summary taken for the title kept it out of the story other sites told).
  CHECK(got[0].title == "Xi’s powerful card in fight against Trump’s trade war");
  for (const headline& h : got)
    CHECK_MESSAGE(!looks_like_summary(h.title), h.title);
  CHECK(got[0].url ==
        "https://www.cnn.com/2025/04/15/business/china-trumps-trade-war-rare-earth-intl-hnk/"
        "index.html");
  // A story listed both as a trending label and with its headline keeps the headline.
  auto popov = std::find_if(got.begin(), got.end(), [](const headline& h) {
    return h.url.find("ousted-russian-general") != std::string::npos;
  });
  REQUIRE(popov != got.end());
  CHECK(popov->title == "Ousted Russian general will return to duty - but with a role that is "
                        "‘effectively a death sentence,’ expert says");
  // Trending stories with no headline elsewhere come last, under their labels.
  CHECK(got[88] == headline{"Trump’s tariffs",
                            "https://www.cnn.com/politics/live-news/"
                            "trump-news-tariffs-immigration-04-15-25/index.html",
                            "cnn", std::nullopt, "", "en"});
  CHECK(got[89].title == "‘Historic’ WHO agreement");
  CHECK(got[90].title == "Pakistan and India heatwaves");
  CHECK(has_url(got, "https://www.cnn.com/2025/04/13/health/male-friendships-wellness/index.html"));
  // Absolute links: CNN's shortener and another CNN host.
  CHECK(has_url(got, "https://cnn.it/3ZYU7GX"));
  CHECK(has_url(got, "https://edition.cnn.com/interactive/2025/04/uk-innovation-hub/"));
  for (const headline& h : got) {
    CAPTURE(h.url);
    CHECK((h.url.starts_with("https://www.cnn.com/") || h.url.starts_with("https://cnn.it/") ||
           h.url.starts_with("https://edition.cnn.com/")));
    CHECK_FALSE(h.title.empty());
    CHECK(h.site == "cnn");
  }
}

TEST_CASE("cnn: the 2018 unrendered page has no headlines (they need JavaScript)") {
  auto page = shared_page("cnn-2018-raw-jsonly.html");
  if (!page) {
    MESSAGE("skipped: cnn-2018-raw-jsonly.html not found in " << NEWSDESK_SHARED_PAGES);
    return;
  }
  CHECK(cnn().parse(*page, "https://edition.cnn.com/").empty());
}

TEST_CASE("cnn: absolute cnn.com links count, other hosts and links without headline text not") {
  auto got = cnn().parse(
      R"html(<div class="container__item">
           <a class="container__link" href="https://edition.cnn.com/2025/01/02/world/a/index.html">
             <div class="container__text"><span class="container__headline-text">
               Absolute   link</span></div></a>
           <a class="container__link" href="https://www.example.com/2025/01/02/b/index.html">
             <span class="container__headline-text">Elsewhere</span></a>
           <a href="/2025/01/02/world/c/index.html">No headline element</a>
           <a href="javascript:void(0)"><span class="cd__headline-text">Script</span></a>
           <h3 class="cd__headline"><a href="/2025/01/02/world/d/index.html">
             <span class="cd__headline-text">Old <strong>markup</strong></span>
             <span class="cd__headline-icon">video</span></a></h3>
         </div>)html",
      "https://www.cnn.com/");
  REQUIRE(got.size() == 2);
  CHECK(got[0] ==
        headline{"Absolute link", "https://edition.cnn.com/2025/01/02/world/a/index.html", "cnn"});
  CHECK(got[1] ==
        headline{"Old markup", "https://www.cnn.com/2025/01/02/world/d/index.html", "cnn"});
}

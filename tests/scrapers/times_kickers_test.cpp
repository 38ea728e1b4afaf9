// Item 3 and 7 of issue 28: published times from feeds and pages, and kickers, ranks and bylines
// kept out of titles.
#include "scrapers/detect.hpp"
#include "scrapers/dom.hpp"
#include "scrapers/feed.hpp"
#include "scrapers/headlines.hpp"
#include "scrapers/registry.hpp"

#include "test_files.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <string>

using namespace newsdesk::scrapers;
using newsdesk::scrapers::testing::shared_page;

namespace {

constexpr std::int64_t nov_17_2015_0912 = 1'447'751'520'000; // 2015-11-17T09:12:00Z

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::vector<headline> collect(std::string_view html) {
  auto page = dom::document::parse(html);
  headline_collector c("t", "https://news.test/", page);
  for (dom::node a : page.root().descendant_elements())
    if (a.has_tag("a") && a.attr("href"))
      c.add_link(a, *a.attr("href"));
  return c.take();
}

} // namespace

TEST_CASE("dates: RFC 822 and RFC 3339 forms, and what is not a date") {
  CHECK(parse_date("Tue, 17 Nov 2015 09:12:00 GMT") == nov_17_2015_0912);
  CHECK(parse_date("17 Nov 2015 09:12 +0000") == nov_17_2015_0912);
  CHECK(parse_date("Tue, 17 Nov 2015 04:12:00 EST") == nov_17_2015_0912);
  CHECK(parse_date("Tue, 17 Nov 15 10:12:00 +0100") == nov_17_2015_0912);
  CHECK(parse_date("2015-11-17T09:12:00Z") == nov_17_2015_0912);
  CHECK(parse_date("2015-11-17T10:12:00.000+01:00") == nov_17_2015_0912);
  CHECK(parse_date("2015-11-17 09:12") == nov_17_2015_0912);
  CHECK(parse_date("2015-11-17") == nov_17_2015_0912 - (9 * 60 + 12) * 60'000);
  CHECK_FALSE(parse_date(""));
  CHECK_FALSE(parse_date("yesterday"));
  CHECK_FALSE(parse_date("2015-13-01T00:00:00Z"));
  CHECK_FALSE(parse_date("2015-02-30"));
  CHECK_FALSE(parse_date("Tue, 17 Nov 2015 25:12:00 GMT"));
  CHECK_FALSE(parse_date("Tue, 17 Foo 2015 09:12:00 GMT"));
  CHECK_FALSE(parse_date("2015-11-17T09:12:00 Mars"));
  // Plausible: not before 1990, not more than a day ahead.
  CHECK(plausible_date("2015-11-17T09:12:00Z", now_ms()) == nov_17_2015_0912);
  CHECK_FALSE(plausible_date("1970-01-01T00:00:00Z", now_ms()));
  CHECK_FALSE(plausible_date("1989-12-31T23:59:59Z", now_ms()));
  CHECK_FALSE(plausible_date("2999-01-01T00:00:00Z", now_ms()));
}

TEST_CASE("feeds: RSS pubDate, dc:date and Atom published/updated; bad dates are ignored") {
  auto rss = parse_feed(R"(<?xml version="1.0"?>
<rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/"><channel><title>T</title>
<item><title>Dated</title><link>https://f.test/a</link><pubDate>Tue, 17 Nov 2015 09:12:00 GMT</pubDate></item>
<item><title>Dublin Core</title><link>https://f.test/b</link><dc:date>2015-11-17T09:12:00Z</dc:date></item>
<item><title>Broken date</title><link>https://f.test/c</link><pubDate>sometime soon</pubDate></item>
<item><title>Far future</title><link>https://f.test/d</link><pubDate>Sat, 01 Jan 2450 00:00:00 GMT</pubDate></item>
<item><title>Ancient</title><link>https://f.test/e</link><pubDate>Thu, 01 Jan 1970 00:00:00 GMT</pubDate></item>
<item><title>Undated</title><link>https://f.test/f</link></item>
</channel></rss>)",
                        "https://f.test/rss", "f");
  REQUIRE(rss.headlines.size() == 6); // a bad date never costs the headline
  CHECK(rss.headlines[0].published_ms == nov_17_2015_0912);
  CHECK(rss.headlines[1].published_ms == nov_17_2015_0912);
  for (std::size_t i = 2; i < 6; ++i)
    CHECK_FALSE(rss.headlines[i].published_ms);

  auto atom = parse_feed(R"(<?xml version="1.0"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>A</title>
<entry><title>Published</title><link href="https://f.test/1"/><updated>2016-01-01T00:00:00Z</updated><published>2015-11-17T10:12:00+01:00</published></entry>
<entry><title>Updated only</title><link href="https://f.test/2"/><updated>2015-11-17T09:12:00Z</updated></entry>
<entry><title>Bad</title><link href="https://f.test/3"/><updated>2015-11-17T99:12:00Z</updated></entry>
</feed>)",
                         "https://f.test/atom", "f");
  REQUIRE(atom.headlines.size() == 3);
  CHECK(atom.headlines[0].published_ms == nov_17_2015_0912);
  CHECK(atom.headlines[1].published_ms == nov_17_2015_0912);
  CHECK_FALSE(atom.headlines[2].published_ms);
}

TEST_CASE("pages: a <time datetime> in the headline's own card is its time, another's is not") {
  auto got = collect(R"(<ul>
<li><a href="/a">First story of the day</a> <time datetime="2015-11-17T09:12:00Z">9:12</time></li>
<li><a href="/b">Second story with no time</a></li>
</ul>
<div class="cards">
<div class="card"><div class="head"><a href="/c">Third story in a card</a></div><p><time datetime="2015-11-17T09:12:00Z"></time></p></div>
<div class="card"><a href="/d">Fourth story beside a timed one</a></div>
</div>
<section><h3><a href="/e">Fifth story with its own time</a></h3><time datetime="2015-11-17T09:12:00Z"></time>
<h3><a href="/f">Sixth story shares a section</a></h3></section>
<article><a href="/g">Seventh story with a silly time</a><time datetime="2999-01-01T00:00:00Z"></time></article>)");
  REQUIRE(got.size() == 7);
  CHECK(got[0].published_ms == nov_17_2015_0912);
  CHECK_FALSE(got[1].published_ms); // the list item above is another headline's
  CHECK(got[2].published_ms == nov_17_2015_0912);
  CHECK_FALSE(got[3].published_ms); // the sibling card's time is not its own
  CHECK_FALSE(got[4].published_ms); // the section holds another headline: whose time is unknown
  CHECK_FALSE(got[5].published_ms);
  CHECK_FALSE(got[6].published_ms); // implausible: ignored
}

TEST_CASE("titles: kickers, labels, ranks, bylines and times are kept out") {
  auto got = collect(R"(
<a href="/1"><span class="cd__kicker">PLANE CRASH</span> Bomb destroyed Metrojet: Russia</a>
<a href="/2"><strong>AT LARGE</strong> Manhunt for the eighth attacker</a>
<a href="/3"><span class="rank">1.</span> <span>Markets fall on rate fears</span></a>
<a href="/4">2. Storm closes the coast road</a>
<a href="/5"><span>3</span><span>Council approves the budget</span></a>
<a href="/6"><h3>Election result delayed</h3><span class="byline">By Jane Doe</span><time>2 hours ago</time></a>
<a href="/7"><div data-component="eyebrow">Analysis</div><h3>What the vote means</h3></a>
<a href="/8">NASA launches a new probe</a>
<a href="/9"><strong>PARIS ATTACKS: Everything we know so far</strong></a>
<a href="/10">10 things to know today</a>
<a href="/11"><span class="label">LIVE</span></a>
<a href="/12">Biden<span>'s</span> plan for <b>US</b>-China trade</a>
<a href="/13"><span class="title">Council Approves Harbour Plan</span> <span>By Jane Doe</span></a>)");
  REQUIRE(got.size() == 12);
  CHECK(got[0].title == "Bomb destroyed Metrojet: Russia");
  CHECK(got[0].kicker == "PLANE CRASH");
  CHECK(got[1].title == "Manhunt for the eighth attacker");
  CHECK(got[1].kicker == "AT LARGE");
  CHECK(got[2].title == "Markets fall on rate fears");
  CHECK(got[3].title == "Storm closes the coast road");
  CHECK(got[4].title == "Council approves the budget");
  CHECK(got[5].title == "Election result delayed");
  CHECK(got[6].title == "What the vote means");
  CHECK(got[6].kicker == "Analysis");
  CHECK(got[7].title == "NASA launches a new probe"); // capitals inside one text: a title
  CHECK(got[8].title == "PARIS ATTACKS: Everything we know so far"); // one element: all title
  CHECK(got[9].title == "10 things to know today"); // a number without a dot is the title's
  // /11: nothing else but the label, a one-word title: dropped.
  // Elements inside a word or next to punctuation add no space the page did not have.
  CHECK(got[10].title == "Biden's plan for US-China trade");
  // A byline in an element of its own, even after a Title Case headline.
  CHECK(got[11].title == "Council Approves Harbour Plan");
}

TEST_CASE("cnn 2015: kickers are no longer glued to titles") {
  auto page = shared_page("cnn-2015-edition.html");
  if (!page) {
    MESSAGE("skipped: cnn-2015-edition.html not found in " << NEWSDESK_SHARED_PAGES);
    return;
  }
  static const registry builtins = [] {
    registry r;
    register_builtin_scrapers(r);
    return r;
  }();
  const auto* cnn = builtins.find("cnn");
  REQUIRE(cnn);
  auto got = cnn->parse(*page, "https://edition.cnn.com/");
  auto find = [&](std::string_view url_part) {
    return std::find_if(got.begin(), got.end(), [&](const headline& h) {
      return h.url.find(url_part) != std::string::npos;
    });
  };
  auto crash = find("russian-metrojet-crash-bomb");
  REQUIRE(crash != got.end());
  CHECK(crash->title == "Bomb destroyed Metrojet: Russia");
  CHECK(crash->kicker == "PLANE CRASH");
  for (const auto& h : got) {
    CHECK(h.title.find("PLANE CRASH") == std::string::npos);
    CHECK(h.title.find("AT LARGE") == std::string::npos);
    CHECK(h.title.find("FRANCE FIGHTS") == std::string::npos);
  }
  // Detection without selectors splits them too.
  auto page_doc = dom::document::parse(*page);
  auto detected = detect_headlines(page_doc, "https://edition.cnn.com/", "cnn");
  for (const auto& h : detected)
    CHECK_MESSAGE(h.title.find("PLANE CRASH") == std::string::npos, h.title);
}

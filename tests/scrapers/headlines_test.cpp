#include "scrapers/headlines.hpp"

#include "scrapers/dom.hpp"

#include <doctest/doctest.h>

#include <string>

using newsdesk::scrapers::collapse_whitespace;
using newsdesk::scrapers::headline;
using newsdesk::scrapers::headline_collector;
using newsdesk::scrapers::left_out_link;
using newsdesk::scrapers::max_headlines_per_site;
namespace dom = newsdesk::scrapers::dom;

namespace {

const dom::document& empty_page() {
  static const dom::document page = dom::document::parse("<p>no base here</p>");
  return page;
}

} // namespace

TEST_CASE("collapse_whitespace joins runs of ASCII whitespace and trims the ends") {
  CHECK(collapse_whitespace("  Aid convoy\n\t reaches \r\f Gaza  ") == "Aid convoy reaches Gaza");
  CHECK(collapse_whitespace(" \n\t ").empty());
  CHECK(collapse_whitespace("").empty());
  CHECK(collapse_whitespace("one") == "one");
  // A non-breaking space is content.
  CHECK(collapse_whitespace("a\xc2\xa0 b") == "a\xc2\xa0 b");
}

TEST_CASE("collapse_whitespace keeps no control character and drops what reorders or hides text") {
  // C0 controls, DEL and C1 controls (U+0080-U+009F) separate words as whitespace does.
  CHECK(collapse_whitespace("Bomb\x1b[31m destroyed\x7f"
                            "jet") == "Bomb [31m destroyed jet");
  CHECK(collapse_whitespace("\xc2\x9b"
                            "2Jtitle\xc2\x85") == "2Jtitle");
  CHECK(collapse_whitespace("line\xe2\x80\xa8sep") == "line sep"); // U+2028
  // Bidi overrides and isolates, the zero-width space and the BOM are dropped.
  CHECK(collapse_whitespace("\xef\xbb\xbf"
                            "ab\xe2\x80\xae"
                            "cd\xe2\x80\xac") == "abcd");
  CHECK(collapse_whitespace("x\xe2\x81\xa6y\xe2\x81\xa9z\xe2\x80\x8bw") == "xyzw");
  // Joiners, accents and other scripts are text.
  CHECK(collapse_whitespace("\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x92\xbb \xc3\xa9t\xc3\xa9") ==
        "\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x92\xbb \xc3\xa9t\xc3\xa9");
  // A sequence cut at the end of a chunk is left as it is.
  CHECK(collapse_whitespace("ab\xc2") == "ab\xc2");
}

TEST_CASE("the collector collapses whitespace in titles and resolves hrefs against the page") {
  headline_collector c("site", "https://news.test/world/index.html", empty_page());
  CHECK(c.add("  Big\n   story ", "../2024/big.html"));
  REQUIRE(c.size() == 1);
  CHECK(c.headlines()[0] == headline{"Big story", "https://news.test/2024/big.html", "site"});
}

TEST_CASE("the collector drops empty and whitespace-only titles") {
  headline_collector c("site", "https://news.test/", empty_page());
  CHECK_FALSE(c.add("", "/a"));
  CHECK_FALSE(c.add(" \n ", "/a"));
  // A dropped empty title does not claim the URL for later links.
  CHECK(c.add("Story A", "/a"));
  CHECK(c.size() == 1);
}

TEST_CASE("the collector keeps only http and https links") {
  headline_collector c("site", "https://news.test/", empty_page());
  CHECK_FALSE(c.add("Two words", "javascript:alert(1)"));
  CHECK_FALSE(c.add("Two words", " JavaScript:alert(1)"));
  CHECK_FALSE(c.add("Two words", "data:text/html,<b>hi</b>"));
  CHECK_FALSE(c.add("Two words", "mailto:desk@news.test"));
  CHECK_FALSE(c.add("Two words", "ftp://news.test/file"));
  CHECK_FALSE(c.add("Two words", "http:relative-without-host"));
  CHECK(c.add("Plain story", "http://other.test/a"));
  CHECK(c.add("Secure story", "HTTPS://other.test/b"));
  CHECK(c.size() == 2);
}

TEST_CASE("the collector keeps the first of duplicate URLs and the order of the rest") {
  headline_collector c("site", "https://news.test/", empty_page());
  CHECK(c.add("First story", "/a"));
  CHECK(c.add("Second story", "/b"));
  CHECK_FALSE(c.add("First again, spelled differently", "https://news.test/a"));
  CHECK(c.add("Third story", "/c"));
  auto got = c.take();
  REQUIRE(got.size() == 3);
  CHECK(got[0].title == "First story");
  CHECK(got[1].title == "Second story");
  CHECK(got[2].title == "Third story");
  CHECK(c.size() == 0);
}

TEST_CASE("the collector drops hrefs that do not resolve") {
  headline_collector c("site", "https://news.test/", empty_page());
  CHECK_FALSE(c.add("Two words", "http://[broken"));
  headline_collector no_base("site", "not a url", empty_page());
  CHECK_FALSE(no_base.add("Two words", "/relative"));
  CHECK(no_base.add("Two words", "https://news.test/absolute"));
}

TEST_CASE("the collector resolves against <base href>, itself relative to the page URL") {
  auto page = dom::document::parse(
      "<html><head><base href='/mirror/'><base href='https://ignored.test/'></head>"
      "<body><a href='story.html'>x</a></body></html>");
  headline_collector c("site", "https://news.test/world/", page);
  CHECK(c.resolve("story.html") == "https://news.test/mirror/story.html");
  CHECK(c.add("A story", "story.html"));
  CHECK(c.headlines()[0].url == "https://news.test/mirror/story.html");
}

TEST_CASE("the collector ignores a <base href> that does not resolve") {
  auto page = dom::document::parse("<head><base href='http://[bad'></head>");
  headline_collector c("site", "https://news.test/world/", page);
  CHECK(c.resolve("a") == "https://news.test/world/a");
}

TEST_CASE("titles are kept as literal text, markup-looking or not") {
  headline_collector c("site", "https://news.test/", empty_page());
  CHECK(c.add("<script>alert(1)</script> <b>", "/x"));
  CHECK(c.headlines()[0].title == "<script>alert(1)</script> <b>");
}

TEST_CASE("the collector stops at max_headlines_per_site") {
  headline_collector c("site", "https://news.test/", empty_page());
  for (std::size_t i = 0; i < max_headlines_per_site; ++i) {
    REQUIRE(c.add("Story " + std::to_string(i), "/" + std::to_string(i)));
  }
  CHECK_FALSE(c.add("one too many", "/last"));
  CHECK(c.size() == max_headlines_per_site);
}

TEST_CASE("the collector drops empty and one-word titles, and says why") {
  std::vector<left_out_link> left_out;
  headline_collector c("site", "https://news.test/", empty_page());
  c.report_left_out(&left_out);
  CHECK_FALSE(c.add("Video", "/v"));
  CHECK_FALSE(c.add("\u00a0\u200b", "/empty"));
  CHECK_FALSE(c.add("速報", "/breaking"));
  CHECK(c.add("日本の首相が辞任", "/resigns"));
  CHECK(c.add("Storm\u00a0hits the\u00adcoast", "/storm"));
  CHECK_FALSE(c.add("Storm hits the coast again", "/storm"));
  REQUIRE(c.size() == 2);
  CHECK(c.headlines()[1].title == "Storm hits thecoast");
  REQUIRE(left_out.size() == 4);
  CHECK(left_out[0].title == "Video");
  CHECK(left_out[0].url == "https://news.test/v");
  CHECK(left_out[0].reason == "bad title: one word");
  CHECK(left_out[1].reason == "bad title: empty");
  CHECK(left_out[2].reason == "bad title: one word");
  CHECK(left_out[3].reason == "duplicate: the same URL is already a headline");
  CHECK(c.last_refusal() == headline_collector::refusal::duplicate);
  // A feed's titles are its authors': one word is a title there.
  headline_collector feed("site", "https://news.test/", empty_page());
  feed.authored_titles();
  CHECK(feed.add("Obituary", "/obituary"));
}

TEST_CASE("the collector takes off a most-read list's rank numbers, not a title's own number") {
  headline_collector c("site", "https://news.test/", empty_page());
  c.add("10 things to know today", "/ten");
  c.add("1 UK economy 'resilient' despite hit", "/a");
  c.add("2Pope Francis' funeral Mass details", "/b");
  c.add("3 Who will be the next pope?", "/c");
  c.add("4 UK economy 'resilient' despite hit", "/a"); // a duplicate keeps the run going
  c.add("5 Border officers saw a couple", "/d");
  c.add("6 Ways to save on heating", "/e");
  c.add("Unnumbered story ends the run", "/f");
  c.add("7 killed as storm hits coast", "/g");
  auto got = c.take();
  REQUIRE(got.size() == 8);
  CHECK(got[0].title == "10 things to know today");
  CHECK(got[1].title == "UK economy 'resilient' despite hit");
  CHECK(got[2].title == "Pope Francis' funeral Mass details");
  CHECK(got[3].title == "Who will be the next pope?");
  CHECK(got[4].title == "Border officers saw a couple");
  CHECK(got[5].title == "Ways to save on heating");
  CHECK(got[7].title == "7 killed as storm hits coast");
}

TEST_CASE("the collector takes a byline off the end of a title") {
  headline_collector c("site", "https://news.test/", empty_page());
  CHECK(c.add("Asia's winners and losers By Karishma Vaswani", "/asia"));
  CHECK(c.add("Man Crushed By Falling Tree", "/tree"));
  CHECK(c.headlines()[0].title == "Asia's winners and losers");
  CHECK(c.headlines()[1].title == "Man Crushed By Falling Tree");
}

namespace {

// Each link of `html` added as add_link adds it: title, time and picture.
std::vector<headline> illustrated(std::string_view html) {
  auto page = dom::document::parse(html);
  headline_collector c("t", "https://news.test/section/", page);
  for (dom::node a : page.root().descendant_elements())
    if (a.has_tag("a") && a.attr("href"))
      c.add_link(a, *a.attr("href"));
  return c.take();
}

} // namespace

TEST_CASE("a headline's picture is the <img> inside its card, resolved; another card's is not") {
  auto found = illustrated(R"(<main>
    <article><a href="/quake"><img src="img/quake.jpg" width="640" height="360">
      <h3>Quake shakes the coast overnight</h3></a></article>
    <div class="card"><div class="media"><img data-src="//cdn.test/fire.jpg"
      src="data:image/gif;base64,R0lGOD" alt=""></div>
      <h3><a href="/fire">Fire spreads through the hills</a></h3></div>
    <li><a href="/vote">Parliament votes on the budget today</a></li>
    <section><img src="/banner.jpg">
      <div><h3><a href="/a">First story of the section here</a></h3></div>
      <div><h3><a href="/b">Second story of the section here</a></h3></div></section>
    </main>)");
  REQUIRE(found.size() == 5);
  CHECK(found[0].image == "https://news.test/section/img/quake.jpg");
  CHECK(found[1].image == "https://cdn.test/fire.jpg"); // the lazy loader's, not the placeholder
  CHECK(found[2].image.empty());                        // no picture in its card
  // The section's banner is above two cards: neither card holds it.
  CHECK(found[3].image.empty());
  CHECK(found[4].image.empty());
}

TEST_CASE("a picture from a srcset is the smallest at least 480 px wide; icons and SVG are none") {
  auto found = illustrated(R"(<main>
    <div><img srcset="s.jpg 240w, m.jpg 640w,l.jpg 1200w" src="fallback.jpg">
      <a href="/1">A story with a srcset picture here</a></div>
    <div><img data-srcset="https://cdn.test/a.webp 320w, https://cdn.test/b.webp 400w">
      <a href="/2">A story with only small candidates</a></div>
    <div><img src="/avatar.png" width="48" height="48"><img src="/logo.svg">
      <a href="/3">A story with only an avatar and a logo</a></div>
    <div><picture><source srcset="/p.avif"><img src="/p.jpg?w=800"></picture>
      <a href="/4">A story with a picture element around it</a></div>
    </main>)");
  REQUIRE(found.size() == 4);
  CHECK(found[0].image == "https://news.test/section/m.jpg");
  CHECK(found[1].image == "https://cdn.test/b.webp"); // the widest there is
  CHECK(found[2].image.empty());
  CHECK(found[3].image == "https://news.test/p.jpg?w=800");
}

#include "server/core/utc_time.hpp"
#include "server/views/news_page.hpp"
#include "server/views/site_colours.hpp"
#include "server/views/site_status.hpp"
#include "tests/support/page_text.hpp"
#include "tests/support/test_paths.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

using namespace newsdesk::server;
using newsdesk::scrapers::headline;

namespace {
news_snapshot sample() {
  news_snapshot s;
  site_report cnn{"cnn", "CNN", "#cc0000", "https://edition.cnn.com/", "splash"};
  cnn.ok = true;
  cnn.headline_count = 2;
  cnn.elapsed = std::chrono::milliseconds(1200);
  cnn.last_success_ms = 1'700'000'000'000;
  site_report aj{"aj", "Al <Jazeera>", "#b58900", "https://www.aljazeera.com/", "splash"};
  aj.error = "Splash timed out after 30 s";
  aj.failure = failure_kind::timeout;
  aj.last_attempt_ms = 1'700'000'000'000;
  s.sites = {cnn, aj};
  s.headlines = {
      {{"<script>alert(1)</script>", "https://edition.cnn.com/a.html?x=1&y=2", "cnn"}, 1, 0, true},
      {{"Plain", "https://edition.cnn.com/b.html", "cnn"}, 2, 0, false},
      {{"Sneaky", "javascript:alert(1)", "cnn"}, 3, 0, false}};
  return s;
}

// `n` sites, "s000" to "s{n-1}", all updated at the same time, with no headlines yet.
news_snapshot many_sites(std::size_t n) {
  news_snapshot s;
  for (std::size_t i = 0; i < n; ++i) {
    char name[24]; // room for any size_t, though n stays under 1000
    std::snprintf(name, sizeof name, "s%03zu", i);
    site_report r{name, "Site " + std::to_string(i), "#336699",
                  "https://" + std::string(name) + ".test/", "direct"};
    r.ok = true;
    r.last_success_ms = 1'700'000'000'000;
    s.sites.push_back(r);
  }
  return s;
}

void add_headlines(news_snapshot& s, const std::string& site, int count) {
  for (int i = 0; i < count; ++i) {
    const auto id = static_cast<std::int64_t>(s.headlines.size()) + 1;
    s.headlines.push_back({{"Headline " + std::to_string(id),
                            "https://" + site + ".test/" + std::to_string(id), site},
                           id,
                           1'700'000'000'000,
                           false});
  }
}

// The sites whose chips the page shows, in order.
std::vector<std::string> chips_of(const std::string& html) {
  std::vector<std::string> out;
  const std::string mark = "<li class=\"chip site-";
  for (auto at = html.find(mark); at != std::string::npos; at = html.find(mark, at + 1)) {
    const auto start = at + mark.size();
    out.push_back(html.substr(start, html.find(' ', start) - start));
  }
  return out;
}

bool has(const std::vector<std::string>& chips, const std::string& site) {
  return std::find(chips.begin(), chips.end(), site) != chips.end();
}

// 100 sites: s095 lists 3 of the page's headlines, s050 to s077 one each, s003 none but it was
// updated last, s099 failed; the rest are alike and list none.
news_snapshot busy_sites() {
  auto s = many_sites(100);
  add_headlines(s, "s095", 3);
  for (int i = 50; i <= 77; ++i)
    add_headlines(s, "s0" + std::to_string(i), 1);
  s.sites[3].last_success_ms += 60'000;
  auto& failed = s.sites[99];
  failed.ok = false;
  failed.last_success_ms = 0;
  failed.error = "cannot fetch https://s099.test/: refused";
  failed.failure = failure_kind::site_unreachable;
  failed.last_attempt_ms = 1'700'000'000'000;
  return s;
}

const news_page& page() {
  static news_page p = news_page::load(std::string(NEWSDESK_SOURCE_DIR) + "/templates");
  return p;
}
} // namespace

TEST_CASE("the page escapes scraped titles and URLs") {
  auto html = page().render(sample());
  CHECK(html.find("&lt;script&gt;alert(1)&lt;/script&gt;") != std::string::npos);
  CHECK(html.find("<script>alert(1)") == std::string::npos);
  CHECK(html.find("href=\"https://edition.cnn.com/a.html?x=1&amp;y=2\"") != std::string::npos);
}

TEST_CASE("the page drops links that are not http or https") {
  auto html = page().render(sample());
  CHECK(html.find("javascript:") == std::string::npos);
  CHECK(html.find("Sneaky") == std::string::npos);
  auto json = nlohmann::json::parse(news_json(sample()));
  CHECK(json.at("headlines").size() == 2);
}

TEST_CASE("a failed site's notice is in plain words, names the site once, escaped") {
  auto html = page().render(sample());
  CHECK(html.find("<summary>Couldn’t load Al &lt;Jazeera&gt;: the site took too long to "
                  "load</summary>") != std::string::npos);
  // The raw error is the detail on demand, without the site's name again.
  CHECK(html.find("<li>Splash timed out after 30 s (via Splash, tried ") != std::string::npos);
  CHECK(html.find("Al &lt;Jazeera&gt;: Splash timed out") == std::string::npos);
  // The chips: name, count and age on one line; the failed one says so.
  CHECK(html.find("aria-label=\"2 headlines\">2</span>") != std::string::npos);
  CHECK(html.find("<span class=\"chip-state\">failed</span>") != std::string::npos);
}

TEST_CASE("sites that fail because the renderer is down share one notice, with no address") {
  auto s = sample();
  for (auto name : {"bbc", "npr", "fox", "abc"}) {
    site_report r{name, std::string(name) + " News", "#123456",
                  "https://" + std::string(name) + ".test/", "splash"};
    r.error = "cannot reach Splash at http://splash:8050 (connect: Connection refused)";
    r.failure = failure_kind::renderer_down;
    r.last_attempt_ms = 1'700'000'000'000;
    s.sites.push_back(r);
  }
  auto html = page().render(s);
  CHECK(html.find("Couldn’t load bbc News, npr News and 2 more: the page renderer isn’t "
                  "answering (Splash). Check Splash: is it running, and is newsdesk’s address for "
                  "it right?</summary>") != std::string::npos);
  CHECK(html.find("splash:8050") == std::string::npos);
  CHECK(html.find("cannot reach Splash at (an internal address)") != std::string::npos);
}

TEST_CASE("a renderer's failure is told once: its notice first, its sites' chips and headlines "
          "marked only quietly") {
  auto s = sample(); // aj failed on its own (a timeout); cnn is fine
  site_report bbc{"bbc", "BBC", "#bb1919", "https://bbc.test/", "splash"};
  bbc.stale = true; // it has headlines from before
  bbc.error = "Splash answered 404: is SPLASH_URL pointing at a Splash server?";
  bbc.failure = failure_kind::renderer_down;
  bbc.last_attempt_ms = 1'700'000'000'000;
  bbc.last_success_ms = 1'699'999'000'000;
  bbc.headline_count = 1;
  auto npr = bbc;
  npr.name = "npr";
  npr.display_name = "NPR";
  npr.stale = false; // it never had any
  npr.headline_count = 0;
  npr.last_success_ms = 0;
  auto own = bbc; // stale by its own fault: its boxes say so
  own.name = "own";
  own.display_name = "Own Goal";
  own.error = "Splash timed out after 30 s";
  own.failure = failure_kind::timeout;
  s.sites.insert(s.sites.end(), {bbc, npr, own});
  s.headlines.push_back({{"Kept from before", "https://bbc.test/kept", "bbc"}, 4, 0, false});
  s.headlines.push_back({{"Own kept", "https://own.test/kept", "own"}, 5, 0, false});
  auto html = page().render(s);

  const std::string notice = "<summary>Couldn’t load BBC and NPR: the page renderer isn’t "
                             "answering (Splash). Check Splash: is it running, and is newsdesk’s "
                             "address for it right?</summary>";
  const auto at = html.find(notice);
  REQUIRE(at != std::string::npos);
  CHECK(html.find("the page renderer isn’t answering", at + notice.size()) == std::string::npos);
  // Before the sites' own problems: the renderer is the likelier thing to fix.
  CHECK(at < html.find("<summary>Couldn’t load Al &lt;Jazeera&gt;"));
  CHECK(at < html.find("<summary>Own Goal isn’t updating"));
  // The chips keep their colours and say it to screen readers only.
  CHECK(html.find("<li class=\"chip site-bbc chip-renderer\" data-site=\"bbc\">") !=
        std::string::npos);
  CHECK(html.find("<li class=\"chip site-npr chip-renderer\" data-site=\"npr\">") !=
        std::string::npos);
  CHECK(html.find("<span class=\"chip-state visually-hidden\">not updating</span>") !=
        std::string::npos);
  CHECK(html.find("<li class=\"chip site-own chip-stale\" data-site=\"own\">") !=
        std::string::npos);
  // The headlines stay as they are; a site's own failure still marks its boxes.
  CHECK(html.find("<li class=\"headline site-bbc\" data-id=\"4\"") != std::string::npos);
  CHECK(html.find("<li class=\"headline site-own is-stale\" data-id=\"5\"") != std::string::npos);

  // An overloaded renderer's notice says what to check in its case.
  for (auto& site : s.sites)
    if (site.failure == failure_kind::renderer_down)
      site.failure = failure_kind::renderer_busy;
  CHECK(page().render(s).find("Couldn’t load BBC and NPR: the page renderer is overloaded "
                              "(Splash). Check Splash: does it have as many slots as "
                              "newsdesk’s max_concurrent_renders?") != std::string::npos);
}

TEST_CASE("a search of one site's view links to the same search of every site") {
  news_query query;
  query.sites = {"cnn"};
  query.q = "war & peace";
  query.words = search_query("war peace");
  auto html = page().render(sample(), query);
  CHECK(html.find("<a href=\"/news?q=war%20%26%20peace\">Search all sites</a>") !=
        std::string::npos);
  // Not without a search, nor when it already searches more than one site.
  query.q.clear();
  query.words = {};
  CHECK(page().render(sample(), query).find("Search all sites") == std::string::npos);
  query.q = "war";
  query.words = search_query("war");
  query.sites = {"cnn", "aj"};
  CHECK(page().render(sample(), query).find("Search all sites") == std::string::npos);
  query.sites.clear();
  CHECK(page().render(sample(), query).find("Search all sites") == std::string::npos);
}

TEST_CASE("the page's first tab stop skips to the headlines; each headline is one tab stop") {
  auto html = page().render(sample());
  const auto body = html.find("<body");
  REQUIRE(body != std::string::npos);
  // Nothing focusable before the skip link.
  const auto skip = html.find("<a class=\"skip-link\" href=\"#headlines-heading\">Skip to "
                              "headlines</a>");
  CHECK(skip != std::string::npos);
  CHECK(html.find("<a ", body) == skip);
  CHECK(html.find("id=\"headlines-heading\"") != std::string::npos);
  // The link to a site's view beside each title is left out of the tab order (its chip leads
  // there); the title's link is the headline's one stop.
  CHECK(html.find("<a class=\"source\" href=\"/news?site=cnn\" tabindex=\"-1\">CNN</a>") !=
        std::string::npos);
  CHECK(html.find("<a class=\"story\" href=\"https://edition.cnn.com/b.html\" "
                  "rel=\"noreferrer\" dir=\"auto\">Plain</a>") != std::string::npos);
  // What the script shows: the arrivals button inside a polite live region, the reading tools
  // and the list of keys, all hidden or closed without it.
  CHECK(html.find("<div class=\"arrivals\" aria-live=\"polite\"><button type=\"button\" "
                  "id=\"arrivals\" hidden></button></div>") != std::string::npos);
  CHECK(html.find("<p class=\"tools\" id=\"tools\" hidden>") != std::string::npos);
  CHECK(html.find(">Mark all read</button>") != std::string::npos);
  CHECK(html.find("<dialog id=\"keys\" aria-labelledby=\"keys-heading\">") != std::string::npos);
  // Template comments leave nothing behind.
  CHECK(html.find("{{") == std::string::npos);
}

TEST_CASE("failures in a reader's words") {
  CHECK(describe_failure(failure_kind::timeout).summary == "the site took too long to load");
  CHECK(describe_failure(failure_kind::not_found).summary ==
        "the site answered 404 (page not found)");
  CHECK(describe_failure(failure_kind::site_unreachable).summary == "the site didn’t answer");
  CHECK(describe_failure(failure_kind::no_headlines).summary ==
        "no headlines were found on the page");
  CHECK(describe_failure(failure_kind::renderer_down).renderer_problem);
  CHECK(describe_failure(failure_kind::renderer_busy).renderer_problem);
  CHECK_FALSE(describe_failure(failure_kind::timeout).renderer_problem);
  // A failure stored by a version that did not record its kind.
  CHECK(describe_failure(failure_kind::none).summary == "something went wrong loading it");
  // The site's own address stays; any other is replaced.
  CHECK(
      public_detail("cannot fetch https://www.site.test/news: refused", "https://www.site.test/") ==
      "cannot fetch https://www.site.test/news: refused");
  CHECK(public_detail("proxy 'http://10.1.2.3:3128' failed", "https://www.site.test/") ==
        "proxy '(an internal address)' failed");
}

TEST_CASE("every headline shows when it was seen; counts have the right plural") {
  auto html = page().render(sample());
  CHECK(html.find("<time class=\"ago\" datetime=\"1970-01-01T00:00:00.000Z\" title=\"seen "
                  "Thu 01 Jan 1970, 00:00 UTC\" data-label=\"seen\">seen ") != std::string::npos);
  CHECK(html.find(">2 headlines</span>") != std::string::npos);
  CHECK(html.find("from 2 sites") != std::string::npos);
  auto one = sample();
  one.sites.resize(1);
  one.headlines.truncate(1);
  auto single = page().render(one);
  CHECK(single.find(">1 headline</span>") != std::string::npos);
  CHECK(single.find("from 1 site,") != std::string::npos);
  // Links open in the same tab; titles carry their own direction.
  CHECK(html.find("target=") == std::string::npos);
  CHECK(html.find("dir=\"auto\"") != std::string::npos);
}

TEST_CASE("one site's view is named after it, and its feeds too") {
  news_query query;
  query.sites = {"cnn"};
  auto html = page().render(sample(), query);
  CHECK(html.find("<title>newsdesk: CNN</title>") != std::string::npos);
  CHECK(html.find("title=\"newsdesk: CNN (Atom)\"") != std::string::npos);
  CHECK(html.find("aria-current=\"page\">CNN</a>") != std::string::npos);
  CHECK(html.find("<input type=\"hidden\" name=\"site\" value=\"cnn\">") != std::string::npos);
  CHECK(html.find("data-order=\"site\"") != std::string::npos);
  CHECK(html.find("data-events=\"site=cnn\"") != std::string::npos);
  // The way to the site itself: its home page, named by its host.
  CHECK(html.find("<a class=\"site-home\" href=\"https://edition.cnn.com/\" "
                  "rel=\"noreferrer\">edition.cnn.com ↗</a>") != std::string::npos);
  // Not on a view of several sites.
  query.sites = {"cnn", "aj"};
  CHECK(page().render(sample(), query).find("site-home") == std::string::npos);
}

TEST_CASE("a feed site's view links to the home page its file names, not to its feed") {
  auto s = sample();
  s.sites[0].url = "https://feeds.example/cnn.rss";
  s.sites[0].home = "https://www.cnn.com/";
  news_query query;
  query.sites = {"cnn"};
  auto html = page().render(s, query);
  CHECK(html.find("href=\"https://www.cnn.com/\" rel=\"noreferrer\">cnn.com ↗</a>") !=
        std::string::npos);
  CHECK(html.find("feeds.example") == std::string::npos);
}

TEST_CASE("news.json carries sites and headlines built from the snapshot") {
  auto j = nlohmann::json::parse(news_json(sample()));
  CHECK(j.at("sites")[0].at("name") == "cnn");
  CHECK(j.at("sites")[0].at("error").is_null());
  CHECK(j.at("sites")[1].at("error") == "Splash timed out after 30 s");
  CHECK(j.at("sites")[1].at("failure") == "timeout");
  CHECK(j.at("sites")[0].at("failure") == nullptr);
  CHECK(j.at("sites")[1].at("stale") == false);
  CHECK(j.at("headlines")[0].at("new") == true);
  CHECK(j.at("headlines")[0].at("id") == 1);
  CHECK(j.at("headlines")[0].at("title") == "<script>alert(1)</script>");
}

TEST_CASE("news.json survives invalid UTF-8 in scraped text") {
  news_snapshot s;
  s.headlines = {{{"bad \xff byte", "https://a.test/", "x"}, 1, 0, false}};
  auto j = nlohmann::json::parse(news_json(s));
  CHECK(j.at("headlines")[0].at("title") == "bad \xEF\xBF\xBD byte");
}

TEST_CASE("text colour contrasts with the site colour") {
  CHECK(text_colour_for("#cc0000") == "#ffffff");
  CHECK(text_colour_for("#ffcc00") == "#000000");
  CHECK(text_colour_for("#fff") == "#000000");
  CHECK(text_colour_for("#000") == "#ffffff");
}

TEST_CASE("a missing or broken template is an error naming the file") {
  auto dir = std::filesystem::temp_directory_path() / "newsdesk-template-test";
  std::filesystem::create_directories(dir);
  std::filesystem::remove(dir / "news.html");
  CHECK_THROWS_WITH_AS(news_page::load(dir), doctest::Contains("news.html"), std::runtime_error);
  std::ofstream(dir / "news.html") << "{{#sites}} unclosed";
  CHECK_THROWS_WITH_AS(news_page::load(dir), doctest::Contains("not valid Mustache"),
                       std::runtime_error);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a filtered page's feed links carry the same filters") {
  news_query query;
  query.sites = {"cnn", "aj"};
  query.q = "a&b";
  query.words = search_query("a b");
  query.limit = 5;
  auto html = page().render(sample(), query);
  // Mustache escapes '&' in the attribute; the browser reads back "?site=cnn&site=aj&q=a%26b&...".
  CHECK(html.find("href=\"/news.atom?site=cnn&amp;site=aj&amp;q=a%26b&amp;limit=5\"") !=
        std::string::npos);
  CHECK(html.find("href=\"/news.feed.json?site=cnn&amp;site=aj&amp;q=a%26b&amp;limit=5\"") !=
        std::string::npos);
  CHECK(page().render(sample()).find("href=\"/news.atom\"") != std::string::npos);
}

TEST_CASE(
    "with more sites than the bound, the chips are the most active ones, then a link to all") {
  static_assert(max_site_chips == 30, "busy_sites() is laid out for 30 chips");
  auto html = page().render(busy_sites());
  auto chips = chips_of(html);
  REQUIRE(chips.size() == max_site_chips);
  // The most headlines on the page first; equals in the configuration's order; then, among
  // sites with none, the one updated last.
  CHECK(chips.front() == "s095");
  CHECK(chips[1] == "s050");
  CHECK(chips[2] == "s051");
  CHECK(chips[28] == "s077");
  CHECK(chips[29] == "s003");
  CHECK_FALSE(has(chips, "s000"));
  CHECK_FALSE(has(chips, "s078"));
  // The failed site has no chip; the problems section still names it.
  CHECK_FALSE(has(chips, "s099"));
  CHECK(html.find("<summary>Couldn’t load Site 99: the site didn’t answer</summary>") !=
        std::string::npos);
  // The last chip is a link to the same page with every site's chip.
  CHECK(html.find("<li class=\"chip chip-all\"><a href=\"/news?chips=all\">All 100 sites</a>"
                  "</li>\n    </ul>\n  </nav>") != std::string::npos);
  // Every site keeps its colours: a headline of any of them may arrive while the page is open.
  CHECK(html.find(".site-s000 { --site-bg: #336699; --site-fg: #ffffff; }") != std::string::npos);
  CHECK(html.find("from 100 sites") != std::string::npos);
}

TEST_CASE("the site a view is of keeps its chip, however inactive") {
  news_query query;
  query.sites = {"s000"};
  auto html = page().render(busy_sites(), query);
  auto chips = chips_of(html);
  CHECK(chips.size() == max_site_chips);
  CHECK(has(chips, "s000"));
  CHECK(html.find("aria-current=\"page\">Site 0</a>") != std::string::npos);
  // It takes the place of the least active of the others.
  CHECK(has(chips, "s077"));
  CHECK_FALSE(has(chips, "s003"));
  CHECK(html.find("href=\"/news?site=s000&amp;chips=all\">All 100 sites</a>") != std::string::npos);
}

TEST_CASE(
    "chips=all shows every site's chip, in the configuration's order, and the same headlines") {
  auto s = busy_sites();
  s.next = "1700000000000.31";
  news_query query;
  query.all_chips = true;
  auto html = page().render(s, query);
  auto chips = chips_of(html);
  REQUIRE(chips.size() == 100);
  CHECK(chips.front() == "s000");
  CHECK(chips.back() == "s099");
  CHECK(html.find("chip-all") == std::string::npos);
  // The headlines are not filtered: the page reads as the unfiltered one.
  CHECK(html.find("class=\"visually-hidden\">Latest headlines</h2>") != std::string::npos);
  CHECK(html.find("<title>newsdesk</title>") != std::string::npos);
  // Its next page has every chip too; its feeds are the unfiltered ones.
  CHECK(html.find("href=\"/news?chips=all&amp;before=1700000000000.31\">Older headlines") !=
        std::string::npos);
  CHECK(html.find("href=\"/news.atom\"") != std::string::npos);
}

TEST_CASE("with no more sites than the bound, every chip shows in the configuration's order") {
  auto s = many_sites(max_site_chips);
  add_headlines(s, "s029", 5);
  auto html = page().render(s);
  auto chips = chips_of(html);
  REQUIRE(chips.size() == max_site_chips);
  CHECK(chips.front() == "s000");
  CHECK(chips.back() == "s029");
  CHECK(html.find("chip-all") == std::string::npos);

  CHECK(chips_of(page().render(sample())) == std::vector<std::string>{"cnn", "aj"});
  CHECK(page().render(sample()).find("chip-all") == std::string::npos);

  auto one_more = many_sites(max_site_chips + 1);
  html = page().render(one_more);
  CHECK(chips_of(html).size() == max_site_chips);
  CHECK(html.find(">All 31 sites</a>") != std::string::npos);
}

TEST_CASE("the link to every chip keeps the view's filters and page") {
  news_query query;
  query.q = "war";
  query.words = search_query("war");
  query.limit = 50;
  query.before_ms = 1'700'000'000'000;
  query.before_id = 7;
  auto html = page().render(busy_sites(), query);
  CHECK(html.find("href=\"/news?q=war&amp;limit=50&amp;before=1700000000000.7&amp;chips=all\">"
                  "All 100 sites</a>") != std::string::npos);
}

namespace {
// Two sites telling one story (2, started by s001's headline), each with a headline of its own
// besides; in the page's order (newest first).
news_snapshot shared_story() {
  auto s = many_sites(2);
  auto item = [](std::string title, std::string url, std::string site, std::int64_t id,
                 std::int64_t seen_ms, std::int64_t story) {
    news_item out{{std::move(title), std::move(url), std::move(site)}, id, seen_ms};
    out.story = story;
    return out;
  };
  s.headlines = {
      item("Bridge opens downtown", "https://s000.test/bridge", "s000", 4, 1'700'000'300'000, 2),
      item("Rain ahead", "https://s000.test/rain", "s000", 3, 1'700'000'200'000, 3),
      item("The bridge opens at last", "https://s001.test/bridge", "s001", 2, 1'700'000'100'000, 2),
      item("Vote today", "https://s001.test/vote", "s001", 1, 1'700'000'000'000, 1)};
  // A page of a larger snapshot: its newest headline (id 9) is on a later page.
  s.last_id = 9;
  return s;
}

std::size_t occurrences(const std::string& html, const std::string& what) {
  std::size_t n = 0;
  for (auto at = html.find(what); at != std::string::npos; at = html.find(what, at + 1))
    ++n;
  return n;
}
} // namespace

TEST_CASE("the unfiltered page opens with a card per story two sites tell; the latest headlines "
          "after it leave the card's out") {
  const auto s = shared_story();
  const auto html = newsdesk::testing::without_templates(page().render(s));
  const auto top = html.find(
      "<h2 id=\"top-stories-heading\" class=\"view-heading section-heading\">Top stories</h2>");
  const auto latest = html.find("id=\"headlines-heading\"");
  REQUIRE(top != std::string::npos);
  REQUIRE(latest != std::string::npos);
  CHECK(top < latest);
  CHECK(html.find("<a class=\"skip-link\" href=\"#top-stories-heading\">") != std::string::npos);
  // One card: the lead is the story's first headline in the page's order, the other site's beneath.
  CHECK(occurrences(html, "<li class=\"top-story\"") == 1);
  const auto lead = html.find("<li class=\"lead site-s000\" data-id=\"4\"");
  const auto other = html.find("<li class=\"telling site-s001\" data-id=\"2\"");
  CHECK(top < lead);
  CHECK(lead < other);
  CHECK(other < latest);
  CHECK(html.find(">2 sources</a> · started <time class=\"ago\" datetime=\"") != std::string::npos);
  CHECK(html.find(" · updated <time class=\"ago\"") != std::string::npos);
  // Nothing twice: the story's headlines are in the card only; the others in the list.
  CHECK(occurrences(html, "https://s000.test/bridge") == 1);
  CHECK(occurrences(html, "https://s001.test/bridge") == 1);
  CHECK(html.find("https://s000.test/rain", latest) != std::string::npos);
  CHECK(html.find("https://s001.test/vote", latest) != std::string::npos);
  CHECK(html.find("4 headlines") != std::string::npos); // the count is of the whole page
  // The stream starts after the newest headline held, shown on this page or not.
  CHECK(html.find("data-last-id=\"9\"") != std::string::npos);

  SUBCASE("a site's own view, a search and a story's view have no Top stories") {
    for (auto query : {"site=s000", "q=bridge", "story=2"}) {
      auto parsed = parse_news_query(query, s.sites);
      REQUIRE(std::holds_alternative<news_query>(parsed));
      const auto filtered = page().render(s, std::get<news_query>(parsed));
      CHECK(filtered.find("Top stories") == std::string::npos);
      CHECK(filtered.find("id=\"story-template\"") == std::string::npos);
      CHECK(filtered.find("class=\"top-story\"") == std::string::npos);
    }
  }
}

TEST_CASE("a card's lead carries its source's line of summary, escaped; the list shows none") {
  auto s = shared_story();
  headline_list with_summaries;
  for (auto item : s.headlines) {
    if (item.id == 4)
      item.headline.summary = "The span links the two banks <after> ten years & more.";
    if (item.id == 3)
      item.headline.summary = "Showers from noon, clearing by evening.";
    with_summaries.push_back(std::move(item));
  }
  s.headlines = std::move(with_summaries);
  const auto html = newsdesk::testing::without_templates(page().render(s));
  const auto lead = html.find("<li class=\"lead site-s000\" data-id=\"4\"");
  const auto latest = html.find("id=\"headlines-heading\"");
  REQUIRE(lead != std::string::npos);
  const auto summary =
      html.find("<p class=\"headline-summary\" dir=\"auto\">The span links the two banks "
                "&lt;after&gt; ten years &amp; more.</p>");
  CHECK(lead < summary);
  CHECK(summary < latest);
  // A box of the list is a line: its summary is not on the page (news.json has it).
  CHECK(html.find("Showers from noon") == std::string::npos);
  CHECK(occurrences(html, "headline-summary") == 1);
  const auto json = news_json(s);
  CHECK(json.find("\"summary\":\"Showers from noon, clearing by evening.\"") != std::string::npos);
}

TEST_CASE("a story one site tells twice gets no card") {
  auto s = many_sites(2);
  s.headlines = {{{"Bridge opens", "https://s000.test/1", "s000"}, 2, 1'700'000'100'000},
                 {{"Bridge opens: more", "https://s000.test/2", "s000"}, 1, 1'700'000'000'000}};
  headline_list with_story;
  for (auto item : s.headlines) {
    item.story = 1;
    with_story.push_back(item);
  }
  s.headlines = with_story;
  const auto html = newsdesk::testing::without_templates(page().render(s));
  // The section is there for a story that several sites come to tell live, hidden.
  CHECK(html.find("aria-labelledby=\"top-stories-heading\" hidden>") != std::string::npos);
  CHECK(html.find("class=\"top-story\"") == std::string::npos);
  CHECK(html.find("<a class=\"skip-link\" href=\"#headlines-heading\">") != std::string::npos);
}

TEST_CASE("a card shows the lead and one headline of each other site, up to the bound; the story's "
          "other headlines are in its coverage, not the list") {
  auto s = many_sites(7);
  headline_list headlines;
  std::int64_t id = 20;
  auto add = [&](const std::string& site) {
    news_item item{
        {"Bridge " + std::to_string(id), "https://" + site + ".test/" + std::to_string(id), site},
        id,
        1'700'000'000'000 + id};
    item.story = 1;
    headlines.push_back(item);
    --id;
  };
  add("s000");
  add("s000"); // the lead's site again
  for (const auto* site : {"s001", "s002", "s003", "s004", "s005", "s006"})
    add(site);
  s.headlines = headlines;
  const auto html = newsdesk::testing::without_templates(page().render(s));
  const auto latest = html.find("id=\"headlines-heading\"");
  REQUIRE(latest != std::string::npos);
  CHECK(occurrences(html, "<li class=\"telling ") == max_card_tellings);
  CHECK(html.find("<li class=\"lead site-s000\" data-id=\"20\"") < latest);
  for (const auto* site : {"s001", "s002", "s003", "s004"})
    CHECK(html.find(std::string("<li class=\"telling site-") + site) < latest);
  // The lead's site's second headline and the sites past the bound: one click away, in the
  // story's coverage; the story is shown once.
  CHECK(html.find("<li class=\"headline ", latest) == std::string::npos);
  CHECK(occurrences(html, ">7 sources</a>") == 1);
}

TEST_CASE("a headline shows its published time when known, else when seen; the first look none") {
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  news_snapshot s;
  site_report cnn{"cnn", "CNN", "#cc0000", "https://edition.cnn.com/", "direct"};
  cnn.ok = true;
  cnn.last_success_ms = now;
  s.sites = {cnn};
  news_item recent{{"Recent", "https://edition.cnn.com/r", "cnn", now - 5 * 60'000}, 1, now};
  news_item old{{"Old", "https://edition.cnn.com/o", "cnn", 1'447'751'520'000}, 2, now};
  news_item seen{{"Seen", "https://edition.cnn.com/s", "cnn"}, 3, now - 3 * 3'600'000};
  news_item first{{"First look", "https://edition.cnn.com/f", "cnn"}, 4, now};
  first.first_look = true;
  s.headlines = {recent, old, seen, first};
  auto html = page().render(s);
  CHECK(html.find("data-label=\"published\">published 5 min ago</time>") != std::string::npos);
  CHECK(html.find("datetime=\"2015-11-17T09:12:00.000Z\"") != std::string::npos);
  CHECK(html.find("data-label=\"published\">published 17 Nov 2015</time>") != std::string::npos);
  CHECK(html.find("data-label=\"seen\">seen 3 h ago</time>") != std::string::npos);
  // A fresh install's first refresh is not news: no "just now", no age, but when it was there by
  // (the clock time newsdesk first looked).
  CHECK(html.find("seen just now") == std::string::npos);
  const auto first_at = html.find(">First look</a>");
  REQUIRE(first_at != std::string::npos);
  const auto first_end = html.find("</li>", first_at);
  const auto first_box = html.substr(first_at, first_end - first_at);
  CHECK(first_box.find("data-label=\"seen before\">seen before " + format_utc(now, "%H:%M UTC") +
                       "</time>") != std::string::npos);
  nlohmann::json f = first;
  CHECK(f.at("first_look") == true);

  // The JSON says "published" only when known, as ISO 8601 UTC.
  nlohmann::json j = old;
  CHECK(j.at("published") == "2015-11-17T09:12:00Z");
  nlohmann::json k = seen;
  CHECK_FALSE(k.contains("published"));
}

TEST_CASE("sections the sites declare are chips above the sites': all headlines, or a section's") {
  auto s = shared_story();
  s.sites[0].section = "World";
  s.sites[1].section = "Tech & science";
  s.sections = {"World", "Tech & science"};
  const auto all = page().render(s);
  CHECK(all.find("<nav class=\"sections\"") != std::string::npos);
  CHECK(all.find("<a href=\"/news\" aria-current=\"page\">All</a>") != std::string::npos);
  CHECK(all.find("<a href=\"/news?section=World\">World</a>") != std::string::npos);
  CHECK(all.find("<a href=\"/news?section=Tech%20%26%20science\">Tech &amp; science</a>") !=
        std::string::npos);

  auto parsed = parse_news_query("section=World", s.sites);
  REQUIRE(std::holds_alternative<news_query>(parsed));
  const auto query = std::get<news_query>(parsed);
  const auto world = page().render(apply_query(s, query), query);
  CHECK(world.find("<a href=\"/news?section=World\" aria-current=\"page\">World</a>") !=
        std::string::npos);
  CHECK(world.find("<a href=\"/news\">All</a>") != std::string::npos);
  CHECK(world.find("class=\"view-heading\">World <a href=\"/news\">show all</a></h2>") !=
        std::string::npos);
  CHECK(world.find("<input type=\"hidden\" name=\"section\" value=\"World\">") !=
        std::string::npos);
  // Its stream hears its sites; its feeds and pages name the section.
  CHECK(world.find("data-events=\"site=s000\"") != std::string::npos);
  CHECK(world.find("/news.atom?section=World") != std::string::npos);
  // Without sections, no row of them.
  CHECK(page().render(shared_story()).find("class=\"sections\"") == std::string::npos);
}

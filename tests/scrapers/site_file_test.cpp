#include "scrapers/site_file.hpp"

#include "scrapers/headlines.hpp"
#include "scrapers/registry.hpp"
#include "test_files.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

using namespace newsdesk::scrapers;
using newsdesk::scrapers::testing::shared_page;
namespace fs = std::filesystem;

namespace {

// A fresh empty folder under the system temp dir, removed with everything in it at scope end.
class temp_dir {
 public:
  temp_dir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("newsdesk-site-files-" + std::to_string(::getpid()) + "-" + std::to_string(++counter));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  const fs::path& path() const { return path_; }
  fs::path write(const std::string& name, const std::string& text) const {
    fs::path p = path_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }

 private:
  fs::path path_;
};

// A minimal valid site file with link selector `link` and `extra` (", \"key\": value" pairs).
std::string site_json(const std::string& name, const std::string& extra = "",
                      const std::string& link = "a.story") {
  return R"({"name": ")" + name + R"(", "display_name": "Example", "url": "https://example.com/",
             "colour": "#123456", "link": ")" +
         link + "\"" + extra + "}";
}

// The message parse_site_file throws for `text`, read as "sites/x.json".
std::string error_for(const std::string& text) {
  try {
    parse_site_file(text, "sites/x.json");
  } catch (const site_file_error& e) {
    return e.what();
  }
  return "(no error)";
}

std::vector<headline> run(const std::string& extra, const std::string& html,
                          const std::string& page_url = "https://example.com/news/") {
  return parse_site_file(site_json("t", extra), "t.json")->parse(html, page_url);
}

std::vector<std::string> titles(const std::vector<headline>& list) {
  std::vector<std::string> out;
  for (const headline& h : list) {
    out.push_back(h.title);
  }
  return out;
}

bool has_title(const std::vector<headline>& list, const std::string& title) {
  return std::any_of(list.begin(), list.end(), [&](const headline& h) { return h.title == title; });
}

} // namespace

// --- the shipped site files against their saved pages ---------------------------------------

TEST_CASE("site files: every shipped file in sites/ is valid and clashes with no built-in") {
  CHECK(check_site_folder(testing::sites_dir()) == std::vector<std::string>{});
  registry r;
  register_builtin_scrapers(r);
  load_site_folder(testing::sites_dir(), r);
  for (const char* name : {"apnews", "bbc", "hackernews", "reuters"}) {
    CAPTURE(name);
    const scraper* s = r.find(name);
    REQUIRE(s != nullptr);
    CHECK(s->site().origin == (testing::sites_dir() / (std::string(name) + ".json")).string());
  }
  CHECK(r.find("cnn")->site().origin.empty());
  CHECK(origin_of(r.find("cnn")->site()) == "scrapers/sites/cnn.cpp");
  std::vector<std::string> colours;
  for (const scraper* s : r.all()) {
    colours.push_back(s->site().colour);
  }
  std::sort(colours.begin(), colours.end());
  CHECK(std::adjacent_find(colours.begin(), colours.end()) == colours.end());
}

TEST_CASE("site files: hackernews.json gives the 30 stories of hn-2022") {
  auto page = shared_page("hn-2022.html");
  if (!page) {
    MESSAGE("skipped: hn-2022.html not found in " << NEWSDESK_SHARED_PAGES);
    return;
  }
  site_trial t = try_site_file(testing::sites_dir() / "hackernews.json", *page);
  CHECK(t.link_matches == 30);
  REQUIRE(t.headlines.size() == 30);
  CHECK(t.headlines[0] ==
        headline{"High-performance image generation using Stable Diffusion in KerasCV",
                 "https://keras.io/guides/keras_cv/generate_images_with_stable_diffusion/",
                 "hackernews"});
  CHECK(t.headlines[29].title ==
        "Kill-sticky, a bookmarklet to remove sticky elements and restore scrolling");
  CHECK(t.headlines[29].url == "https://github.com/t-mart/kill-sticky");
  // The "(keras.io)" site links sit in span.sitebit, not directly in span.titleline.
  CHECK(!has_title(t.headlines, "keras.io"));
}

TEST_CASE("site files: bbc.json gives 41 unique links from 58 card headlines") {
  auto page = shared_page("bbc-2025-news-rendered.html");
  if (!page) {
    MESSAGE("skipped: bbc-2025-news-rendered.html not found in " << NEWSDESK_SHARED_PAGES);
    return;
  }
  site_trial t = try_site_file(testing::sites_dir() / "bbc.json", *page);
  // 91 internal/external links; 33 hold no card headline (navigation, images); the other 58
  // are the README's matches, 17 of them repeat a URL.
  CHECK(t.link_matches == 91);
  CHECK(t.without_title == 33);
  CHECK(t.link_matches - t.without_title == 58);
  CHECK(t.duplicates == 17);
  REQUIRE(t.headlines.size() == 41);
  CHECK(t.headlines[0].title ==
        "Funeral crowd reminded of Pope Francis' call to 'build bridges not walls'");
  CHECK(t.headlines[0].url == "https://www.bbc.com/news/live/c62jldpz9wyt");
  CHECK(t.headlines[0].site == "bbc");
  CAPTURE(t.headlines[0].image);
  CHECK(t.headlines[0].image.rfind("https://ichef.bbci.co.uk/", 0) == 0); // its card's picture
  CHECK(t.headlines[1].title == "Applause heard as Zelensky arrives for funeral");
  CHECK(t.headlines[1].url == "https://www.bbc.com/news/videos/c0r52gxqd55o");
  CHECK(t.headlines[40].title == "FA Cup or Champions League qualification - which means more?");
}

TEST_CASE("site files: reuters.json gives the 20 TitleLink stories") {
  auto page = shared_page("reuters-2026-world-rendered.html");
  if (!page) {
    MESSAGE("skipped: reuters-2026-world-rendered.html not found in " << NEWSDESK_SHARED_PAGES);
    return;
  }
  auto got = try_site(testing::sites_dir() / "reuters.json", *page);
  REQUIRE(got.size() == 20);
  // The title is the heading span, not the aria-label ("..., includes video").
  headline lead{"Trump threatens to hit Kharg Island oil network, Iran signals defiance",
                "https://www.reuters.com/world/middle-east/trump-threatens-strike-"
                "irans-kharg-island-oil-network-if-shipping-lanes-remain-2026-03-14/",
                "reuters", parse_date("2026-03-14T13:11:51.938Z")};
  // Its card's picture: the srcset's smallest candidate at least 480 px wide.
  lead.image = "https://www.reuters.com/resizer/v2/XX5LXUSZOBP5XHKZE7XZ5CUCQA.jpg?auth="
               "c5cbde7ca707ac33004b918920cd969a79a3ebccfe71fc1e5055823900ffe474&width=480&"
               "quality=80";
  CHECK(got[0] == lead);
  // Each card's own <time datetime> is its headline's published time (issue 28): 20 cards, 20
  // different times, never a neighbour's.
  std::set<std::int64_t> times;
  for (const auto& h : got)
    if (h.published_ms)
      times.insert(*h.published_ms);
  CHECK(times.size() == 20);
  CHECK(got[19].published_ms == parse_date("2026-03-14T02:31:44.505Z"));
  CHECK(got[19].title == "Iran's new supreme leader wounded, likely disfigured, Hegseth says");
}

TEST_CASE("site files: apnews.json leaves out the 5 trending-bar links: 88 matches, 86 unique") {
  auto page = shared_page("apnews-2026-world-rendered.html");
  if (!page) {
    MESSAGE("skipped: apnews-2026-world-rendered.html not found in " << NEWSDESK_SHARED_PAGES);
    return;
  }
  site_trial t = try_site_file(testing::sites_dir() / "apnews.json", *page);
  CHECK(t.link_matches == 88);
  CHECK(t.duplicates == 2);
  REQUIRE(t.headlines.size() == 86);
  headline lead{"Iran targets Gulf States as US warns its campaign will intensify",
                "https://apnews.com/article/iran-israel-us-march-7-2026-"
                "d347fd6a03185f51d670bf4e7cbf5373",
                "apnews"};
  lead.image = "https://dims.apnews.com/dims4/default/9221363/2147483647/strip/true/crop/"
               "6000x4000+0+0/resize/727x485!/quality/90/?url=https%3A%2F%2Fassets.apnews.com%2F"
               "08%2F8a%2F35561e27d4fa5abb2d40952f115f%2F27163be6167144b3b24f48c8ffa22228";
  CHECK(t.headlines[0] == lead);
  CHECK(t.headlines[85].title == "2 pilots killed in Indian fighter jet crash");
  CHECK(!has_title(t.headlines, "Iran war"));
  CHECK(!has_title(t.headlines, "Michigan tornado"));

  // The same rule without the :not() sees the README's 93 matches and 90 unique links.
  temp_dir dir;
  fs::path without_not =
      dir.write("ap.json", site_json("ap", R"(, "title": "span.PagePromoContentIcons-text")",
                                     ".PagePromo-title > a[href]"));
  site_trial all = try_site_file(without_not, *page, "https://apnews.com/world-news");
  CHECK(all.link_matches == 93);
  CHECK(all.headlines.size() == 90);
  CHECK(has_title(all.headlines, "Iran war"));
}

// --- what a rule extracts --------------------------------------------------------------------

TEST_CASE("site files: the title is the link's text, or the first title match inside it") {
  const std::string html = R"html(<base href="https://example.com/base/">
    <a class=story href="one"><span class=kicker>Live</span> <h3>  One
      headline </h3><h3>second h3</h3></a>
    <a class=story href="/two"><img alt=x></a>
    <a class=story>no href</a>
    <a class=story href="javascript:void(0)">Script</a>
    <a class=story href="https://other.org/three">Story three</a>
    <a class=story href="one">Repeat</a>)html";
  auto plain = run("", html);
  // The kicker is kept apart from the title (issue 28).
  CHECK(titles(plain) == std::vector<std::string>{"One headline second h3", "Story three"});
  CHECK(plain[0].kicker == "Live");
  CHECK(plain[0].url == "https://example.com/base/one");
  CHECK(plain[0].site == "t");

  auto with_title = run(R"(, "title": "h3")", html);
  CHECK(titles(with_title) == std::vector<std::string>{"One headline"});
}

TEST_CASE("site files: several rules merge in page order, duplicates dropped by URL") {
  // Two kinds of headline markup on one page (as NYT 2016 had): each rule finds one kind.
  const std::string file = R"({"name": "t", "url": "https://example.com/", "rules": [
      {"link": ".story-heading > a"},
      {"link": "a.story-link", "title": ".story-heading"}]})";
  const std::string html = R"html(
    <h2 class=story-heading><a href="/a">First, kind one</a></h2>
    <a class=story-link href="/b"><h2 class=story-heading>Second, kind two</h2><p>summary</p></a>
    <h2 class=story-heading><a href="/c">Third, kind one</a></h2>
    <a class=story-link href="/a"><h2 class=story-heading>Duplicate of the first</h2></a>
    <a class=story-link href="/d"><h2 class=story-heading>Fifth, kind two</h2></a>)html";
  auto got = parse_site_file(file, "t.json")->parse(html, "https://example.com/");
  CHECK(titles(got) == std::vector<std::string>{"First, kind one", "Second, kind two",
                                                "Third, kind one", "Fifth, kind two"});
  CHECK(got[1].url == "https://example.com/b");
}

TEST_CASE("site files: :has() picks links by what they hold, :scope anchors the title") {
  const std::string html = R"(<a href="/a"><h3>Headline A</h3><span>kicker</span></a>
                              <a href="/b">Just a link</a>
                              <a href="/c"><div><h3>Nested heading</h3></div></a>)";
  const std::string file = R"json({"name": "t", "url": "https://example.com/",
                                   "link": "a:has(h3)", "title": ":scope > h3"})json";
  auto got = parse_site_file(file, "t.json")->parse(html, "https://example.com/");
  // /c holds an h3 (so :has matches) but not as a child (so the title does not), and is skipped.
  CHECK(titles(got) == std::vector<std::string>{"Headline A"});
}

TEST_CASE("site files: title_fallback takes the link's own text when the title matches nothing") {
  const std::string html = R"(<a class=story href="/a"><h3>With a heading</h3></a>
                              <a class=story href="/b">Only link text</a>)";
  CHECK(titles(run(R"(, "title": "h3")", html)) == std::vector<std::string>{"With a heading"});
  CHECK(titles(run(R"(, "title": "h3", "title_fallback": true)", html)) ==
        std::vector<std::string>{"With a heading", "Only link text"});
}

TEST_CASE("site files: name and url are enough for a page site; the rest is derived") {
  auto s = parse_site_file(
      R"({"name": "hacker_news", "url": "https://news.example/", "link": "a"})", "sites/hn.json");
  CHECK(s->site().display_name == "Hacker News");
  CHECK(s->site().colour.size() == 7);
  CHECK(s->site().colour[0] == '#');
  // The same name gives the same colour every time.
  CHECK(parse_site_file(R"({"name": "hacker_news", "url": "https://x.example/", "link": "a"})",
                        "other.json")
            ->site()
            .colour == s->site().colour);
}

namespace {
// A front page of story cards, as detection sees many.
std::string cards_page() {
  std::string html = "<html><body><nav><a href='/world'>World</a></nav><main>";
  for (int i = 0; i < 6; ++i)
    html += "<div class=card><h3><a href='/2026/11/24/a-story-about-thing-" + std::to_string(i) +
            "'>A story about thing number " + std::to_string(i) + "</a></h3></div>";
  return html + "</main></body></html>";
}
} // namespace

TEST_CASE("site files: a file with only a name and a URL finds headlines by detection") {
  auto s = parse_site_file(R"({"name": "plain", "url": "https://news.example/"})", "plain.json");
  std::string note = "stale";
  auto got = s->parse(cards_page(), "https://news.example/", &note);
  REQUIRE(got.size() == 6);
  CHECK(got[0].title == "A story about thing number 0");
  CHECK(note.empty()); // detection is this file's rule, not a fallback
  CHECK(error_for(R"({"name": "x", "url": "https://x.org/", "title": "h3"})") ==
        "sites/x.json: title: only with a top-level link (or inside rules)");
}

TEST_CASE("site files: selectors that match nothing fall back to detection, with a note") {
  auto s = parse_site_file(
      R"({"name": "old", "url": "https://news.example/", "link": "a.storylink"})", "old.json");
  std::string note;
  auto got = s->parse(cards_page(), "https://news.example/", &note);
  CHECK(got.size() == 6);
  CHECK(note == "found by detection; the selectors matched nothing");
  // Selectors that work leave no note.
  auto works = parse_site_file(
      R"({"name": "new", "url": "https://news.example/", "link": ".card a"})", "new.json");
  CHECK(works->parse(cards_page(), "https://news.example/", &note).size() == 6);
  CHECK(note.empty());
}

TEST_CASE("site files: a feed site reads its feed, through the feed renderer") {
  auto s = parse_site_file(R"({"name": "blog", "feed": "https://blog.example/feed.xml"})",
                           "sites/blog.json");
  CHECK(s->site().url == "https://blog.example/feed.xml");
  CHECK(s->site().renderer == "feed");
  CHECK(s->site().display_name == "Blog");
  const std::string rss = R"(<?xml version="1.0"?><rss version="2.0"><channel><title>Blog</title>
    <item><title>A post</title><link>/2026/a-post</link></item></channel></rss>)";
  auto got = s->parse(rss, "https://blog.example/feed.xml");
  REQUIRE(got.size() == 1);
  CHECK(got[0].title == "A post");
  CHECK(got[0].url == "https://blog.example/2026/a-post");
  CHECK(got[0].site == "blog");
}

TEST_CASE("site files: a headline's language is the file's, else the page's <html lang> or the "
          "feed's <language>") {
  const std::string html = R"(<html lang="de-AT"><body><a class="story" href="/a">Erdbeben in )"
                           R"(der Osttürkei</a></body></html>)";
  auto found = run("", html);
  REQUIRE(found.size() == 1);
  CHECK(found[0].language == "de-AT");
  found = run(R"(, "language": "de")", html);
  REQUIRE(found.size() == 1);
  CHECK(found[0].language == "de");
  CHECK(run("",
            R"(<html><body><a class="story" href="/a">Erdbeben in der Osttürkei</a></body></html>)")
            .at(0)
            .language.empty());

  const std::string rss = R"(<?xml version="1.0"?><rss version="2.0"><channel><title>Blog</title>
    <language>pt-BR</language>
    <item><title>Um post</title><link>/2026/um-post</link></item></channel></rss>)";
  auto feed = parse_site_file(R"({"name": "blog", "feed": "https://blog.example/feed.xml"})",
                              "sites/blog.json");
  CHECK(feed->parse(rss, "https://blog.example/feed.xml").at(0).language == "pt-BR");
  auto declared = parse_site_file(
      R"({"name": "blog", "feed": "https://blog.example/feed.xml", "language": "pt-PT"})",
      "sites/blog.json");
  CHECK(declared->site().language == "pt-PT");
  CHECK(declared->parse(rss, "https://blog.example/feed.xml").at(0).language == "pt-PT");
}

TEST_CASE("site files: a feed site may name its home page in url; only the feed is fetched") {
  auto s = parse_site_file(R"({"name": "blog", "feed": "https://feeds.example/blog.xml",
                               "url": "https://blog.example/"})",
                           "sites/blog.json");
  CHECK(s->site().url == "https://feeds.example/blog.xml"); // what the feed renderer fetches
  CHECK(s->site().home_url == "https://blog.example/");
  CHECK(s->site().renderer == "feed");
  // Without it, there is no separate home page.
  CHECK(parse_site_file(R"({"name": "blog", "feed": "https://feeds.example/blog.xml"})",
                        "sites/blog.json")
            ->site()
            .home_url.empty());
  // A page site's url is its page, never a home_url.
  CHECK(parse_site_file(R"({"name": "p", "url": "https://p.example/"})", "p.json")
            ->site()
            .home_url.empty());
}

TEST_CASE("site files: url_attribute reads the URL from another attribute") {
  auto got =
      run(R"(, "url_attribute": "data-href")",
          R"(<div class=story data-href="/x">Story X</div><a class=story href="/y">Story Y</a>)",
          "https://example.com/");
  CHECK(got.empty()); // the link selector is a.story; the div is not matched
  got =
      parse_site_file(site_json("t", R"(, "url_attribute": "data-HREF")", ".story"), "t.json")
          ->parse(
              R"(<div class=story data-href="/x">Story X</div><a class=story href="/y">Story Y</a>)",
              "https://example.com/");
  REQUIRE(got.size() == 1);
  CHECK(got[0].url == "https://example.com/x");
}

TEST_CASE("site files: include needs every given kind, exclude any one test") {
  const std::string html = R"(
    <a class=story href="/world/a.html">Story A</a>
    <a class=story href="/world/b">Story B</a>
    <a class=story href="/sport/c.html">Story C</a>
    <a class=story href="/world/live/d.html">Story D</a>
    <a class=story href="https://cdn.example.com/world/e.html">Story E</a>)";
  auto got = run(R"(, "include": {"prefix": ["https://example.com/world/", "https://x/"],
                                  "suffix": [".html"]})",
                 html);
  CHECK(titles(got) == std::vector<std::string>{"Story A", "Story D"});
  got = run(R"(, "include": {"contains": ["/world/"]}, "exclude": {"contains": ["/live/"]})", html);
  CHECK(titles(got) == std::vector<std::string>{"Story A", "Story B", "Story E"});
  got =
      run(R"(, "include": {"regex": "^https://example\\.com/(world|sport)/[a-z]\\.html$"})", html);
  CHECK(titles(got) == std::vector<std::string>{"Story A", "Story C"});
  got = run(R"(, "exclude": {"prefix": ["https://cdn."], "regex": "/[bc]"})", html);
  CHECK(titles(got) == std::vector<std::string>{"Story A", "Story D"});
  // Filters see the resolved URL, not the href as written.
  got = run(R"(, "include": {"prefix": ["/world/"]})", html);
  CHECK(got.empty());
}

TEST_CASE("site files: URLs longer than the filter limit are dropped when filters exist") {
  std::string long_path(max_filtered_url_bytes, 'x');
  std::string html = "<a class=story href=\"/" + long_path +
                     "\">Long one</a><a class=story "
                     "href=\"/short\">Short one</a>";
  CHECK(titles(run("", html)) == std::vector<std::string>{"Long one", "Short one"});
  CHECK(titles(run(R"(, "exclude": {"contains": ["nothing"]})", html)) ==
        std::vector<std::string>{"Short one"});
}

TEST_CASE("site files: try_site_file counts why links were left out") {
  temp_dir dir;
  fs::path file = dir.write("t.json", site_json("t", R"(, "title": "b",
                                                       "exclude": {"suffix": ["/skip"]})"));
  site_trial t = try_site_file(file, R"(<a class=story href="/1"><b>Story one</b></a>
      <a class=story href="/1"><b>Story again</b></a> <a class=story><b>No URL</b></a>
      <a class=story href="/2">no b</a> <a class=story href="/skip"><b>Story skipped</b></a>
      <a class=story href="/3"><b>Video</b></a>)");
  CHECK(t.site.name == "t");
  CHECK(t.link_matches == 6);
  CHECK(t.without_url == 1);
  CHECK(t.without_title == 1);
  CHECK(t.filtered_out == 1);
  CHECK(t.duplicates == 1);
  CHECK(t.bad_titles == 1);
  REQUIRE(t.headlines.size() == 1);
  // Each one is listed with its reason, in page order.
  std::vector<std::string> reasons;
  for (const auto& l : t.left_out)
    reasons.push_back(l.reason);
  CHECK(reasons ==
        std::vector<std::string>{"duplicate: the same URL is already a headline", "no usable URL",
                                 "bad title: the title selector found no text",
                                 "filtered out by include/exclude", "bad title: one word"});
  CHECK(t.left_out.back().title == "Video");
  CHECK(t.left_out.back().url == "https://example.com/3");
  // With no page URL given, the site's own url is the base.
  CHECK(t.headlines[0].url == "https://example.com/1");
  CHECK(try_site(file, R"(<a class=story href="/1"><b>Story x</b></a>)", "https://x.org/a/")
            .at(0)
            .url == "https://x.org/1");
}

TEST_CASE("site files: a link selector matching boxes around links says how to fix it") {
  temp_dir dir;
  auto file = dir.write("t.json", R"({"name": "t", "url": "https://example.com/",
                                       "link": "h3.title"})");
  const std::string html = R"(<h3 class=title><a href="/a">Story A</a></h3>
                              <h3 class=title><a href="/b">Story B</a></h3>)";
  auto trial = try_site_file(file, html);
  CHECK(trial.headlines.empty());
  CHECK(trial.hint == "link: 'h3.title' matched 2 elements but none is a link (an <a href>); "
                      "they contain links: try 'h3.title a'");
  auto fixed = dir.write("f.json", R"({"name": "f", "url": "https://example.com/",
                                       "link": "h3.title a"})");
  auto good = try_site_file(fixed, html);
  CHECK(good.headlines.size() == 2);
  CHECK(good.hint.empty());
}

TEST_CASE("site files: the site info comes from the file") {
  auto s =
      parse_site_file(site_json("my-site_2", R"(, "wait": 1.5, "timeout": 20, "renderer": "splash",
                                "comment": "anything")"),
                      "my.json");
  const site_info& info = s->site();
  CHECK(info.name == "my-site_2");
  CHECK(info.display_name == "Example");
  CHECK(info.url == "https://example.com/");
  CHECK(info.colour == "#123456");
  CHECK(info.wait_seconds == 1.5);
  CHECK(info.timeout_seconds == 20);
  CHECK(info.renderer == "splash");
  CHECK(info.origin == "my.json");
  for (const char* renderer : {"splash", "chromium", "browserless", "direct"}) {
    CAPTURE(renderer);
    auto asks = parse_site_file(site_json("r", std::string(R"(, "renderer": ")") + renderer + "\""),
                                "r.json");
    CHECK(asks->site().renderer == renderer);
  }
  auto in_section = parse_site_file(site_json("w", R"(, "section": "  World  news ")"), "w.json");
  CHECK(in_section->site().section == "World news");
  auto bare = parse_site_file(site_json("b"), "b.json");
  CHECK(bare->site().section.empty());
  CHECK(!bare->site().wait_seconds);
  CHECK(!bare->site().timeout_seconds);
  CHECK(!bare->site().renderer);
}

// --- validation ------------------------------------------------------------------------------

TEST_CASE("site files: every validation error names the file, the field and the problem") {
  const std::string v = R"("name": "x", "display_name": "X", "url": "https://x.org/",
                           "colour": "#abc", "link": "a")";
  struct row {
    std::string text;
    std::string message;
  };
  const std::vector<row> rows{
      {"{" + v + ", \"colour \": 1}",
       "sites/x.json: colour : unknown field (known: name, display_name, url, feed, colour, wait, "
       "timeout, renderer, rules, link, title, title_fallback, url_attribute, include, exclude, "
       "comment, section, language)"},
      {"{" + v + ", \"section\": \"\"}",
       "sites/x.json: section: expected 1-40 bytes of text, got \"\""},
      {"{" + v + ", \"section\": \"" + std::string(41, 's') + "\"}",
       "sites/x.json: section: expected 1-40 bytes of text, got \"" + std::string(41, 's') + "\""},
      {"{" + v + ", \"language\": \"German\"}",
       "sites/x.json: language: expected a language tag such as \"de\", \"pt-BR\" or "
       "\"zh-Hant\", got \"German\""},
      {"{" + v + ", \"language\": 7}", "sites/x.json: language: expected a string, got number 7"},
      {R"({"display_name": "X", "url": "https://x.org/", "colour": "#abc", "link": "a"})",
       "sites/x.json: name: missing (required)"},
      {R"({"name": "x", "link": "a"})",
       "sites/x.json: url: missing: give the page's url (or a feed)"},
      {R"({"name": "x", "url": "https://x.org/", "link": "a", "rules": [{"link": "a"}]})",
       "sites/x.json: rules: give either rules or a top-level link, not both"},
      {R"({"name": "x", "url": "https://x.org/", "rules": []})",
       "sites/x.json: rules: expected an array of 1 to 20 rules {\"link\": ..., \"title\": ...}, "
       "got an array"},
      {R"({"name": "x", "url": "https://x.org/", "rules": [{"link": "a"}, {"title": "h3"}]})",
       "sites/x.json: rules[1].link: missing (required)"},
      {R"({"name": "x", "url": "https://x.org/", "rules": [{"link": "a", "colour": "#fff"}]})",
       "sites/x.json: rules[0].colour: unknown field (known: link, title, title_fallback, "
       "url_attribute, include, exclude)"},
      {R"({"name": "x", "url": "https://x.org/", "rules": [{"link": "a["}]})",
       "sites/x.json: rules[0].link: bad selector \"a[\" at column 3: expected attribute name"},
      {R"({"name": "x", "url": "https://x.org/", "link": "a", "title_fallback": "yes"})",
       "sites/x.json: title_fallback: expected true or false, got string \"yes\""},
      {R"({"name": "x", "feed": "https://x.org/rss", "link": "a"})",
       "sites/x.json: link: not for a feed: a feed's items are its headlines"},
      {R"({"name": "x", "feed": "https://x.org/rss", "url": "x.org"})",
       "sites/x.json: url: expected the site's home page as an absolute http:// or https:// "
       "URL, got \"x.org\""},
      {R"({"name": "x", "feed": "ftp://x.org/rss"})",
       "sites/x.json: feed: expected an absolute http:// or https:// URL, got \"ftp://x.org/rss\""},
      {R"({"name": "x", "feed": "https://x.org/rss", "renderer": "splash"})",
       "sites/x.json: renderer: a feed is read by the feed renderer, got \"splash\""},
      {"{" + v + ", \"name\": 7}", "sites/x.json: name: expected a string, got number 7"},
      {"{" + v + ", \"name\": \"BBC\"}",
       "sites/x.json: name: expected 1-64 characters of a-z, 0-9, _ and -, got \"BBC\""},
      {"{" + v + ", \"name\": \"\"}",
       "sites/x.json: name: expected 1-64 characters of a-z, 0-9, _ and -, got \"\""},
      {"{" + v + ", \"name\": \"" + std::string(65, 'a') + "\"}",
       "sites/x.json: name: expected 1-64 characters of a-z, 0-9, _ and -, got \"" +
           std::string(65, 'a') + "\""},
      {"{" + v + ", \"display_name\": \"  \"}", "sites/x.json: display_name: must not be empty"},
      {"{" + v + ", \"url\": \"ftp://x.org/\"}",
       "sites/x.json: url: expected an absolute http:// or https:// URL, got \"ftp://x.org/\""},
      {"{" + v + ", \"url\": \"/news\"}",
       "sites/x.json: url: expected an absolute http:// or https:// URL, got \"/news\""},
      {"{" + v + ", \"colour\": \"red\"}",
       "sites/x.json: colour: expected #rgb or #rrggbb, got \"red\""},
      {"{" + v + ", \"colour\": \"#12345g\"}",
       "sites/x.json: colour: expected #rgb or #rrggbb, got \"#12345g\""},
      {"{" + v + ", \"wait\": \"1\"}",
       "sites/x.json: wait: expected a number of seconds, got string \"1\""},
      {"{" + v + ", \"wait\": -1}", "sites/x.json: wait: expected seconds from 0 to 3600"},
      {"{" + v + ", \"timeout\": 0}",
       "sites/x.json: timeout: expected seconds above 0, at most 3600"},
      {"{" + v + ", \"wait\": 5, \"timeout\": 5}", "sites/x.json: wait: must be below timeout"},
      {"{" + v + ", \"renderer\": \"chrome\"}",
       "sites/x.json: renderer: expected one of splash, chromium, browserless, direct, feed, got "
       "\"chrome\""},
      {"{" + v + ", \"link\": \"a[\"}",
       "sites/x.json: link: bad selector \"a[\" at column 3: expected attribute name"},
      {"{" + v + ", \"link\": [\"a\"]}", "sites/x.json: link: expected a string, got an array"},
      {"{" + v + ", \"title\": \"h2 + p\"}",
       "sites/x.json: title: bad selector \"h2 + p\" at column 4: unsupported combinator '+'"},
      {"{" + v + ", \"url_attribute\": \"data href\"}",
       "sites/x.json: url_attribute: expected an attribute name, got \"data href\""},
      {"{" + v + ", \"include\": [\"/news\"]}",
       "sites/x.json: include: expected an object with prefix, suffix, contains or regex, got an "
       "array"},
      {"{" + v + ", \"include\": {\"prefixes\": []}}",
       "sites/x.json: include.prefixes: unknown field (known: prefix, suffix, contains, regex)"},
      {"{" + v + ", \"include\": {\"prefix\": \"/news\"}}",
       "sites/x.json: include.prefix: expected an array of strings, got string \"/news\""},
      {"{" + v + ", \"exclude\": {\"contains\": [\"a\", 2]}}",
       "sites/x.json: exclude.contains[1]: expected a string, got number 2"},
      {"{" + v + ", \"exclude\": {\"suffix\": [\"\"]}}",
       "sites/x.json: exclude.suffix[0]: must not be empty"},
      {"{" + v + ", \"include\": {\"regex\": \"\"}}",
       "sites/x.json: include.regex: must not be empty"},
      {"{" + v + ", \"include\": {\"regex\": \"" + std::string(257, 'a') + "\"}}",
       "sites/x.json: include.regex: longer than 256 characters"},
      {"{" + v + ", \"comment\": {}}", "sites/x.json: comment: expected a string, got an object"},
      {"[1, 2]", "sites/x.json: expected a JSON object { ... }, got an array"},
  };
  for (const row& r : rows) {
    CAPTURE(r.text);
    CHECK(error_for(r.text) == r.message);
  }
  // Messages from the JSON and regex libraries are passed on after the file and field.
  CHECK(
      error_for("").starts_with("sites/x.json: not valid JSON: parse error at line 1, column 1:"));
  CHECK(error_for("{\"name\": \"x\", \"link\": tru}")
            .starts_with("sites/x.json: not valid JSON: parse error at line 1, column 26:"));
  // A trailing comma is named where it is, not at the '}' a line later.
  CHECK(error_for("{\n  \"name\": \"x\",\n  \"link\": \"a\",\n}\n") ==
        "sites/x.json: not valid JSON: line 3, column 14: trailing comma before '}' (JSON allows "
        "none: remove it)");
  CHECK(error_for("{\"name\": \"x\", \"rules\": [{\"link\": \"a\"},\n ]}") ==
        "sites/x.json: not valid JSON: line 1, column 38: trailing comma before ']' (JSON allows "
        "none: remove it)");
  // A missing comma is named after the value it should follow.
  CHECK(error_for("{\n  \"name\": \"x\"\n  \"link\": \"a\"\n}") ==
        "sites/x.json: not valid JSON: line 2, column 14: missing ',' after this value");
  std::string bad_regex = error_for("{" + v + ", \"exclude\": {\"regex\": \"(unclosed\"}}");
  CHECK(bad_regex.starts_with("sites/x.json: exclude.regex: bad regex \"(unclosed\": "));

  try {
    parse_site_file("{" + v + ", \"link\": \"a[\"}", "sites/x.json");
    FAIL("no error");
  } catch (const site_file_error& e) {
    CHECK(e.file() == "sites/x.json");
    CHECK(e.field() == "link");
    CHECK(e.reason() == "bad selector \"a[\" at column 3: expected attribute name");
  }
}

TEST_CASE("site files: unreadable and oversized files are errors naming the file") {
  temp_dir dir;
  CHECK_THROWS_WITH_AS(load_site_file(dir.path() / "missing.json"),
                       doctest::Contains("missing.json: cannot read: "), site_file_error);
  fs::path big =
      dir.write("big.json", site_json("big", ", \"comment\": \"" +
                                                 std::string(max_site_file_bytes, ' ') + "\""));
  CHECK_THROWS_WITH_AS(load_site_file(big),
                       (big.string() + ": larger than 65536 bytes (" +
                        std::to_string(fs::file_size(big)) + "); is this a site file?")
                           .c_str(),
                       site_file_error);
  fs::path ok = dir.write("ok.json", site_json("ok"));
  CHECK(load_site_file(ok)->site().name == "ok");
}

// --- folders ---------------------------------------------------------------------------------

TEST_CASE("site files: a folder loads in name order; other files are ignored") {
  temp_dir dir;
  dir.write("b.json", site_json("second"));
  dir.write("a.json", site_json("first"));
  dir.write("notes.txt", "not a site file");
  dir.write(".#a.json", "{ editor lock file");
  fs::create_directories(dir.path() / "sub.json");
  dir.write("sub.json/c.json", "{ not read: subfolders are not searched");
  registry r;
  load_site_folder(dir.path(), r);
  REQUIRE(r.size() == 2);
  CHECK(r.find("first")->site().origin == (dir.path() / "a.json").string());
  CHECK(r.find("second")->site().origin == (dir.path() / "b.json").string());
  CHECK(check_site_folder(dir.path()).empty());
}

TEST_CASE("site files: a site file added to the folder is there on the next load") {
  // What a restart (or reload) of the service does: a fresh registry from built-ins + folder.
  temp_dir dir;
  auto load = [&] {
    registry r;
    register_builtin_scrapers(r);
    load_site_folder(dir.path(), r);
    return r;
  };
  std::size_t before = load().size();
  CHECK(!load().find("example"));
  dir.write("example.json", site_json("example"));
  registry after = load();
  CHECK(after.size() == before + 1);
  REQUIRE(after.find("example") != nullptr);
  CHECK(after.find("example")->parse(R"(<a class=story href="/n">Latest news</a>)",
                                     "https://example.com/") ==
        std::vector<headline>{{"Latest news", "https://example.com/n", "example"}});
}

TEST_CASE("site files: the first error in a folder stops loading; names clash loudly") {
  temp_dir dir;
  dir.write("a.json", site_json("first"));
  dir.write("b.json", "{}");
  dir.write("c.json", site_json("third"));
  registry r;
  CHECK_THROWS_WITH_AS(load_site_folder(dir.path(), r),
                       ((dir.path() / "b.json").string() + ": name: missing (required)").c_str(),
                       site_file_error);
  CHECK(r.find("first") != nullptr);
  CHECK(r.find("third") == nullptr);

  temp_dir clash;
  clash.write("cnn.json", site_json("cnn"));
  registry with_builtins;
  register_builtin_scrapers(with_builtins);
  CHECK_THROWS_WITH_AS(load_site_folder(clash.path(), with_builtins),
                       ((clash.path() / "cnn.json").string() +
                        ": name: \"cnn\" is already taken by the built-in scraper CNN "
                        "(scrapers/sites/cnn.cpp)")
                           .c_str(),
                       site_file_error);

  temp_dir twins;
  twins.write("one.json", site_json("same"));
  twins.write("two.json", site_json("same"));
  registry empty;
  CHECK_THROWS_WITH_AS(load_site_folder(twins.path(), empty),
                       ((twins.path() / "two.json").string() +
                        ": name: \"same\" is already taken by " +
                        (twins.path() / "one.json").string())
                           .c_str(),
                       site_file_error);

  registry none;
  CHECK_THROWS_WITH_AS(load_site_folder(dir.path() / "nope", none),
                       ((dir.path() / "nope").string() + ": no such folder").c_str(),
                       site_file_error);
}

TEST_CASE("site files: check_site_folder reports every error, in file order") {
  temp_dir dir;
  dir.write("a.json", site_json("fine"));
  dir.write("b.json", site_json("bad", "", "a:hover"));
  dir.write("c.json", "{\"name\": ");
  dir.write("d.json", site_json("aljazeera"));
  dir.write("e.json", site_json("fine"));
  dir.write("f.json", site_json("also_fine"));
  std::vector<std::string> errors = check_site_folder(dir.path());
  REQUIRE(errors.size() == 4);
  CHECK(errors[0] == (dir.path() / "b.json").string() +
                         ": link: bad selector \"a:hover\" at column 2: unsupported pseudo-class "
                         "':hover'");
  CHECK(errors[1].starts_with((dir.path() / "c.json").string() + ": not valid JSON: "));
  CHECK(errors[2] == (dir.path() / "d.json").string() +
                         ": name: \"aljazeera\" is already taken by the built-in scraper Al "
                         "Jazeera (scrapers/sites/aljazeera.cpp)");
  CHECK(errors[3] == (dir.path() / "e.json").string() + ": name: \"fine\" is already taken by " +
                         (dir.path() / "a.json").string());
  CHECK(check_site_folder(dir.path() / "missing") ==
        std::vector<std::string>{(dir.path() / "missing").string() + ": no such folder"});
}

TEST_CASE("site files: a number too large for a double is a site_file_error, not a crash") {
  // Found by fuzz/fuzz_site_file: nlohmann throws out_of_range (not parse_error) for it.
  CHECK_THROWS_WITH_AS(parse_site_file("4444E44444444444444444444444", "sites/x.json"),
                       "sites/x.json: not valid JSON: number overflow parsing "
                       "'4444E44444444444444444444444'",
                       site_file_error);
  CHECK_THROWS_AS(parse_site_file(R"({"name": "x", "wait": 1e999})", "sites/x.json"),
                  site_file_error);
}

#include "scrapers/feed.hpp"
#include "scrapers/headlines.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

using namespace newsdesk::scrapers;

namespace {

std::vector<std::string> titles(const feed& f) {
  std::vector<std::string> out;
  for (const auto& h : f.headlines)
    out.push_back(h.title);
  return out;
}

std::string error_of(std::string_view bytes) {
  try {
    parse_feed(bytes, "https://example.com/feed");
  } catch (const feed_error& e) {
    return e.what();
  }
  return "(no error)";
}

} // namespace

TEST_CASE("feeds: RSS 2.0 items in order, links resolved, guid as a permalink") {
  auto f = parse_feed(R"(<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0"><channel>
  <title>Example News</title><link>https://example.com/</link>
  <item><title>First story</title><link>https://example.com/2026/first</link></item>
  <item><title>  Second
     story </title><link>/2026/second</link></item>
  <item><title>Guid only</title><guid>https://example.com/2026/guid</guid></item>
  <item><title>Not a permalink</title><guid isPermaLink="false">tag:example,1</guid></item>
  <item><title>First story again</title><link>https://example.com/2026/first</link></item>
</channel></rss>)",
                      "https://example.com/feed.xml", "ex");
  CHECK(f.title == "Example News");
  CHECK(f.home == "https://example.com/");
  CHECK(titles(f) == std::vector<std::string>{"First story", "Second story", "Guid only"});
  CHECK(f.headlines[1].url == "https://example.com/2026/second");
  CHECK(f.headlines[0].site == "ex");
}

TEST_CASE("feeds: RSS's channel <language> and RSS 1.0's <dc:language> are read as given") {
  auto rss = parse_feed(R"(<?xml version="1.0"?><rss version="2.0"><channel><title>T</title>
    <language> fr-FR </language><item><title>Un séisme</title><link>https://x.fr/1</link></item>
    </channel></rss>)",
                        "https://x.fr/feed.xml");
  CHECK(rss.language == "fr-FR");
  auto rdf = parse_feed(R"(<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/"
         xmlns:dc="http://purl.org/dc/elements/1.1/">
  <channel rdf:about="https://x.de/"><title>T</title><dc:language>de</dc:language></channel>
  <item rdf:about="https://x.de/1"><title>Erdbeben</title><link>https://x.de/1</link></item>
</rdf:RDF>)",
                        "https://x.de/feed.rdf");
  CHECK(rdf.language == "de");
  CHECK(parse_feed(R"(<rss version="2.0"><channel><title>T</title></channel></rss>)", "https://x/")
            .language.empty());
}

TEST_CASE("feeds: a site's page holds at most max_headlines_per_site; items past it are not read") {
  auto rss = [](const std::string& items) {
    return "<rss version=\"2.0\"><channel><title>Many</title>" + items + "</channel></rss>";
  };
  std::string distinct;
  for (int i = 0; i < 3 * static_cast<int>(max_headlines_per_site); ++i)
    distinct += "<item><title>Story " + std::to_string(i) + "</title><link>/s/" +
                std::to_string(i) + "</link></item>";
  auto f = parse_feed(rss(distinct), "https://example.com/feed.xml", "ex");
  REQUIRE(f.headlines.size() == max_headlines_per_site);
  CHECK(f.headlines.front().title == "Story 0");
  CHECK(f.headlines.back().title == "Story " + std::to_string(max_headlines_per_site - 1));

  // Repeated links count towards the bound on items read: a hostile feed of ten times that many
  // repeats hides what follows.
  std::string repeated;
  for (int i = 0; i < 10 * static_cast<int>(max_headlines_per_site); ++i)
    repeated += "<item><title>Same</title><link>/same</link></item>";
  auto g = parse_feed(rss(repeated + "<item><title>Late</title><link>/late</link></item>"),
                      "https://example.com/feed.xml", "ex");
  CHECK(titles(g) == std::vector<std::string>{"Same"});
}

TEST_CASE("feeds: RSS 1.0 (RDF) items beside the channel") {
  auto f = parse_feed(R"(<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/">
  <channel rdf:about="https://example.org/"><title>RDF site</title><link>https://example.org/</link></channel>
  <item rdf:about="https://example.org/a"><title>Item A</title><link>https://example.org/a</link></item>
  <item rdf:about="https://example.org/b"><title>Item B</title></item>
</rdf:RDF>)",
                      "https://example.org/index.rdf");
  CHECK(f.title == "RDF site");
  CHECK(titles(f) == std::vector<std::string>{"Item A", "Item B"});
  CHECK(f.headlines[1].url == "https://example.org/b");
}

TEST_CASE("feeds: Atom 1.0 with xml:base, alternate links and an HTML title") {
  auto f = parse_feed(R"(<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xml:base="https://example.net/blog/">
  <title>Atom blog</title>
  <link rel="self" href="https://example.net/atom.xml"/>
  <link href="https://example.net/"/>
  <entry><title>Plain entry</title><link rel="alternate" href="posts/1"/></entry>
  <entry><title type="html">&lt;b&gt;Bold&lt;/b&gt; entry</title>
    <link rel="edit" href="https://example.net/edit/2"/><link href="/posts/2"/></entry>
  <entry xml:base="https://other.example/"><title>Own base</title><link href="x"/></entry>
</feed>)",
                      "https://example.net/atom.xml");
  CHECK(f.title == "Atom blog");
  CHECK(f.home == "https://example.net/");
  CHECK(titles(f) == std::vector<std::string>{"Plain entry", "Bold entry", "Own base"});
  CHECK(f.headlines[0].url == "https://example.net/blog/posts/1");
  CHECK(f.headlines[1].url == "https://example.net/posts/2");
  CHECK(f.headlines[2].url == "https://other.example/x");
}

TEST_CASE("feeds: encodings: undeclared Latin-1, declared ISO-8859-1, UTF-8") {
  // "Café" in Latin-1 bytes, with no XML declaration: read as Latin-1, not refused.
  auto latin1 = parse_feed("<rss><channel><item><title>Caf\xE9 cr\xE8me</title>"
                           "<link>https://e.com/a</link></item></channel></rss>",
                           "https://e.com/feed");
  REQUIRE(latin1.headlines.size() == 1);
  CHECK(latin1.headlines[0].title == "Caf\xC3\xA9 cr\xC3\xA8me");
  auto declared = parse_feed("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><rss><channel><item>"
                             "<title>\xC9lys\xE9\x65</title><link>https://e.com/b</link></item>"
                             "</channel></rss>",
                             "https://e.com/feed");
  CHECK(declared.headlines.at(0).title == "\xC3\x89lys\xC3\xA9\x65");
  auto utf8 = parse_feed("<rss><channel><item><title>\xC3\x89lys\xC3\xA9\x65</title>"
                         "<link>https://e.com/c</link></item></channel></rss>",
                         "https://e.com/feed");
  CHECK(utf8.headlines.at(0).title == "\xC3\x89lys\xC3\xA9\x65");
}

TEST_CASE("feeds: CDATA, predefined and numeric entities; HTML named entities do not fail it") {
  auto f = parse_feed(R"(<rss><channel>
    <item><title><![CDATA[Tom & Jerry <3]]></title><link>https://e.com/1</link></item>
    <item><title>Fish &amp; chips &#8212; &#x2014; &lt;ok&gt;</title><link>https://e.com/2?a=1&amp;b=2</link></item>
  </channel></rss>)",
                      "https://e.com/feed");
  CHECK(titles(f) ==
        std::vector<std::string>{"Tom & Jerry <3", "Fish & chips \xE2\x80\x94 \xE2\x80\x94 <ok>"});
  CHECK(f.headlines[1].url == "https://e.com/2?a=1&b=2");
  // &eacute; is not XML: the reference is dropped, the feed still read.
  auto html_entity = parse_feed("<rss><channel><item><title>Caf&eacute; news</title>"
                                "<link>https://e.com/3</link></item></channel></rss>",
                                "https://e.com/feed");
  REQUIRE(html_entity.headlines.size() == 1);
  CHECK(html_entity.headlines[0].url == "https://e.com/3");
}

TEST_CASE("feeds: what is not a feed gets an error naming what was wrong") {
  CHECK(error_of("<rss><channel><item><title>x</item></channel></rss>").rfind("line 1: ", 0) == 0);
  CHECK(
      error_of("<rss>\n<channel>\n<item><title>x</title>\n</channel></rss>").rfind("line 4: ", 0) ==
      0);
  CHECK(error_of("<!DOCTYPE html><html><body>hi</body></html>") ==
        "not a feed: the root element is <html> (expected <rss>, <rdf:RDF> or Atom's <feed>)");
  CHECK(error_of("<rss version=\"2.0\"></rss>") == "not a feed: <rss> has no <channel>");
  CHECK(error_of("") == "the feed is empty");
  CHECK(error_of("   \n") == "the feed is empty");
  for (std::string garbage : {"\xff\xfe\x00<", "{\"json\": true}", "<", "<rss", "\x00\x01\x02"})
    CHECK(error_of(garbage) != "(no error)");
}

TEST_CASE("feeds: no external entity is read and entity bombs are refused quickly") {
  const std::string xxe = R"(<?xml version="1.0"?>
<!DOCTYPE rss [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<rss><channel><item><title>&secret;</title><link>https://e.com/x</link></item></channel></rss>)";
  auto error = error_of(xxe);
  CHECK(error.find("root:") == std::string::npos);
  CHECK(error == "the feed declares its own entities, which newsdesk does not expand");

  // Each level refers to the previous ten times: three billion characters if expanded.
  std::string bomb = "<?xml version=\"1.0\"?><!DOCTYPE rss [<!ENTITY l0 \"lol\">";
  for (int i = 1; i <= 9; ++i) {
    bomb += "<!ENTITY l" + std::to_string(i) + " \"";
    for (int k = 0; k < 10; ++k)
      bomb += "&l" + std::to_string(i - 1) + ";";
    bomb += "\">";
  }
  bomb += "]><rss><channel><item><title>&l9;</title><link>https://e.com/b</link></item></channel>"
          "</rss>";
  const auto start = std::chrono::steady_clock::now();
  CHECK(error_of(bomb) != "(no error)");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

TEST_CASE("feeds: a feed larger than the limit is refused before parsing") {
  std::string huge(max_feed_bytes + 1, ' ');
  CHECK(error_of(huge) == "the feed is larger than 16 MiB");
}

TEST_CASE("OPML: written lists read back the same, with escaping") {
  const std::vector<opml_outline> feeds{
      {"Tom & Jerry's <news>", "https://e.com/rss?a=1&b=2", "https://e.com/"},
      {"\xC3\x89lys\xC3\xA9\x65 \"quoted\"", "https://f.org/atom.xml", ""}};
  auto text = write_opml("newsdesk sites", feeds);
  CHECK(text.find("<opml version=\"2.0\">") != std::string::npos);
  CHECK(parse_opml(text) == feeds);
}

TEST_CASE("OPML: nested folders flattened in order, outlines without xmlUrl skipped") {
  auto list = parse_opml(R"(<?xml version="1.0"?><opml version="1.0"><head/><body>
    <outline text="Folder">
      <outline text="One" xmlUrl="https://one.example/rss"/>
      <outline text="Sub"><outline title="Two" text="ignored" xmlUrl="https://two.example/rss" htmlUrl="https://two.example/"/></outline>
    </outline>
    <outline text="Three" type="rss" xmlUrl="https://three.example/feed"/>
  </body></opml>)");
  REQUIRE(list.size() == 3);
  CHECK(list[0] == opml_outline{"One", "https://one.example/rss", ""});
  CHECK(list[1] == opml_outline{"Two", "https://two.example/rss", "https://two.example/"});
  CHECK(list[2].feed_url == "https://three.example/feed");
}

TEST_CASE("OPML: errors name what was wrong") {
  auto error = [](std::string_view text) {
    try {
      parse_opml(text);
    } catch (const feed_error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK(error("<rss/>") == "not an OPML list: the root element is <rss>");
  CHECK(error("<opml version=\"2.0\"><head/></opml>") == "not an OPML list: <opml> has no <body>");
  CHECK(error("<opml><body><outline></body></opml>").rfind("line 1: ", 0) == 0);
}

#include "scrapers/feed.hpp"
#include "scrapers/feed_encoding.hpp"
#include "scrapers/feed_xml.hpp"
#include "scrapers/headlines.hpp"
#include "scrapers/html_entities.hpp"

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

// One RSS item titled `title` linking to `link`, in a feed titled `feed_title`.
std::string rss_item(const std::string& title, const std::string& link = "https://e.com/1",
                     const std::string& feed_title = "Feed") {
  return "<rss version=\"2.0\"><channel><title>" + feed_title + "</title><item><title>" + title +
         "</title><link>" + link + "</link></item></channel></rss>";
}

std::string first_title(const std::string& feed_text) {
  auto f = parse_feed(feed_text, "https://e.com/feed");
  return f.headlines.empty() ? "(none)" : f.headlines.front().title;
}

// `text` (ASCII here) in UTF-16 or UTF-32, little- or big-endian, after `bom`.
std::string wide(std::string_view text, int width, bool little, std::string_view bom) {
  std::string out(bom);
  for (char c : text)
    for (int i = 0; i < width; ++i) {
      const int shift = little ? i : width - 1 - i;
      out += shift == 0 ? c : '\0';
    }
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

TEST_CASE("feeds: an item's description or an entry's summary is its summary, as text, capped") {
  std::string long_text;
  for (int i = 0; i < 80; ++i)
    long_text += "word" + std::to_string(i) + " ";
  auto rss = parse_feed(R"(<rss version="2.0"><channel><title>T</title>
    <item><title>Quake hits Chile</title><link>https://x/1</link>
      <description>&lt;p&gt;A magnitude 7.1 quake struck &lt;b&gt;off the coast&lt;/b&gt;
        on Monday.&lt;/p&gt;&lt;img src="https://tracker/x.gif"&gt;</description></item>
    <item><title>Title repeated</title><link>https://x/2</link>
      <description>Title repeated. And then the news itself.</description></item>
    <item><title>Only the title again</title><link>https://x/3</link>
      <description>Only the title again</description></item>
    <item><title>No description</title><link>https://x/4</link></item>
    <item><title>Long one</title><link>https://x/5</link><description>)" +
                            long_text + R"(</description></item>
    </channel></rss>)",
                        "https://x/feed");
  REQUIRE(rss.headlines.size() == 5);
  CHECK(rss.headlines[0].summary == "A magnitude 7.1 quake struck off the coast on Monday.");
  CHECK(rss.headlines[1].summary == "And then the news itself.");
  CHECK(rss.headlines[2].summary.empty());
  CHECK(rss.headlines[3].summary.empty());
  const auto& capped = rss.headlines[4].summary;
  CHECK(capped.size() <= max_summary_bytes);
  CHECK(capped.ends_with("\u2026"));
  CHECK(capped.starts_with("word0 word1 "));
  CHECK(long_text.find(capped.substr(0, capped.size() - 3) + " ") == 0); // cut at a word's end

  auto atom = parse_feed(R"(<feed xmlns="http://www.w3.org/2005/Atom"><title>A</title>
    <entry><title>Entry</title><link href="https://x/a"/>
      <summary type="html">&lt;em&gt;Markup&lt;/em&gt; &amp;amp; text</summary>
      <content type="html">The whole article, which is not a summary.</content></entry>
    <entry><title>Content only</title><link href="https://x/b"/>
      <content>The whole article.</content></entry></feed>)",
                         "https://x/atom");
  REQUIRE(atom.headlines.size() == 2);
  CHECK(atom.headlines[0].summary == "Markup & text");
  CHECK(atom.headlines[1].summary.empty());
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
  // &eacute; is not XML, but HTML's: resolved.
  auto html_entity = parse_feed("<rss><channel><item><title>Caf&eacute; news</title>"
                                "<link>https://e.com/3</link></item></channel></rss>",
                                "https://e.com/feed");
  REQUIRE(html_entity.headlines.size() == 1);
  CHECK(html_entity.headlines[0].title == "Caf\xC3\xA9 news");
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

TEST_CASE("feeds: HTML named references: Latin-1 letters, in titles, links and the feed title") {
  auto f = parse_feed(rss_item("Caf&eacute; &Eacute;t&eacute; &ccedil;a &ntilde; &uuml;ber &szlig;",
                               "https://e.com/caf&eacute;", "Le Journal fran&ccedil;ais"),
                      "https://e.com/feed");
  REQUIRE(f.headlines.size() == 1);
  CHECK(f.headlines[0].title == "Caf\xC3\xA9 \xC3\x89t\xC3\xA9 \xC3\xA7"
                                "a \xC3\xB1 \xC3\xBC"
                                "ber \xC3\x9F");
  CHECK(f.headlines[0].url == "https://e.com/caf%C3%A9");
  CHECK(f.title == "Le Journal fran\xC3\xA7"
                   "ais");
}

TEST_CASE("feeds: HTML named references: typography (&rsquo; &mdash; &hellip;)") {
  CHECK(first_title(rss_item("It&rsquo;s &ldquo;here&rdquo; &mdash; and more&hellip;")) ==
        "It\xE2\x80\x99s \xE2\x80\x9Chere\xE2\x80\x9D \xE2\x80\x94 and more\xE2\x80\xA6");
  // In an Atom feed too, and in its text and html titles alike.
  auto atom = parse_feed(R"(<feed xmlns="http://www.w3.org/2005/Atom"><title>A</title>
    <entry><title>Don&rsquo;t</title><link href="https://e.com/a"/></entry>
    <entry><title type="html">&lt;i&gt;Won&amp;rsquo;t&lt;/i&gt;</title><link href="https://e.com/b"/></entry>
  </feed>)",
                         "https://e.com/atom");
  CHECK(titles(atom) == std::vector<std::string>{"Don\xE2\x80\x99t", "Won\xE2\x80\x99t"});
}

TEST_CASE("feeds: HTML named references: &nbsp; is a space, never a lost character") {
  // "testing &nbsp; entity" lost its character before; the title shows spaces as one.
  CHECK(first_title(rss_item("testing &nbsp; entity")) == "testing entity");
  CHECK(first_title(rss_item("10&nbsp;km")) == "10 km");
  auto f = parse_feed(rss_item("x", "https://e.com/1", "News&nbsp;&amp;&nbsp;Views"),
                      "https://e.com/feed");
  CHECK(f.title == "News & Views");
}

TEST_CASE("feeds: HTML named references: unknown names kept as text, HTML5's resolved") {
  CHECK(first_title(rss_item("testing &fooo; entity")) == "testing &fooo; entity");
  CHECK(first_title(rss_item("caf&eacute; &notanentity; bar")) == "caf\xC3\xA9 &notanentity; bar");
  // Names HTML5 added, beyond HTML 4's list (and libxml2's).
  CHECK(first_title(rss_item("star &bigstar; &check; &NotEqualTilde;")) ==
        "star \xE2\x98\x85 \xE2\x9C\x93 \xE2\x89\x82\xCC\xB8");
  // The table is the WHATWG list: spot checks, and what it is not.
  CHECK(html_named_reference("eacute") == "\xC3\xA9");
  CHECK(html_named_reference("Eacute") == "\xC3\x89");
  CHECK(html_named_reference("amp") == "&");
  CHECK(html_named_reference("CounterClockwiseContourIntegral") == "\xE2\x88\xB3");
  CHECK_FALSE(html_named_reference("eacute;"));
  CHECK_FALSE(html_named_reference("fooo"));
  CHECK(is_legacy_html_reference("eacute"));
  CHECK_FALSE(is_legacy_html_reference("rsquo"));
}

TEST_CASE("feeds: a feed that declares an HTML entity set's DTD still gets HTML's names") {
  // RSS 0.91's Netscape DTD is never fetched; its entities are HTML's.
  auto f = parse_feed(R"(<?xml version="1.0" encoding="ISO-8859-1"?>
<!DOCTYPE rss PUBLIC "-//Netscape Communications//DTD RSS 0.91//EN" "http://my.netscape.com/publish/formats/rss-0.91.dtd">
<rss version="0.91"><channel><title>Old</title>
<item><title>&eacute;t&eacute; &copy; 2001</title><link>http://e.com/old</link></item></channel></rss>)",
                      "http://e.com/rss");
  CHECK(titles(f) == std::vector<std::string>{"\xC3\xA9t\xC3\xA9 \xC2\xA9 2001"});
}

TEST_CASE("feeds: UTF-16 and UTF-32 with a byte order mark and a declaration") {
  const std::string doc = R"(<?xml version="1.0" encoding="ENC"?><rss version="2.0"><channel>)"
                          R"(<title>Wide</title><item><title>Wide item</title>)"
                          R"(<link>https://e.com/wide</link></item></channel></rss>)";
  auto declared = [&](const char* encoding) {
    auto text = doc;
    text.replace(text.find("ENC"), 3, encoding);
    return text;
  };
  struct wide_case {
    const char* name;
    int width;
    bool little;
    std::string bom;
  };
  for (const auto& c :
       {wide_case{"UTF-16", 2, true, "\xFF\xFE"}, wide_case{"UTF-16", 2, false, "\xFE\xFF"},
        wide_case{"UTF-32", 4, true, std::string("\xFF\xFE\x00\x00", 4)},
        wide_case{"UTF-32", 4, false, std::string("\x00\x00\xFE\xFF", 4)}}) {
    CAPTURE(c.name);
    CAPTURE(c.little);
    auto f = parse_feed(wide(declared(c.name), c.width, c.little, c.bom), "https://e.com/feed");
    CHECK(f.title == "Wide");
    CHECK(titles(f) == std::vector<std::string>{"Wide item"});
    CHECK(f.encoding == std::string(c.name) + (c.little ? "LE" : "BE"));
  }
  // Without a BOM, XML's appendix F tells UTF-16 by its first bytes.
  auto no_bom = parse_feed(wide(declared("UTF-16"), 2, true, ""), "https://e.com/feed");
  CHECK(titles(no_bom) == std::vector<std::string>{"Wide item"});
  // Non-ASCII text in UTF-16: "é" is E9 00 in UTF-16LE.
  std::string accented = wide(rss_item("Caf_"), 2, true, "\xFF\xFE");
  const auto mark = accented.find(std::string("_\0", 2));
  REQUIRE(mark != std::string::npos);
  accented.replace(mark, 2, std::string("\xE9\x00", 2));
  CHECK(first_title(accented) == "Caf\xC3\xA9");
}

TEST_CASE("feeds: encodings as RFC 7303 orders them: BOM, then the HTTP charset, then the "
          "declaration") {
  // KOI8-R bytes for "Новости", declared ISO-8859-1 but served as KOI8-R: the header wins.
  const std::string koi8 = "\xEE\xCF\xD7\xCF\xD3\xD4\xC9";
  const auto feed = "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>" + rss_item(koi8);
  const std::string russian = "\xD0\x9D\xD0\xBE\xD0\xB2\xD0\xBE\xD1\x81\xD1\x82\xD0\xB8";
  auto served = parse_feed(feed, "https://e.com/feed", "", "text/xml; charset=KOI8-R");
  CHECK(titles(served) == std::vector<std::string>{russian});
  CHECK(served.encoding == "KOI8-R");
  // Without the header, the declaration: the same bytes as Latin-1.
  auto saved = parse_feed(feed, "https://e.com/feed");
  CHECK(saved.encoding == "ISO-8859-1");
  CHECK(titles(saved) != std::vector<std::string>{russian});
  // A BOM wins over the header.
  auto bom = parse_feed("\xEF\xBB\xBF" + rss_item("Caf\xC3\xA9"), "https://e.com/feed", "",
                        "application/rss+xml; charset=ISO-8859-1");
  CHECK(titles(bom) == std::vector<std::string>{"Caf\xC3\xA9"});
  // A label that does not read the bytes: the next that does, and a warning naming it.
  auto wrong = parse_feed("<?xml version=\"1.0\" encoding=\"UTF-8\"?>" + rss_item("Caf\xE9"),
                          "https://e.com/feed");
  CHECK(titles(wrong) == std::vector<std::string>{"Caf\xC3\xA9"});
  CHECK(wrong.warning == "declared UTF-8, which does not read it; read as windows-1252");
  // windows-1252's punctuation, whether labelled so, as Latin-1, or written as C1 references.
  CHECK(first_title("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>" + rss_item("don\x92t")) ==
        "don\xE2\x80\x99t");
  CHECK(first_title(rss_item("don&#146;t &#150; ok")) == "don\xE2\x80\x99t \xE2\x80\x93 ok");
  // UTF-8 decoded twice ("CafÃ©") is undone.
  CHECK(first_title(rss_item("Caf\xC3\x83\xC2\xA9")) == "Caf\xC3\xA9");
}

TEST_CASE("feeds: the web's encoding labels that iconv does not know (WHATWG's table)") {
  // "Caf\xE9" in Latin-1 and Mac OS Roman, and a Korean word in Windows' EUC-KR.
  CHECK(decode_xml("<?xml version=\"1.0\" encoding=\"x-mac-roman\"?><a>Caf\x8E</a>").text ==
        "<?xml version=\"1.0\" encoding=\"x-mac-roman\"?><a>Caf\xC3\xA9</a>");
  auto korean =
      decode_xml("<?xml version=\"1.0\" encoding=\"ks_c_5601-1987\"?><a>\xBC\xAD\xBF\xEF</a>");
  CHECK(korean.encoding == "CP949");
  CHECK(korean.text.ends_with("<a>\xEC\x84\x9C\xEC\x9A\xB8</a>")); // 서울
  CHECK(decode_xml("<a>\xE9</a>", "text/xml; charset=x-cp1252").encoding == "CP1252");
}

TEST_CASE("feeds: the charset of a Content-Type") {
  CHECK(charset_of("text/xml; charset=utf-8") == "utf-8");
  CHECK(charset_of("application/rss+xml;CHARSET=\"ISO-8859-1\"") == "ISO-8859-1");
  CHECK(charset_of("text/xml; q=1; charset='koi8-r' ; x=y") == "koi8-r");
  CHECK(charset_of("application/xml") == "");
  CHECK(charset_of("") == "");
  CHECK(charset_of("text/xml; charsets=nope") == "");
}

TEST_CASE("feeds: Atom 0.3 is read as Atom: link, title modes, issued date, id") {
  auto f = parse_feed(R"(<?xml version="1.0" encoding="utf-8"?>
<feed version="0.3" xmlns="http://purl.org/atom/ns#" xml:base="http://old.example.com/">
  <title>Old weblog</title>
  <link rel="alternate" type="text/html" href="http://old.example.com/"/>
  <modified>2004-06-02T19:07:55-04:00</modified>
  <entry><title>First</title>
    <link rel="service.edit" type="application/x.atom+xml" href="/edit/1"/>
    <link rel="alternate" type="text/html" href="2004/06/first"/>
    <id>tag:old.example.com,2004:1</id><issued>2004-06-01T10:00:00Z</issued></entry>
  <entry><title mode="escaped" type="text/html">&lt;i&gt;Escaped&lt;/i&gt; html</title>
    <link rel="alternate" type="text/html" href="2004/06/second"/></entry>
  <entry><title>Only an id</title><id>http://old.example.com/2004/06/third</id></entry>
</feed>)",
                      "http://old.example.com/atom.xml");
  CHECK(f.title == "Old weblog");
  CHECK(f.home == "http://old.example.com/");
  CHECK(titles(f) == std::vector<std::string>{"First", "Escaped html", "Only an id"});
  CHECK(f.headlines[0].url == "http://old.example.com/2004/06/first");
  CHECK(f.headlines[0].published_ms == 1'086'084'000'000);
  CHECK(f.headlines[2].url == "http://old.example.com/2004/06/third");
}

TEST_CASE("feeds: Atom 0.3's base64 titles are decoded, then read as their type says") {
  auto f = parse_feed(R"(<feed version="0.3" xmlns="http://purl.org/atom/ns#"><title>B</title>
  <entry><title mode="base64" type="text/plain">QmFzZSBzaXh0eS1mb3VyICZhbXA7IHRleHQ=</title>
    <link href="http://b.example.com/1"/></entry>
  <entry><title mode="base64" type="text/html">PGI+Qm9sZDwvYj4gJmFtcDsgbWFya3Vw
    </title><link href="http://b.example.com/2"/></entry>
  <entry><title mode="base64">not base64 at all!</title><link href="http://b.example.com/3"/>
  </entry></feed>)",
                      "http://b.example.com/atom");
  // "Base sixty-four &amp; text" is text; "<b>Bold</b> &amp; markup" is markup.
  CHECK(titles(f) == std::vector<std::string>{"Base sixty-four &amp; text", "Bold & markup",
                                              "not base64 at all!"});
}

TEST_CASE("feeds: Atom links typed \"html\", and written as RSS's (the address as text)") {
  auto f = parse_feed(R"(<feed xmlns="http://www.w3.org/2005/Atom"><title>L</title>
  <entry><title>Alias</title><link type="html" href="https://e.com/alias"/></entry>
  <entry><title>Text link</title><link>https://e.com/text</link></entry>
  <entry><title>Text but an edit link</title><link rel="edit">https://e.com/edit</link>
    <id>tag:e.com,1</id></entry>
  <entry><title>Spaced rel</title><link rel=" Alternate " type=" XHTML " href="/spaced"/></entry>
  </feed>)",
                      "https://e.com/atom");
  CHECK(titles(f) == std::vector<std::string>{"Alias", "Text link", "Spaced rel"});
  CHECK(f.headlines[0].url == "https://e.com/alias");
  CHECK(f.headlines[1].url == "https://e.com/text");
  CHECK(f.headlines[2].url == "https://e.com/spaced");
}

TEST_CASE("feeds: an entry's link: alternate over enclosure, else a permalink guid or an "
          "http(s) id") {
  auto atom = parse_feed(R"(<feed xmlns="http://www.w3.org/2005/Atom"><title>T</title>
    <entry><title>Enclosure first</title><link rel="enclosure" href="https://cdn.e.com/a.mp3"/>
      <link rel="alternate" type="text/html" href="https://e.com/page"/></entry>
    <entry><title>Id only</title><id>https://e.com/2024/id</id></entry>
    <entry><title>Tag id</title><id>tag:e.com,2024:3</id></entry>
    <entry><title>Only an enclosure</title><link rel="enclosure" href="https://cdn.e.com/b.mp3"/>
      <id>urn:uuid:1225c695-cfb8-4ebb-aaaa-80da344efa6a</id></entry>
    <entry><title>Not HTML</title><link rel="alternate" type="application/pdf" href="https://e.com/x.pdf"/>
      <link href="https://e.com/html"/></entry>
  </feed>)",
                         "https://e.com/atom");
  CHECK(titles(atom) == std::vector<std::string>{"Enclosure first", "Id only", "Not HTML"});
  CHECK(atom.headlines[0].url == "https://e.com/page");
  CHECK(atom.headlines[1].url == "https://e.com/2024/id");
  CHECK(atom.headlines[2].url == "https://e.com/html");

  auto rss = parse_feed(R"(<rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom"><channel>
    <item><title>Guid</title><guid>https://e.com/g</guid></item>
    <item><title>Guid not a permalink</title><guid isPermaLink="false">https://e.com/np</guid></item>
    <item><title>Link over guid</title><guid>https://e.com/g2</guid><link>https://e.com/l2</link></item>
    <item><title>Atom link in RSS</title><atom:link href="https://e.com/al"/></item>
  </channel></rss>)",
                        "https://e.com/rss");
  CHECK(titles(rss) == std::vector<std::string>{"Guid", "Link over guid", "Atom link in RSS"});
  CHECK(rss.headlines[1].url == "https://e.com/l2");
  CHECK(rss.headlines[2].url == "https://e.com/al");
}

TEST_CASE("feeds: element names in any case; <channel> and CDF's <CHANNEL> as the root") {
  auto upper = parse_feed("<RSS VERSION=\"2.0\"><CHANNEL><TITLE>Loud</TITLE><ITEM><TITLE>Upper "
                          "item</TITLE><LINK>https://e.com/u</LINK></ITEM></CHANNEL></RSS>",
                          "https://e.com/feed");
  CHECK(upper.title == "Loud");
  CHECK(titles(upper) == std::vector<std::string>{"Upper item"});
  auto cdf = parse_feed("<CHANNEL HREF=\"https://e.com/\"><TITLE>CDF</TITLE><ITEM "
                        "HREF=\"https://e.com/c1\"><TITLE>CDF item</TITLE></ITEM></CHANNEL>",
                        "https://e.com/feed");
  CHECK(titles(cdf) == std::vector<std::string>{"CDF item"});
  CHECK(cdf.headlines[0].url == "https://e.com/c1");
  // RSS 2.0 written in a namespace of its own.
  auto spaced = parse_feed("<rss xmlns=\"http://backend.userland.com/rss2\" version=\"2.0\">"
                           "<channel><title>NS</title><item><title>In a namespace</title>"
                           "<link>https://e.com/ns</link></item></channel></rss>",
                           "https://e.com/feed");
  CHECK(titles(spaced) == std::vector<std::string>{"In a namespace"});
}

TEST_CASE("feeds: HTML titles read as their text, as a page's titles are") {
  // RSS does not mark HTML: markup and references there are HTML, other text is text.
  CHECK(first_title(rss_item("&lt;b&gt;Bold&lt;/b&gt; news")) == "Bold news");
  CHECK(first_title(rss_item("<![CDATA[<b>Bold</b> & <i>more</i>]]>")) == "Bold & more");
  CHECK(first_title(rss_item("<![CDATA[Tom & Jerry <3]]>")) == "Tom & Jerry <3");
  CHECK(first_title(rss_item("AT&amp;amp;T")) == "AT&T");
  CHECK(first_title(rss_item("Safe<![CDATA[<script>alert(1)</script>]]> text")) == "Safe text");
  // Atom says which: type="text" keeps what looks like markup.
  auto atom = parse_feed(R"(<feed xmlns="http://www.w3.org/2005/Atom"><title>T</title>
    <entry><title type="text">Use &lt;b&gt; for bold</title><link href="https://e.com/t"/></entry>
    <entry><title type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml">An <em>xhtml</em> title</div></title><link href="https://e.com/x"/></entry>
  </feed>)",
                         "https://e.com/atom");
  CHECK(titles(atom) == std::vector<std::string>{"Use <b> for bold", "An xhtml title"});
}

TEST_CASE("feeds: ill-formed feeds are read as far as they go, what is cut off left out") {
  // A bare '&' in text and in a URL.
  auto amp = parse_feed(rss_item("AT&T and Johnson & Johnson", "https://e.com/v?a=1&b=2"),
                        "https://e.com/feed");
  REQUIRE(amp.headlines.size() == 1);
  CHECK(amp.headlines[0].title == "AT&T and Johnson & Johnson");
  CHECK(amp.headlines[0].url == "https://e.com/v?a=1&b=2");
  CHECK(amp.warning.empty());
  // Control characters and references to characters XML forbids: dropped.
  CHECK(first_title(rss_item("Bell\x07 and &#0; zero &#xD800; gone")) == "Bell and zero gone");
  // Mismatched end tags close what they name, as HTML's parsers and feed readers read them:
  // "</Title>" closes <title>, an element left open inside is closed with it, and an end tag
  // that closes nothing is dropped. What is still wrong (here, the end) is read in recovery
  // mode, and said so.
  auto broken = parse_feed("<rss><channel><item><title>Case</Title><link>https://e.com/c</link>"
                           "</item><item><title>Raw <b>bold</title><link>https://e.com/b</link>"
                           "</item><item><title>Stray</i> end</title><link>https://e.com/s</link>"
                           "</item><item><title>Fish &amp; chips</title>"
                           "<link>https://e.com/f</link></item>",
                           "https://e.com/feed");
  CHECK(titles(broken) ==
        std::vector<std::string>{"Case", "Raw bold", "Stray end", "Fish & chips"});
  CHECK(broken.headlines[1].url == "https://e.com/b");
  CHECK(broken.warning.rfind("not well-formed XML (line 1: ", 0) == 0);
  CHECK(detail::mend_markup("<a><b x='>'><c/></a></z><A></a>") ==
        "<a><b x='>'><c/></b></a><A></A>");
  // Cut off in the middle of an item's link: the item is not read (its link may be cut).
  auto cut = parse_feed("<rss><channel><item><title>Whole</title><link>https://e.com/1</link>"
                        "</item><item><title>Cut</title><link>https://e.com/lo",
                        "https://e.com/feed");
  CHECK(titles(cut) == std::vector<std::string>{"Whole"});
  // Cut off after the item's link closed: read, less what was cut (a guid cut short is no link).
  auto after_link = parse_feed("<rss><channel><item><title>Whole</title><link>https://e.com/1"
                               "</link></item><item><title>Link whole</title>"
                               "<link>https://e.com/2</link><description>Cut he",
                               "https://e.com/feed");
  CHECK(titles(after_link) == std::vector<std::string>{"Whole", "Link whole"});
  auto cut_guid = parse_feed("<rss><channel><item><title>Whole</title><link>https://e.com/1"
                             "</link></item><item><title>Guid cut</title><guid>https://e.com/g",
                             "https://e.com/feed");
  CHECK(titles(cut_guid) == std::vector<std::string>{"Whole"});
}

TEST_CASE("feeds: the mending before parsing leaves well-formed XML exactly as it is") {
  const std::string well_formed = R"(<?xml version="1.0"?>
<!DOCTYPE rss [<!ELEMENT rss ANY>]>
<rss a="x &amp; y &#233; &lt;"><channel><!-- a & b < c --><?pi & < ?>
<item><title><![CDATA[ & < &fake ]]> &amp; &eacute; &#x2014; 1 &lt; 2</title></item></channel></rss>)";
  CHECK(detail::mend_markup(well_formed) == well_formed);
  CHECK(detail::mend_markup("a & b < c &#X41; &eacute x &copy=2 \x01") ==
        "a &amp; b &lt; c &#x41; &eacute; x &amp;copy=2 ");
}

TEST_CASE("feeds: an item's picture is its media:content image, thumbnail or image enclosure") {
  auto rss = parse_feed(R"xml(<rss version="2.0" xmlns:media="http://search.yahoo.com/mrss/">
    <channel><title>T</title>
    <item><title>Media content</title><link>https://x/1</link>
      <media:content url="https://img.x/1.jpg" medium="image" width="1024"/>
      <media:thumbnail url="https://img.x/1-small.jpg"/></item>
    <item><title>A video then a thumbnail</title><link>https://x/2</link>
      <media:content url="https://img.x/2.mp4" type="video/mp4"/>
      <media:thumbnail url="/thumbs/2.jpg"/></item>
    <item><title>In a media group</title><link>https://x/3</link>
      <media:group><media:content url="https://img.x/3.png" type="image/png"/></media:group></item>
    <item><title>An image enclosure</title><link>https://x/4</link>
      <enclosure url="https://img.x/4.webp" type="image/webp" length="100"/></item>
    <item><title>A podcast</title><link>https://x/5</link>
      <enclosure url="https://img.x/5.mp3" type="audio/mpeg" length="100"/></item>
    <item><title>Not http</title><link>https://x/6</link>
      <media:thumbnail url="javascript:alert(1)"/></item>
    </channel></rss>)xml",
                        "https://x/feed");
  REQUIRE(rss.headlines.size() == 6);
  CHECK(rss.headlines[0].image == "https://img.x/1.jpg");
  CHECK(rss.headlines[1].image == "https://x/thumbs/2.jpg"); // resolved against the feed
  CHECK(rss.headlines[2].image == "https://img.x/3.png");
  CHECK(rss.headlines[3].image == "https://img.x/4.webp");
  CHECK(rss.headlines[4].image.empty());
  CHECK(rss.headlines[5].image.empty());

  auto atom = parse_feed(R"(<feed xmlns="http://www.w3.org/2005/Atom"><title>A</title>
    <entry><title>Entry</title><link href="https://x/a"/>
      <link rel="enclosure" type="image/jpeg" href="https://img.x/a.jpg"/>
      <content type="html">&lt;img src="https://img.x/inline.jpg"&gt;</content></entry>
    <entry><title>No picture</title><link href="https://x/b"/></entry></feed>)",
                         "https://x/atom");
  REQUIRE(atom.headlines.size() == 2);
  CHECK(atom.headlines[0].image == "https://img.x/a.jpg");
  CHECK(atom.headlines[1].image.empty());
}

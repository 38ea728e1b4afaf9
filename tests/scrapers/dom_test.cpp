#include "scrapers/dom.hpp"
#include "scrapers/registry.hpp"
#include "scrapers/scraper.hpp"

#include "test_files.hpp"

#include <doctest/doctest.h>

#include <pthread.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace dom = newsdesk::scrapers::dom;

namespace {

dom::node first(const dom::document& doc, std::string_view tag) {
  for (dom::node n : doc.root().descendant_elements()) {
    if (n.has_tag(tag)) {
      return n;
    }
  }
  return {};
}

// Runs `work` on a thread with a deliberately small stack, so recursion over a deep tree
// would crash here even where the main thread's 8 MB stack would survive it.
void run_with_small_stack(std::function<void()> work) {
  constexpr std::size_t stack_bytes = 256 * 1024;
  pthread_attr_t attr;
  REQUIRE(pthread_attr_init(&attr) == 0);
  REQUIRE(pthread_attr_setstacksize(&attr, stack_bytes) == 0);
  pthread_t thread;
  auto entry = [](void* arg) -> void* {
    (*static_cast<std::function<void()>*>(arg))();
    return nullptr;
  };
  REQUIRE(pthread_create(&thread, &attr, entry, &work) == 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
}

std::string nested(std::string_view tag, std::size_t depth) {
  std::string html;
  html.reserve(depth * (2 * tag.size() + 5) + 16);
  for (std::size_t i = 0; i < depth; ++i) {
    html += '<';
    html += tag;
    html += '>';
  }
  html += "deep";
  for (std::size_t i = 0; i < depth; ++i) {
    html += "</";
    html += tag;
    html += '>';
  }
  return html;
}

// Parses `depth` nested `tag`s, walks them all and destroys the tree on a small stack.
void check_deep_nesting(std::string_view tag, std::size_t depth) {
  std::string html = nested(tag, depth);
  std::size_t elements = 0;
  std::size_t max_depth = 0;
  std::string text;
  run_with_small_stack([&] {
    auto doc = dom::document::parse(html);
    for (dom::node n : doc.root().descendant_elements()) {
      if (n.has_tag(tag)) {
        ++elements;
      }
    }
    dom::node innermost = first(doc, tag);
    while (innermost.first_element_child()) {
      innermost = innermost.first_element_child();
    }
    for (dom::node n = innermost; n; n = n.parent()) {
      ++max_depth;
    }
    text = doc.root().text();
    (void)doc.base_href();
  });
  CHECK(elements == depth);
  CHECK(max_depth == depth + 3); // the nested elements, then body, html and the document
  CHECK(text == "deep");
}

} // namespace

TEST_CASE("tag names are lowercase, for known and unknown tags") {
  auto doc = dom::document::parse("<DIV><Span>x</Span><My-Widget data-x=1>y</My-Widget>"
                                  "<svg><foreignObject></foreignObject></svg></DIV>");
  CHECK(first(doc, "div").tag_name() == "div");
  CHECK(first(doc, "span").tag_name() == "span");
  dom::node widget = first(doc, "my-widget");
  REQUIRE(widget);
  CHECK(widget.tag_name() == "my-widget");
  CHECK(widget.has_tag("MY-WIDGET"));
  CHECK(first(doc, "svg").tag_name() == "svg");
  CHECK(doc.root().tag_name().empty());
  CHECK_FALSE(doc.root().has_tag(""));
}

TEST_CASE("the parser builds the HTML5 tree: html, head and body always exist") {
  auto doc = dom::document::parse("hello");
  CHECK(doc.root().is_document());
  CHECK(doc.html().has_tag("html"));
  CHECK(doc.html().parent() == doc.root());
  CHECK_FALSE(doc.root().parent());
  CHECK(doc.html().first_element_child().has_tag("head"));
  CHECK(doc.html().first_element_child().next_element_sibling().has_tag("body"));
}

TEST_CASE("attributes are found by name, case-insensitively, with empty values for bare ones") {
  auto doc = dom::document::parse("<a HREF='/x' data-Id=\"7\" hidden id=top>t</a>");
  dom::node a = first(doc, "a");
  CHECK(a.attr("href") == "/x");
  CHECK(a.attr("HREF") == "/x");
  CHECK(a.attr("data-id") == "7");
  CHECK(a.attr("hidden") == "");
  CHECK_FALSE(a.attr("title").has_value());
  CHECK(a.id() == "top");
  auto all = a.attributes();
  REQUIRE(all.size() == 4);
  CHECK(all[0].name == "href");
  CHECK(all[3].value == "top");
  CHECK_FALSE(doc.root().attr("href").has_value());
}

TEST_CASE("has_class matches whole whitespace-separated class names only") {
  auto doc = dom::document::parse(
      "<span class=' container__headline-text\tbig\nred  '>x</span><p>no class</p>");
  dom::node span = first(doc, "span");
  CHECK(span.has_class("container__headline-text"));
  CHECK(span.has_class("big"));
  CHECK(span.has_class("red"));
  CHECK_FALSE(span.has_class("container"));
  CHECK_FALSE(span.has_class("Big"));
  CHECK_FALSE(span.has_class(""));
  CHECK_FALSE(first(doc, "p").has_class("no"));
}

TEST_CASE("text collapses whitespace across nested elements and decodes entities") {
  auto doc = dom::document::parse("<h3> <a href=x>\n  <span>Breaking:</span>\t<b>big</b>"
                                  "<i>news</i> &amp; more&nbsp;here <!-- not text --> </a></h3>");
  CHECK(first(doc, "h3").text() == "Breaking: bignews & more\xc2\xa0here");
  CHECK(first(doc, "span").child(0).is_text());
  CHECK(first(doc, "span").child(0).raw_text() == "Breaking:");
  CHECK(first(doc, "span").child(0).text() == "Breaking:");
}

TEST_CASE("children and siblings are in document order, of every kind") {
  auto doc = dom::document::parse("<ul id=l><li>a</li> <!--c--><li>b</li>text</ul>");
  dom::node ul = first(doc, "ul");
  std::vector<std::string> kinds;
  for (dom::node n : ul.children()) {
    kinds.push_back(n.is_element() ? n.tag_name() : n.is_comment() ? "#comment" : "#text");
  }
  CHECK(kinds == std::vector<std::string>{"li", "#text", "#comment", "li", "#text"});
  CHECK(ul.child_count() == 5);
  CHECK_FALSE(ul.child(5));
  dom::node li = ul.first_element_child();
  CHECK(li.next_element_sibling().text() == "b");
  CHECK(li.next_element_sibling().previous_element_sibling() == li);
  CHECK_FALSE(li.previous_sibling());
  CHECK_FALSE(li.next_element_sibling().next_element_sibling());
  CHECK(li.parent() == ul);
}

TEST_CASE("descendants come in document order and exclude the node itself") {
  auto doc = dom::document::parse("<div id=r><p id=1><b id=2></b></p><p id=3></p></div><p id=4>");
  dom::node r = first(doc, "div");
  std::vector<std::string> ids;
  for (dom::node n : r.descendant_elements()) {
    ids.emplace_back(*n.id());
  }
  CHECK(ids == std::vector<std::string>{"1", "2", "3"});
  CHECK(first(doc, "b").descendants().begin() == first(doc, "b").descendants().end());
}

TEST_CASE("a null node answers every query with nothing") {
  dom::node n;
  CHECK_FALSE(n);
  CHECK_FALSE(n.is_element());
  CHECK(n.tag_name().empty());
  CHECK_FALSE(n.attr("x").has_value());
  CHECK(n.text().empty());
  CHECK_FALSE(n.parent());
  CHECK(n.child_count() == 0);
  CHECK(n.children().empty());
  CHECK(n.descendants().begin() == n.descendants().end());
}

TEST_CASE("base_href is the first <base> with an href, in tree order") {
  CHECK(dom::document::parse("<head><base target=_top><base href=' /m/ '><base href=/n/>")
            .base_href() == " /m/ ");
  CHECK_FALSE(dom::document::parse("<p>none</p>").base_href().has_value());
}

TEST_CASE("nodes stay valid after the document is moved") {
  auto doc = dom::document::parse("<p class=x>kept</p>");
  dom::node p = first(doc, "p");
  dom::document moved = std::move(doc);
  CHECK(p.text() == "kept");
  CHECK(first(moved, "p") == p);
}

TEST_CASE("any bytes parse: NULs, invalid UTF-8 and truncated markup") {
  constexpr char raw[] = "<p>a\0b\xff\xc3<";
  std::string bytes(raw, sizeof raw - 1);
  auto doc = dom::document::parse(bytes);
  CHECK(first(doc, "p"));
  CHECK(doc.root().text().find('a') != std::string::npos);
  CHECK(dom::document::parse("").html().has_tag("html"));
}

TEST_CASE("100,000 nested spans parse, walk and free on a 256 KiB stack") {
  check_deep_nesting("span", 100'000);
}

// Gumbo's tree builder is quadratic in <div> nesting (each <div> scans the open elements for a
// <p>: 100,000 levels take ~25 s), so divs go 20,000 deep: still far past what a recursive walk
// survives on a 256 KiB stack, in well under a second.
TEST_CASE("20,000 nested divs parse, walk and free on a 256 KiB stack") {
  check_deep_nesting("div", 20'000);
}

TEST_CASE("parent links and child indexes agree on every node of a real page") {
  auto page = newsdesk::scrapers::testing::shared_page("cnn-2025-home-rendered.html");
  if (!page) {
    MESSAGE("skipped: cnn-2025-home-rendered.html not found in " << NEWSDESK_SHARED_PAGES);
    return;
  }
  auto doc = dom::document::parse(*page);
  std::size_t checked = 0;
  for (dom::node n : doc.root().descendants()) {
    dom::node p = n.parent();
    bool found = false;
    for (dom::node c : p.children()) {
      found = found || c == n;
    }
    REQUIRE(found);
    ++checked;
  }
  CHECK(checked > 5'000);
}

TEST_CASE("measure_markup counts nesting and elements from the tags alone") {
  using newsdesk::scrapers::dom::measure_markup;
  auto nested = [](std::size_t n) {
    std::string html = "<html><body>";
    for (std::size_t i = 0; i < n; ++i)
      html += "<div class=\"x\">";
    return html + "text</body></html>";
  };
  CHECK(measure_markup(nested(10)).max_depth == 10);
  CHECK(measure_markup(nested(10)).elements == 12);
  // Closed elements come back up; void and optional-end elements never nest.
  auto flat = measure_markup("<div><span>a</span></div><div><p>one<p>two<li>x<li>y<br><img "
                             "src=a><input/></div>");
  CHECK(flat.max_depth == 2);
  CHECK(flat.elements == 10);
  // Script and style text, comments, quoted '>' and stray '<' are not tags.
  auto hidden = measure_markup("<script>if (a < b) { x = '<div><div><div>'; }</script>"
                               "<!-- <div><div> --><a title=\"a > b <div>\">t</a> 1 < 2 <3");
  CHECK(hidden.max_depth == 1);
  CHECK(hidden.elements == 2);
  // Upper case names and an unclosed raw-text element.
  CHECK(measure_markup("<DIV><Div></DIV></div><STYLE>div{}").max_depth == 2);
  CHECK(measure_markup("<STYLE>div{}</style><div><div>").max_depth == 2);
}

namespace {
// Checks that a built-in scraper refuses `html` as too complex, saying `why`, before parsing:
// well within a second.
void check_refused_at_once(const std::string& html, const char* why) {
  newsdesk::scrapers::registry builtin;
  newsdesk::scrapers::register_builtin_scrapers(builtin);
  const auto* scraper = builtin.find("cnn");
  REQUIRE(scraper != nullptr);
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(scraper->parse(html, "https://edition.cnn.com/"), doctest::Contains(why),
                       newsdesk::scrapers::dom::too_complex);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
}
} // namespace

TEST_CASE("a page nested past max_nesting_depth is refused before parsing, at once") {
  std::string html = "<html><body>";
  for (int i = 0; i < 100'000; ++i)
    html += "<div>";
  html += "x</body></html>";
  check_refused_at_once(html, "nests its elements 100000 deep");
}

TEST_CASE("a page of more links than max_links is refused before parsing, at once") {
  std::string html = "<html><body>";
  for (int i = 0; i < 100'000; ++i)
    html += "<a href=\"/story/" + std::to_string(i) + "\">Story number " + std::to_string(i) +
            " of the day</a> ";
  html += "</body></html>";
  CHECK(newsdesk::scrapers::dom::measure_markup(html).links == 100'000);
  check_refused_at_once(html, "has 100000 links (at most 20000");
  // Every saved page is far below it.
  for (const auto* page : {"apnews-2026-world-rendered.html", "cnn-2025-home-rendered.html"})
    if (auto bytes = newsdesk::scrapers::testing::shared_page(page))
      CHECK(newsdesk::scrapers::dom::measure_markup(*bytes).links <
            newsdesk::scrapers::dom::max_links / 10);
}

namespace {

// The tree below `n` as text, one line a node: elements with their attributes, text, comments;
// but for the text of script and style elements.
void describe(dom::node n, std::string& out, int depth = 0) {
  for (dom::node child : n.children()) {
    out.append(static_cast<std::size_t>(depth), ' ');
    if (child.is_element()) {
      out += "<" + child.tag_name();
      for (const auto& a : child.attributes())
        out += " " + std::string(a.name) + "=\"" + std::string(a.value) + "\"";
      out += ">\n";
      if (!child.has_tag("script") && !child.has_tag("style"))
        describe(child, out, depth + 1);
    } else if (child.is_text()) {
      out += "text:" + std::string(child.raw_text()) + "\n";
    } else if (child.is_comment()) {
      out += "comment:" + std::string(child.raw_text()) + "\n";
    }
  }
}

std::string tree_of(std::string_view html, dom::document::script_text scripts) {
  auto doc = dom::document::parse(html, scripts);
  std::string out;
  describe(doc.root(), out);
  return out;
}

} // namespace

TEST_CASE("dropping script and style text before parsing leaves every other node as it was") {
  using st = dom::document::script_text;
  SUBCASE("the texts are dropped, the elements stay") {
    auto doc = dom::document::parse("<style>p{}</style><p>a<script>var x = 1;</script>b");
    REQUIRE(first(doc, "script"));
    CHECK(first(doc, "script").child_count() == 0);
    CHECK(first(doc, "style").child_count() == 0);
    CHECK(first(doc, "p").text() == "ab");
  }
  SUBCASE("markup that only looks like a script's end or start") {
    const std::vector<std::string> pages = {
        "<p>a<script>var s = '</scrip' + 't>'; if (a<b) x--;</script><a href=/x>one</a>",
        // An escape: inside it, "<script>" makes the next "</script>" end only the escape.
        "<script><!-- document.write('<script>x()</script>'); --></script><a href=/y>two</a>",
        "<script><!--></script><a href=/z>three</a>",
        "<SCRIPT type=\"a>b\">x</SCRIPT ><style>a>b{}</style  ><p>four",
        "<textarea><script>not a script</textarea><a href=/t>five</a>",
        "<title><style>t</title><p>six",
        "<!-- <script> --><a href=/c>seven</a><!--> <p>eight <!---> <script>x</script>",
        "<svg><style>svg{}</style><a href=/s><text>nine</text></a></svg>",
        "<p>unclosed <script>var a = 1; <a href=/u>ten</a>",
        "<p>unclosed <style>a{}",
        "<a href='x>y'>eleven</a><script src=a.js></script><p>twelve",
        "<xmp><script></xmp><a href=/q>thirteen</a><plaintext><script>x</script>",
    };
    for (const auto& html : pages) {
      CAPTURE(html);
      CHECK(tree_of(html, st::dropped) == tree_of(html, st::kept));
    }
  }
  SUBCASE("the saved front pages") {
    for (const char* name :
         {"apnews-2026-world-rendered.html", "bbc-2025-news-rendered.html", "cnn-2015-edition.html",
          "cnn-2018-raw-jsonly.html", "cnn-2025-home-rendered.html", "hn-2022.html",
          "reuters-2026-world-rendered.html"}) {
      auto page = newsdesk::scrapers::testing::shared_page(name);
      if (!page) {
        MESSAGE("skipped: saved page " << name << " not found");
        continue;
      }
      CAPTURE(name);
      CHECK(tree_of(*page, st::dropped) == tree_of(*page, st::kept));
    }
  }
}

#include "scrapers/css/selector.hpp"

#include "scrapers/dom.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

using namespace newsdesk::scrapers;

namespace {

// The ids of the elements `selector` selects in `doc`, space-separated, in result order.
std::string ids(const dom::document& doc, std::string_view selector) {
  std::string out;
  for (dom::node n : css::select(doc.root(), css::parse(selector))) {
    out += (out.empty() ? "" : " ") + std::string(n.id().value_or("?"));
  }
  return out;
}

// The column and reason parse() reports for `selector`; fails the test when it parses.
struct failure {
  std::size_t column = 0;
  std::string reason;
  std::string what;
};

failure error_of(std::string_view selector) {
  try {
    css::parse(selector);
  } catch (const css::syntax_error& e) {
    return {e.column(), e.reason(), e.what()};
  }
  FAIL("parsed without error: ", std::string(selector));
  return {};
}

const char* const page = R"(<!doctype html>
<html><head><base href="https://example.com/"></head><body id="body">
<div id="top" class="story lead" data-kind="news main">
  <h2 id="h"><a id="a1" href="/one" class="Link headline">One</a></h2>
  <p id="p1"><span id="s1">x</span><a id="a2" href="/two" lang="en-GB">Two</a></p>
</div>
<section id="sec">
  <div id="inner" class="story">
    <ul id="list"><li id="li1"><a id="a3" href="https://other.org/three">Three</a></li></ul>
  </div>
  <A id="a4" HREF="/four" TITLE="Four" data-empty="">Four</A>
  <svg id="svg"><circle id="c1"></circle></svg>
</section>
</body></html>)";

} // namespace

TEST_CASE("css: parse builds compounds, combinators and lists") {
  css::selector_list list = css::parse("  div.story > a[href^=\"/\"]:not(.x) ,  *#id span  ");
  REQUIRE(list.selectors.size() == 2);
  const auto& first = list.selectors[0].compounds;
  REQUIRE(first.size() == 2);
  REQUIRE(first[0].parts.size() == 2);
  CHECK(first[0].parts[0].what == css::simple_selector::kind::type);
  CHECK(first[0].parts[0].name == "div");
  CHECK(first[0].parts[1].what == css::simple_selector::kind::class_name);
  CHECK(first[0].parts[1].name == "story");
  CHECK(first[1].relation == css::combinator::child);
  REQUIRE(first[1].parts.size() == 3);
  CHECK(first[1].parts[1].what == css::simple_selector::kind::attribute);
  CHECK(first[1].parts[1].name == "href");
  CHECK(first[1].parts[1].op == css::attribute_operator::prefix);
  CHECK(first[1].parts[1].value == "/");
  CHECK(first[1].parts[2].negated);
  CHECK(first[1].parts[2].name == "x");
  const auto& second = list.selectors[1].compounds;
  REQUIRE(second.size() == 2);
  CHECK(second[0].parts[0].what == css::simple_selector::kind::universal);
  CHECK(second[0].parts[1].what == css::simple_selector::kind::id);
  CHECK(second[1].relation == css::combinator::descendant);
  CHECK(list.source == "  div.story > a[href^=\"/\"]:not(.x) ,  *#id span  ");
}

TEST_CASE("css: every attribute operator, quoted and unquoted values") {
  using op = css::attribute_operator;
  struct row {
    const char* text;
    op expected;
    const char* value;
  };
  for (const row& r : {row{"[a]", op::exists, ""}, row{"[a=b]", op::equals, "b"},
                       row{"[a~='b c']", op::includes, "b c"}, row{"[a^=b]", op::prefix, "b"},
                       row{"[a$=\"b\"]", op::suffix, "b"}, row{"[ a *= b ]", op::substring, "b"},
                       row{"[A=\"\"]", op::equals, ""}}) {
    CAPTURE(r.text);
    auto list = css::parse(r.text);
    const css::simple_selector& s = list.selectors.at(0).compounds.at(0).parts.at(0);
    CHECK(s.what == css::simple_selector::kind::attribute);
    CHECK(s.name == "a");
    CHECK(s.op == r.expected);
    CHECK(s.value == r.value);
  }
}

TEST_CASE("css: type and attribute names are lowercased; escapes are decoded") {
  auto list = css::parse("DIV[Data-Kind] .md\\:flex #\\31 23 [title=\"a\\\"b\"].caf\\E9");
  const auto& c = list.selectors.at(0).compounds;
  REQUIRE(c.size() == 4);
  CHECK(c[0].parts[0].name == "div");
  CHECK(c[0].parts[1].name == "data-kind");
  CHECK(c[1].parts[0].name == "md:flex");
  CHECK(c[2].parts[0].name == "123");
  CHECK(c[3].parts[0].value == "a\"b");
  CHECK(c[3].parts[1].name == "caf\xC3\xA9");
}

TEST_CASE("css: syntax errors give the selector, the column and the reason") {
  failure f = error_of("a[href");
  CHECK(f.column == 7);
  CHECK(f.reason == "expected ']'");
  CHECK(f.what == "bad selector \"a[href\" at column 7: expected ']'");

  CHECK(error_of("a[").column == 3);
  CHECK(error_of("a[").reason == "expected attribute name");
  CHECK(error_of("").reason == "expected selector");
  CHECK(error_of("   ").column == 4);
  CHECK(error_of("a,").column == 3);
  CHECK(error_of("a, ,b").column == 4);
  CHECK(error_of("a >").reason == "expected selector");
  CHECK(error_of("> a").reason == "expected selector before '>'");
  CHECK(error_of("a + b").column == 3);
  CHECK(error_of("a + b").reason == "unsupported combinator '+'");
  CHECK(error_of("a ~ b").reason == "unsupported combinator '~'");
  CHECK(error_of("a:hover").column == 2);
  CHECK(error_of("a:hover").reason == "unsupported pseudo-class ':hover'");
  CHECK(error_of("li:nth-child(2)").reason == "unsupported pseudo-class ':nth-child()'");
  CHECK(error_of("p::before").reason == "pseudo-elements are not supported");
  CHECK(error_of("a:not(.x .y)").column == 10);
  CHECK(error_of("a:not(.x").reason == "expected ')'");
  CHECK(error_of("a:not(:not(b))").column == 7);
  CHECK(error_of("a:has(b:has(c))").reason == ":has() inside :has() is not supported");
  CHECK(error_of("a:has()").reason == "expected selector");
  CHECK(error_of("a:has(b").reason == "expected ')' to close :has(");
  CHECK(error_of("a:has(+ b)").reason == "unsupported combinator '+'");
  CHECK(error_of(":scope()").reason == "unsupported pseudo-class ':scope()'");
  CHECK(error_of("a:not(:has(b))").column == 7);
  CHECK(error_of("a:not()").reason == "unexpected ')'");
  CHECK(error_of(".").reason == "expected class name");
  CHECK(error_of(".1a").column == 2);
  CHECK(error_of("#").reason == "expected id");
  CHECK(error_of("[href^=/news]").column == 8);
  CHECK(error_of("[href=").reason == "expected attribute value");
  CHECK(error_of("[a|=b]").reason == "unsupported attribute operator '|='");
  CHECK(error_of("[a=b i]").reason == "attribute flags are not supported");
  CHECK(error_of("[a=\"b]").reason == "unterminated string");
  CHECK(error_of("[a!=b]").column == 3);
  CHECK(error_of("a)").reason == "unexpected ')'");
  CHECK(error_of("svg|a").reason == "namespaces are not supported");
  CHECK(error_of("a\\").reason == "unfinished escape");
  CHECK(error_of("[a=b]c").column == 6);
  // Columns count characters, not bytes.
  CHECK(error_of("\xC3\xA9t\xC3\xA9 [").column == 6);
}

TEST_CASE("css: limits on length and compound count are syntax errors") {
  std::string long_selector(css::max_selector_length, 'a');
  CHECK_NOTHROW(css::parse(long_selector));
  long_selector += 'a';
  failure f = error_of(long_selector);
  CHECK(f.column == css::max_selector_length + 1);
  CHECK(f.reason == "longer than 1024 bytes");
  CHECK(f.what.size() < 200); // the message quotes only the start of the selector

  std::string many = "a";
  for (std::size_t i = 1; i < css::max_compounds; ++i) {
    many += i % 2 ? " b" : ",c";
  }
  CHECK_NOTHROW(css::parse(many));
  CHECK(error_of(many + " d").reason == "more than 64 compound selectors");
}

TEST_CASE("css: simple selectors match as browsers do") {
  auto doc = dom::document::parse(page);
  CHECK(ids(doc, "a") == "a1 a2 a3 a4");
  CHECK(ids(doc, "A") == "a1 a2 a3 a4");
  CHECK(ids(doc, "circle") == "c1");
  CHECK(ids(doc, ".story") == "top inner");
  CHECK(ids(doc, ".Story") == "");
  CHECK(ids(doc, ".link") == "");
  CHECK(ids(doc, "#a3") == "a3");
  CHECK(ids(doc, "#A3") == "");
  CHECK(ids(doc, "a[title]") == "a4");
  CHECK(ids(doc, "a[TITLE=Four]") == "a4");
  CHECK(ids(doc, "a[title=four]") == "");
  CHECK(ids(doc, "[data-kind~=main]") == "top");
  CHECK(ids(doc, "[data-kind~=mai]") == "");
  CHECK(ids(doc, "[data-kind~='news main']") == "");
  CHECK(ids(doc, "[class~=\"\"]") == "");
  CHECK(ids(doc, "a[href^='/']") == "a1 a2 a4");
  CHECK(ids(doc, "a[href$=o]") == "a2");
  CHECK(ids(doc, "a[href*=other]") == "a3");
  CHECK(ids(doc, "a[href*='']") == "");
  CHECK(ids(doc, "a[href^='']") == "");
  CHECK(ids(doc, "a[data-empty]") == "a4");
  CHECK(ids(doc, "a[data-empty='']") == "a4");
  CHECK(ids(doc, "a[lang=en-GB]") == "a2");
  CHECK(ids(doc, "a.Link.headline") == "a1");
  CHECK(ids(doc, "*.Link") == "a1");
}

TEST_CASE("css: combinators, lists and :not") {
  auto doc = dom::document::parse(page);
  CHECK(ids(doc, "div a") == "a1 a2 a3");
  CHECK(ids(doc, "div > a") == "");
  CHECK(ids(doc, "p > a") == "a2");
  CHECK(ids(doc, "section > a") == "a4");
  CHECK(ids(doc, "section a") == "a3 a4");
  CHECK(ids(doc, ".story a") == "a1 a2 a3");
  CHECK(ids(doc, "section .story li > a") == "a3");
  CHECK(ids(doc, "body > div > h2 > a") == "a1");
  CHECK(ids(doc, "body > h2 a") == "");
  CHECK(ids(doc, "html body section>div ul>li>a") == "a3");
  // A child step after a descendant step: #top is a div too, but not a section's child.
  CHECK(ids(doc, "section > div a") == "a3");
  CHECK(ids(doc, "body > * > * > a") == "a1 a2");
  // Lists: document order, each element once however many selectors match it.
  CHECK(ids(doc, "#a4, #a1, a[href^='/t'], #a1") == "a1 a2 a4");
  CHECK(ids(doc, "a:not([href^='/'])") == "a3");
  CHECK(ids(doc, "a:not(.Link)") == "a2 a3 a4");
  CHECK(ids(doc, "div:not(#top) a") == "a3");
  CHECK(ids(doc, "a:not(a)") == "");
  CHECK(ids(doc, "li :not(*)") == "");
  CHECK(ids(doc, "section :not(a):not(li):not(ul):not(svg)") == "inner c1");
}

TEST_CASE("css: :has() with child and descendant relative selectors") {
  auto doc = dom::document::parse(page);
  CHECK(ids(doc, "div:has(> h2)") == "top");
  CHECK(ids(doc, "div:has(h2 > a)") == "top");
  CHECK(ids(doc, "div:has(a)") == "top inner");
  CHECK(ids(doc, "div:has(> a)") == "");
  CHECK(ids(doc, "div:has(li a), p:has(span)") == "p1 inner");
  CHECK(ids(doc, ".story:has(ul) a") == "a3");
  CHECK(ids(doc, "a:has(*)") == "");
  CHECK(ids(doc, "h2:has(> a.headline) > a") == "a1");
  // The relative selector starts inside the element: an ancestor never satisfies it.
  CHECK(ids(doc, "li:has(div a)") == "");
  // Headline links holding a heading, the usual use in a site file.
  auto cards =
      dom::document::parse(R"(<a id=x href="/1"><h3>One</h3></a><a id=y href="/2">Two</a>)");
  CHECK(ids(cards, "a:has(h3)") == "x");
  CHECK(css::matches(css::parse("a:has(> h3)"), css::select_first(cards.root(), css::parse("#x"))));
}

TEST_CASE("css: :scope is the element a selection starts from") {
  auto doc = dom::document::parse(page);
  dom::node top = css::select_first(doc.root(), css::parse("#top"));
  CHECK(css::select(top, css::parse(":scope > h2 > a")).size() == 1);
  CHECK(css::select(top, css::parse(":scope > a")).empty());
  CHECK(css::select_first(top, css::parse(":scope a")).id() == "a1");
  // Without a starting element (matches), :scope is the root element, <html>.
  dom::node html = doc.html();
  CHECK(css::matches(css::parse(":scope"), html));
  CHECK(
      css::matches(css::parse(":scope > body"), css::select_first(doc.root(), css::parse("body"))));
}

TEST_CASE("css: :has() on deep nesting stays within its budget") {
  std::string deep = "<html><body>";
  for (int i = 0; i < 1500; ++i)
    deep += "<div>";
  deep += "<a href='/x'>x</a></body></html>";
  auto doc = dom::document::parse(deep);
  // Every div holds the link: 1,500 subtree looks, most of them long, within the budget.
  auto found = css::select(doc.root(), css::parse("div:has(a)"));
  CHECK(!found.empty());
  CHECK(found.size() <= 1500);
}

TEST_CASE("css: select from an element looks inside it but sees its ancestors") {
  auto doc = dom::document::parse(page);
  dom::node section = css::select(doc.root(), css::parse("section")).at(0);
  auto found = css::select(section, css::parse("section a"));
  REQUIRE(found.size() == 2);
  CHECK(found[0].id() == "a3");
  CHECK(css::select(section, css::parse("section")).empty()); // the root itself is excluded
  CHECK(css::select(section, css::parse("body > section > a")).size() == 1);
  CHECK(css::select_first(section, css::parse("a")).id() == "a3");
  CHECK(!css::select_first(section, css::parse("p")));
  CHECK(css::select(dom::node(), css::parse("a")).empty());
}

TEST_CASE("css: matches agrees with select") {
  auto doc = dom::document::parse(page);
  for (const char* selector : {"a", "section > div a", ".story a", "a:not(.Link)", "li > a, h2 a",
                               "body > * > * > a", "div:not(#top) *"}) {
    CAPTURE(selector);
    auto list = css::parse(selector);
    auto selected = css::select(doc.root(), list);
    std::size_t matched = 0;
    for (dom::node n : doc.root().descendant_elements()) {
      if (css::matches(list, n)) {
        ++matched;
        CHECK(std::find(selected.begin(), selected.end(), n) != selected.end());
      }
    }
    CHECK(matched == selected.size());
  }
  CHECK(!css::matches(css::parse("*"), doc.root()));
  CHECK(!css::matches(css::parse("*"), dom::node()));
}

TEST_CASE("css: deep nesting is matched in one pass without recursion") {
  // 3,000 nested divs with a link at the bottom: an engine that walks every ancestor for every
  // element, or recurses per level, would do millions of steps or overflow; this one does not.
  constexpr int depth = 3000;
  std::string html;
  for (int i = 0; i < depth; ++i) {
    html += "<div class=d>";
  }
  html += "<a id=deep href=/x>deep</a>";
  auto doc = dom::document::parse(html);
  auto start = std::chrono::steady_clock::now();
  CHECK(ids(doc, "div.d div.d > div a") == "deep");
  CHECK(ids(doc, "body > div > div > div div a:not(.z)") == "deep");
  CHECK(css::select(doc.root(), css::parse("div div")).size() == depth - 1);
  CHECK(ids(doc, "p div a") == "");
  auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(elapsed < std::chrono::seconds(2));
}

// libFuzzer target: the CSS selector parser (scrapers/css/selector.hpp) on arbitrary text, and
// on success the matcher over a small fixed document.
//
// Checked: parse() either succeeds or throws css::syntax_error (nothing else), with a column
// inside the text (+1 for "ended too early"); a parsed list respects max_compounds; select()
// agrees with matches() on every element (each match exactly once, in document order, none
// outside the subtree), select_first() is select()'s first element, and selecting from a
// subtree finds exactly the matches inside it (unless the selector names :scope, which is that
// subtree's root there).
#include "scrapers/css/selector.hpp"
#include "scrapers/dom.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace {

using namespace newsdesk::scrapers;

void require(bool ok) {
  if (!ok)
    std::abort();
}

constexpr std::string_view page = R"html(<!doctype html>
<html lang="en"><head><title>Fuzz</title><base href="https://news.example/"></head>
<body class="home">
<div id="main" class="grid md:flex">
  <article class="card story" data-testid="card">
    <h2 class="card-headline" data-testid="card-headline"><a href="/a/1" class="link">One</a></h2>
    <p>Lead <span class="tag">tag</span></p>
  </article>
  <article class="card"><a href="https://other.example/b" rel="noopener external" data-x="">Two</a>
    <div><div><section><a href="javascript:alert(1)" class="link danger">Three</a></section></div></div>
  </article>
  <ul class="nav"><li><a href="#top">Top</a></li><li><a href="/c?x=1&amp;y=2" lang="en-GB">Four</a></li></ul>
  <svg><a href="/svg">svg</a></svg><template><a href="/tpl">tpl</a></template>
</div>
<table><tr><td class="x y"><a href=/d>Five</a></td></tr></table>
</body></html>)html";

const dom::document& document() {
  static const dom::document doc = dom::document::parse(page);
  return doc;
}

void check_select(const dom::node& root, const css::selector_list& list) {
  const auto found = css::select(root, list);
  std::size_t i = 0;
  for (dom::node e : root.descendant_elements()) {
    if (css::matches(list, e)) {
      require(i < found.size() && found[i] == e);
      ++i;
    }
  }
  require(i == found.size());
  const dom::node first = css::select_first(root, list);
  require(found.empty() ? !first : first == found.front());
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  css::selector_list list;
  try {
    list = css::parse(text);
  } catch (const css::syntax_error& e) {
    require(e.column() >= 1 && e.column() <= text.size() + 1);
    require(!e.reason().empty());
    return 0;
  }
  require(text.size() <= css::max_selector_length);
  require(!list.selectors.empty() && list.source == text);
  std::size_t compounds = 0;
  for (const auto& complex : list.selectors) {
    require(!complex.compounds.empty());
    for (const auto& compound : complex.compounds)
      require(!compound.parts.empty());
    compounds += complex.compounds.size();
  }
  require(compounds <= css::max_compounds);

  bool scoped = false; // :scope outside :has() stands for where a selection starts
  for (const auto& complex : list.selectors)
    for (const auto& compound : complex.compounds)
      for (const auto& part : compound.parts)
        scoped = scoped || part.what == css::simple_selector::kind::scope;
  const dom::document& doc = document();
  check_select(doc.root(), list);
  for (dom::node e : doc.root().descendant_elements())
    if (!scoped && (e.has_tag("article") || e.has_tag("ul") || e.has_tag("svg")))
      check_select(e, list);
  require(!css::matches(list, dom::node()));
  require(css::select(dom::node(), list).empty());
  return 0;
}

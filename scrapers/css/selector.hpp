// CSS selectors over dom::document: the subset site files use to point at headlines.
//
// Supported (Selectors Level 3/4 syntax):
//   type `a`, universal `*`, class `.c`, id `#i`, attributes `[a]` `[a=v]` `[a~=v]` `[a^=v]`
//   `[a$=v]` `[a*=v]` (value as identifier or quoted string), `:not(simple)` with one simple
//   selector inside, `:scope` (the element a selection starts from: the link, for a site file's
//   title), `:has(relative list)` (`a:has(> h3)`, `article:has(h2.title) a`), compound
//   selectors (`a.c[href]`), the descendant (` `) and child (`>`) combinators, and selector
//   lists (`a, b`). CSS escapes (`\:`, `\31 `) work in names and values, so Tailwind-style
//   classes such as `.md\:flex` can be written.
// Not supported, rejected with a syntax_error naming them: the sibling combinators `+` and `~`,
// other pseudo-classes, `:has()` inside `:has()` or `:not()`, pseudo-elements, namespaces and
// the `i`/`s` attribute flags.
//
// Case: type selectors and attribute names match ASCII case-insensitively (HTML documents);
// classes, ids and attribute values are case-sensitive. As in the Selectors spec, `[a~=v]`
// never matches when v is empty or contains whitespace, and `[a^=""]`, `[a$=""]`, `[a*=""]`
// never match.
//
// Cost: select() visits each element of the subtree once and evaluates only the compounds whose
// left-hand context already holds (kept as one bitmask per open ancestor), so matching a page is
// O(elements x compounds) time and O(depth) memory, whatever the combinators: no subtree or
// ancestor chain is walked twice. `:has()` looks into each candidate's subtree, which could make
// a page quadratic: one selection (select, select_first, matches) looks at most
// max_has_visits elements for all its `:has()` tests together, after which `:has()` is false.
// Pure functions; parsed lists are immutable and may be shared between threads.
//
// parse() and syntax_error are selector_parser.cpp's; matches(), select() and select_first() are
// selector_matcher.cpp's.
#pragma once

#include "scrapers/dom.hpp"

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace newsdesk::scrapers::css {

// The longest selector text parse() accepts, in bytes. It bounds parsing time and memory for
// a hostile site file; selectors people write for a headline are 10-200 bytes.
inline constexpr std::size_t max_selector_length = 1024;

// The most compound selectors (the parts between combinators, summed over a whole selector
// list) parse() accepts. Matching costs up to this many compound tests per element, and the
// matcher keeps one bit per compound, so 64 is both the per-element work bound and the word
// size; real selectors have 1-6.
inline constexpr std::size_t max_compounds = 64;

// What all the `:has()` tests of one selection may look at together; real pages have under
// 10,000 elements and a `:has()` usually looks at a card's handful.
inline constexpr std::size_t max_has_visits = 1'000'000;

// Thrown by parse(). what() reads `bad selector "a[href" at column 7: expected ']'`.
class syntax_error : public std::invalid_argument {
 public:
  syntax_error(std::string_view selector, std::size_t column, std::string reason);

  // 1-based position of the offending character, counted in characters (UTF-8 code points);
  // one past the end when the selector ends too early.
  std::size_t column() const { return column_; }
  // What is wrong, without the selector and column: "expected ']'".
  const std::string& reason() const { return reason_; }

 private:
  std::size_t column_;
  std::string reason_;
};

enum class attribute_operator {
  exists,    // [a]
  equals,    // [a=v]
  includes,  // [a~=v]  v is one of the whitespace-separated words
  prefix,    // [a^=v]
  suffix,    // [a$=v]
  substring, // [a*=v]
};

struct selector_list;

struct simple_selector {
  enum class kind { universal, type, class_name, id, attribute, scope, has };
  kind what = kind::universal;
  std::string name; // tag (ASCII-lowercased), class, id or attribute name (ASCII-lowercased)
  attribute_operator op = attribute_operator::exists; // attributes only
  std::string value;                                  // attributes only, escapes decoded
  bool negated = false;                               // written inside :not()
  // :has() only: its relative selectors, each starting with a :scope compound (the element
  // being tested), so `:has(> h3)` is held as `:scope > h3`.
  std::shared_ptr<const selector_list> relative;
};

enum class combinator {
  descendant, // `a b`
  child,      // `a > b`
};

// A sequence of simple selectors with no combinator between them, e.g. `a.link[href]`.
struct compound_selector {
  // How this compound relates to the one before it; ignored for the first of a complex.
  combinator relation = combinator::descendant;
  std::vector<simple_selector> parts; // never empty; all must hold
};

// Compounds joined by combinators, left to right: `div.story > a` is {div.story, >a}.
struct complex_selector {
  std::vector<compound_selector> compounds; // never empty
};

// A comma-separated list: an element matches when any complex selector does.
struct selector_list {
  std::vector<complex_selector> selectors; // never empty after parse()
  std::string source;                      // the text parse() was given
};

// Parses `text`. Leading and trailing whitespace is allowed. Throws syntax_error for syntax
// outside the subset above, for an empty selector, and when the limits above are exceeded.
selector_list parse(std::string_view text);

// True when element `e` matches `list` (false for null and non-element nodes). Looks at e's
// ancestors: O(depth x compounds).
bool matches(const selector_list& list, dom::node e);

// Every element strictly inside `root` (root itself excluded, as querySelectorAll does) that
// matches `list`, in document order, each once. Ancestors of `root` count for combinators, so
// select(link, parse("div.card span")) finds spans in `link` that sit in a div.card anywhere
// above. A null root gives an empty result.
std::vector<dom::node> select(const dom::node& root, const selector_list& list);

// The first element of select(root, list), or a null node; stops at the first match.
dom::node select_first(const dom::node& root, const selector_list& list);

} // namespace newsdesk::scrapers::css

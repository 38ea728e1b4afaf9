#include "scrapers/css/selector.hpp"
#include "scrapers/text.hpp"
#include "server/core/utf8.hpp"

#include <bit>
#include <cstdint>
#include <memory>
#include <utility>

namespace newsdesk::scrapers::css {
namespace {

bool is_ascii_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

bool is_hex(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// Non-ASCII bytes count as name characters, as CSS treats every non-ASCII code point.
bool is_name_start(char c) {
  return is_ascii_alpha(c) || c == '_' || static_cast<unsigned char>(c) >= 0x80;
}

bool is_name_char(char c) {
  return is_name_start(c) || is_digit(c) || c == '-';
}

char ascii_lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

std::string ascii_lowercase(std::string s) {
  for (char& c : s) {
    c = ascii_lower(c);
  }
  return s;
}

// Columns count code points, so a selector with "é" in it points at what the user sees.
std::size_t column_of(std::string_view text, std::size_t offset) {
  std::size_t column = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
      ++column;
    }
  }
  return column;
}

// Appended piece by piece: GCC 12 at -O3 warns (-Wrestrict, a known false positive) about
// "literal" + std::string here.
std::string quoted_for_message(std::string_view selector) {
  // A hostile 1 MB selector must not become a 1 MB log line.
  constexpr std::size_t shown = 100;
  std::string out = "\"";
  out += selector.substr(0, shown);
  out += selector.size() <= shown ? "\"" : "...\"";
  return out;
}

class parser {
 public:
  explicit parser(std::string_view text)
      : text_(text) {}

  selector_list run() {
    if (text_.size() > max_selector_length) {
      fail_at(max_selector_length, "longer than " + std::to_string(max_selector_length) + " bytes");
    }
    selector_list list;
    list.source = std::string(text_);
    skip_space();
    for (;;) {
      list.selectors.push_back(parse_complex());
      if (at_end()) {
        break;
      }
      // parse_complex stops only at the end or at a comma.
      ++pos_;
      skip_space();
    }
    return list;
  }

 private:
  [[noreturn]] void fail_at(std::size_t pos, std::string reason) const {
    throw syntax_error(text_, column_of(text_, pos), std::move(reason));
  }
  [[noreturn]] void fail(std::string reason) const { fail_at(pos_, std::move(reason)); }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek(std::size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }

  bool skip_space() {
    std::size_t start = pos_;
    while (!at_end() && is_ascii_whitespace(text_[pos_])) {
      ++pos_;
    }
    return pos_ != start;
  }

  complex_selector parse_complex() {
    complex_selector complex;
    complex.compounds.push_back(parse_compound(combinator::descendant));
    return parse_rest_of_complex(std::move(complex));
  }

  // The compounds after the first, up to the end of the text, a ',' or (inside :has()) a ')'.
  complex_selector parse_rest_of_complex(complex_selector complex) {
    for (;;) {
      bool spaced = skip_space();
      if (at_end() || peek() == ',' || (in_has_ && peek() == ')')) {
        return complex;
      }
      combinator relation = parse_combinator();
      if (relation == combinator::descendant && !spaced) {
        fail_unexpected();
      }
      complex.compounds.push_back(parse_compound(relation));
    }
  }

  // A '>' at the cursor (and the spaces after it) is a child step; '+' and '~' are refused by
  // name; anything else is left for the next compound, a descendant step.
  combinator parse_combinator() {
    if (peek() == '+' || peek() == '~') {
      fail(std::string("unsupported combinator '") + peek() + "'");
    }
    if (peek() != '>') {
      return combinator::descendant;
    }
    ++pos_;
    skip_space();
    return combinator::child;
  }

  static simple_selector scope_selector() {
    simple_selector s;
    s.what = simple_selector::kind::scope;
    return s;
  }

  [[noreturn]] void fail_unexpected() const {
    switch (peek()) {
    case '|':
      fail("namespaces are not supported");
    case ')':
      fail("unexpected ')'");
    default:
      fail(std::string("unexpected '") + peek() + "'");
    }
  }

  compound_selector parse_compound(combinator relation) {
    if (++compounds_ > max_compounds) {
      fail("more than " + std::to_string(max_compounds) + " compound selectors");
    }
    compound_selector compound;
    compound.relation = relation;
    if (peek() == '*') {
      ++pos_;
      compound.parts.push_back({});
    } else if (starts_ident()) {
      compound.parts.push_back(
          {simple_selector::kind::type, ascii_lowercase(parse_ident()), {}, {}, false});
    }
    while (!at_end()) {
      char c = peek();
      if (c == '.' || c == '#' || c == '[') {
        compound.parts.push_back(parse_qualifier());
      } else if (c == ':') {
        compound.parts.push_back(parse_pseudo());
      } else {
        break;
      }
    }
    if (compound.parts.empty()) {
      if (at_end() || peek() == ',' || (in_has_ && peek() == ')')) {
        fail("expected selector");
      }
      if (peek() == '+' || peek() == '~' || peek() == '>') {
        fail(std::string("expected selector before '") + peek() + "'");
      }
      fail_unexpected();
    }
    return compound;
  }

  // `.class`, `#id` or `[attribute...]`; the caller has seen the first character.
  simple_selector parse_qualifier() {
    simple_selector s;
    char c = peek();
    ++pos_;
    if (c == '.') {
      s.what = simple_selector::kind::class_name;
      if (!starts_ident()) {
        fail("expected class name");
      }
      s.name = parse_ident();
    } else if (c == '#') {
      s.what = simple_selector::kind::id;
      // An id is a "hash token": any name characters, so `#123` is accepted too.
      if (!(is_name_char(peek()) || starts_escape())) {
        fail("expected id");
      }
      s.name = parse_name();
    } else {
      s.what = simple_selector::kind::attribute;
      parse_attribute(s);
    }
    return s;
  }

  void parse_attribute(simple_selector& s) {
    skip_space();
    if (!starts_ident()) {
      fail("expected attribute name");
    }
    s.name = ascii_lowercase(parse_ident());
    skip_space();
    if (peek() == ']') {
      ++pos_;
      s.op = attribute_operator::exists;
      return;
    }
    char c = peek();
    if (c == '=') {
      s.op = attribute_operator::equals;
      ++pos_;
    } else if (peek(1) == '=' && (c == '~' || c == '^' || c == '$' || c == '*' || c == '|')) {
      if (c == '|') {
        fail("unsupported attribute operator '|='");
      }
      s.op = c == '~'   ? attribute_operator::includes
             : c == '^' ? attribute_operator::prefix
             : c == '$' ? attribute_operator::suffix
                        : attribute_operator::substring;
      pos_ += 2;
    } else {
      fail("expected ']'");
    }
    skip_space();
    if (peek() == '"' || peek() == '\'') {
      s.value = parse_string();
    } else if (starts_ident()) {
      s.value = parse_ident();
    } else if (at_end()) {
      fail("expected attribute value");
    } else {
      fail("expected attribute value (quote values that are not identifiers, e.g. \"/news\")");
    }
    skip_space();
    if (starts_ident()) {
      fail("attribute flags are not supported");
    }
    if (peek() != ']') {
      fail("expected ']'");
    }
    ++pos_;
  }

  // `:not(simple)`; anything else after a colon is rejected by name.
  simple_selector parse_pseudo() {
    std::size_t colon = pos_;
    ++pos_;
    if (peek() == ':') {
      fail_at(colon, "pseudo-elements are not supported");
    }
    if (!starts_ident()) {
      fail("expected pseudo-class name");
    }
    std::string name = ascii_lowercase(parse_ident());
    if (name == "scope" && peek() != '(') {
      return scope_selector();
    }
    if (name == "has" && peek() == '(') {
      return parse_has(colon);
    }
    if (name != "not" || peek() != '(') {
      fail_at(colon, "unsupported pseudo-class ':" + name + (peek() == '(' ? "()'" : "'"));
    }
    ++pos_;
    skip_space();
    simple_selector s;
    if (peek() == '*') {
      ++pos_;
    } else if (starts_ident()) {
      s.what = simple_selector::kind::type;
      s.name = ascii_lowercase(parse_ident());
    } else if (peek() == '.' || peek() == '#' || peek() == '[') {
      s = parse_qualifier();
    } else if (at_end()) {
      fail("expected selector inside :not()");
    } else if (peek() == ':') {
      fail(":not() takes one simple selector (type, *, .class, #id or [attribute]), not a "
           "pseudo-class");
    } else {
      fail_unexpected();
    }
    skip_space();
    if (peek() != ')') {
      if (at_end()) {
        fail("expected ')'");
      }
      fail("expected ')': :not() takes one simple selector");
    }
    ++pos_;
    s.negated = true;
    return s;
  }

  // `:has(` seen up to its name: a list of relative selectors (`> h3`, `h2.title`), each held
  // behind a :scope compound standing for the element :has() is tested on.
  simple_selector parse_has(std::size_t colon) {
    if (in_has_) {
      fail_at(colon, ":has() inside :has() is not supported");
    }
    in_has_ = true;
    ++pos_;
    auto relative = std::make_shared<selector_list>();
    for (;;) {
      skip_space();
      const combinator relation = parse_combinator();
      if (++compounds_ > max_compounds) {
        fail("more than " + std::to_string(max_compounds) + " compound selectors");
      }
      complex_selector complex;
      compound_selector scope;
      scope.parts.push_back(scope_selector());
      complex.compounds.push_back(std::move(scope));
      complex.compounds.push_back(parse_compound(relation));
      relative->selectors.push_back(parse_rest_of_complex(std::move(complex)));
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != ')') {
        fail("expected ')' to close :has(");
      }
      ++pos_;
      break;
    }
    in_has_ = false;
    simple_selector s;
    s.what = simple_selector::kind::has;
    s.relative = std::move(relative);
    return s;
  }

  bool starts_escape(std::size_t ahead = 0) const {
    return peek(ahead) == '\\' && pos_ + ahead + 1 < text_.size() &&
           text_[pos_ + ahead + 1] != '\n' && text_[pos_ + ahead + 1] != '\r' &&
           text_[pos_ + ahead + 1] != '\f';
  }

  bool starts_ident() const {
    char c = peek();
    if (c == '-') {
      return is_name_start(peek(1)) || peek(1) == '-' || starts_escape(1);
    }
    return is_name_start(c) || starts_escape();
  }

  // Callers check starts_ident() first; past the first character an identifier is a name.
  std::string parse_ident() { return parse_name(); }

  std::string parse_name() {
    std::string out;
    while (!at_end()) {
      if (is_name_char(peek())) {
        out += peek();
        ++pos_;
      } else if (peek() == '\\') {
        parse_escape(out);
      } else {
        break;
      }
    }
    return out;
  }

  // Appends the code point a backslash escape stands for; pos_ is at the backslash.
  void parse_escape(std::string& out) {
    std::size_t backslash = pos_;
    ++pos_;
    if (at_end()) {
      fail_at(backslash, "unfinished escape");
    }
    if (peek() == '\n' || peek() == '\r' || peek() == '\f') {
      fail_at(backslash, "a backslash cannot escape a line break here");
    }
    if (!is_hex(peek())) {
      out += peek();
      ++pos_;
      return;
    }
    char32_t cp = 0;
    for (int digits = 0; digits < 6 && is_hex(peek()); ++digits) {
      char h = ascii_lower(peek());
      cp = cp * 16 + static_cast<char32_t>(is_digit(h) ? h - '0' : h - 'a' + 10);
      ++pos_;
    }
    if (is_ascii_whitespace(peek())) {
      // One whitespace after a hex escape ends it and is not part of the name.
      if (peek() == '\r' && peek(1) == '\n') {
        ++pos_;
      }
      ++pos_;
    }
    if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) {
      cp = 0xFFFD;
    }
    server::append_utf8(out, cp);
  }

  std::string parse_string() {
    char quote = peek();
    ++pos_;
    std::string out;
    for (;;) {
      if (at_end()) {
        fail("unterminated string");
      }
      char c = peek();
      if (c == quote) {
        ++pos_;
        return out;
      }
      if (c == '\n' || c == '\r' || c == '\f') {
        fail("line break inside a string");
      }
      if (c == '\\') {
        if (peek(1) == '\n' || peek(1) == '\f') {
          pos_ += 2; // an escaped line break continues the string
        } else if (peek(1) == '\r') {
          pos_ += peek(2) == '\n' ? 3 : 2;
        } else {
          parse_escape(out);
        }
        continue;
      }
      out += c;
      ++pos_;
    }
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  std::size_t compounds_ = 0;
  bool in_has_ = false;
};

bool has_word(std::string_view list, std::string_view word) {
  if (word.empty()) {
    return false;
  }
  for (char c : word) {
    if (is_ascii_whitespace(c)) {
      return false;
    }
  }
  std::size_t i = 0;
  while (i < list.size()) {
    while (i < list.size() && is_ascii_whitespace(list[i])) {
      ++i;
    }
    std::size_t start = i;
    while (i < list.size() && !is_ascii_whitespace(list[i])) {
      ++i;
    }
    if (list.substr(start, i - start) == word) {
      return true;
    }
  }
  return false;
}

bool attribute_matches(const simple_selector& s, dom::node e) {
  std::optional<std::string_view> value = e.attr(s.name);
  if (!value) {
    return false;
  }
  std::string_view v = *value;
  std::string_view want = s.value;
  switch (s.op) {
  case attribute_operator::exists:
    return true;
  case attribute_operator::equals:
    return v == want;
  case attribute_operator::includes:
    return has_word(v, want);
  case attribute_operator::prefix:
    return !want.empty() && v.starts_with(want);
  case attribute_operator::suffix:
    return !want.empty() && v.ends_with(want);
  case attribute_operator::substring:
    return !want.empty() && v.find(want) != std::string_view::npos;
  }
  return false;
}

// The selection in progress on this thread: the element :scope stands for, and what is left of
// the :has() budget. A selection sets them for its duration (see selection_scope).
struct selection_state {
  dom::node scope;
  std::size_t has_budget = max_has_visits;
  int depth = 0; // selections in progress (a :has() runs one inside another)
};
thread_local selection_state current;

// Sets :scope for one selection and, for the outermost, a fresh :has() budget.
class selection_scope {
 public:
  explicit selection_scope(dom::node scope)
      : saved_(current.scope) {
    if (current.depth++ == 0) {
      current.has_budget = max_has_visits;
    }
    current.scope = scope;
  }
  ~selection_scope() {
    current.scope = saved_;
    --current.depth;
  }
  selection_scope(const selection_scope&) = delete;
  selection_scope& operator=(const selection_scope&) = delete;

 private:
  dom::node saved_;
};

bool has_match(const selector_list& relative, dom::node e);

bool simple_matches(const simple_selector& s, dom::node e) {
  bool hit = false;
  switch (s.what) {
  case simple_selector::kind::scope:
    hit = e == current.scope;
    break;
  case simple_selector::kind::has:
    hit = s.relative && has_match(*s.relative, e);
    break;
  case simple_selector::kind::universal:
    hit = true;
    break;
  case simple_selector::kind::type:
    hit = e.has_tag(s.name);
    break;
  case simple_selector::kind::class_name:
    hit = e.has_class(s.name);
    break;
  case simple_selector::kind::id: {
    std::optional<std::string_view> id = e.id();
    hit = id && *id == s.name;
    break;
  }
  case simple_selector::kind::attribute:
    hit = attribute_matches(s, e);
    break;
  }
  return hit != s.negated;
}

bool compound_matches(const compound_selector& c, dom::node e) {
  for (const simple_selector& s : c.parts) {
    if (!simple_matches(s, e)) {
      return false;
    }
  }
  return true;
}

// The whole list as one automaton over bit positions: bit i stands for "compound i (counted
// over the whole list) matches this element with everything to its left satisfied".
struct plan {
  std::vector<const compound_selector*> compounds;
  std::uint64_t first = 0;      // first compound of a complex selector: no left context
  std::uint64_t child = 0;      // needs bit i-1 on the parent
  std::uint64_t descendant = 0; // needs bit i-1 on some ancestor
  std::uint64_t last = 0;       // the subject: a set bit here means the element matches
};

plan make_plan(const selector_list& list) {
  plan p;
  for (const complex_selector& complex : list.selectors) {
    for (std::size_t i = 0; i < complex.compounds.size(); ++i) {
      std::size_t index = p.compounds.size();
      // parse() caps compounds at 64; a hand-built list beyond that has its excess ignored.
      if (index >= 64) {
        return p;
      }
      std::uint64_t bit = std::uint64_t{1} << index;
      const compound_selector& c = complex.compounds[i];
      p.compounds.push_back(&c);
      if (i == 0) {
        p.first |= bit;
      } else if (c.relation == combinator::child) {
        p.child |= bit;
      } else {
        p.descendant |= bit;
      }
      if (i + 1 == complex.compounds.size()) {
        p.last |= bit;
      }
    }
  }
  return p;
}

struct frame {
  dom::node n;
  std::uint64_t self = 0;  // compounds matched with n as their subject
  std::uint64_t upper = 0; // `self` ORed over n and all its ancestors
};

std::uint64_t step(const plan& p, dom::node e, const frame& parent) {
  if (!e.is_element()) {
    return 0;
  }
  std::uint64_t todo =
      p.first | ((parent.self << 1) & p.child) | ((parent.upper << 1) & p.descendant);
  std::uint64_t matched = 0;
  while (todo != 0) {
    int i = std::countr_zero(todo);
    todo &= todo - 1;
    if (compound_matches(*p.compounds[static_cast<std::size_t>(i)], e)) {
      matched |= std::uint64_t{1} << i;
    }
  }
  return matched;
}

// Frames for the chain from the document down to `n` (inclusive), top first.
std::vector<frame> frames_down_to(const plan& p, dom::node n) {
  std::vector<dom::node> chain;
  for (dom::node a = n; a; a = a.parent()) {
    chain.push_back(a);
  }
  std::vector<frame> frames;
  frames.reserve(chain.size() + 32);
  frame above;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    std::uint64_t self = step(p, *it, above);
    frame f{*it, self, above.upper | self};
    frames.push_back(f);
    above = f;
  }
  return frames;
}

// Calls on_match(e) for each matching element strictly inside root, in document order, until
// it returns false.
template <typename F> void walk(const dom::node& root, const selector_list& list, F&& on_match) {
  if (!root) {
    return;
  }
  plan p = make_plan(list);
  std::vector<frame> open = frames_down_to(p, root);
  const bool inside_has = current.depth > 1; // has_match set up this walk
  for (dom::node e : root.descendant_elements()) {
    if (inside_has) {
      if (current.has_budget == 0) {
        return;
      }
      --current.has_budget;
    }
    dom::node parent = e.parent();
    // Pre-order: the parent is on the stack; everything above it has been left.
    while (open.size() > 1 && !(open.back().n == parent)) {
      open.pop_back();
    }
    const frame& above = open.back();
    std::uint64_t self = step(p, e, above);
    std::uint64_t upper = above.upper | self;
    if ((self & p.last) != 0 && !on_match(e)) {
      return;
    }
    open.push_back({e, self, upper});
  }
}

// :has(relative) on `e`: some element inside e matches one of the relative selectors, with e as
// their :scope. Elements looked at come out of the selection's budget.
bool has_match(const selector_list& relative, dom::node e) {
  if (current.has_budget == 0) {
    return false;
  }
  selection_scope scope(e);
  bool found = false;
  walk(e, relative, [&](dom::node) {
    found = true;
    return false;
  });
  return found;
}

std::string syntax_message(std::string_view selector, std::size_t column, std::string_view reason) {
  std::string out = "bad selector ";
  out += quoted_for_message(selector);
  out += " at column ";
  out += std::to_string(column);
  out += ": ";
  out += reason;
  return out;
}

} // namespace

syntax_error::syntax_error(std::string_view selector, std::size_t column, std::string reason)
    : std::invalid_argument(syntax_message(selector, column, reason))
    , column_(column)
    , reason_(std::move(reason)) {}

selector_list parse(std::string_view text) {
  return parser(text).run();
}

bool matches(const selector_list& list, dom::node e) {
  if (!e.is_element()) {
    return false;
  }
  // Without a starting element, :scope is the document's root element, as in a stylesheet.
  dom::node top = e;
  while (top.parent() && top.parent().is_element()) {
    top = top.parent();
  }
  selection_scope scope(top);
  plan p = make_plan(list);
  return (frames_down_to(p, e).back().self & p.last) != 0;
}

// :scope for a selection from `root`: the root, or for the whole document its root element
// (as document.querySelectorAll and stylesheets have it).
dom::node scope_of(const dom::node& root) {
  return root.is_document() ? root.first_element_child() : root;
}

std::vector<dom::node> select(const dom::node& root, const selector_list& list) {
  selection_scope scope(scope_of(root));
  std::vector<dom::node> found;
  walk(root, list, [&](dom::node e) {
    found.push_back(e);
    return true;
  });
  return found;
}

dom::node select_first(const dom::node& root, const selector_list& list) {
  selection_scope scope(scope_of(root));
  dom::node found;
  walk(root, list, [&](dom::node e) {
    found = e;
    return false;
  });
  return found;
}

} // namespace newsdesk::scrapers::css

// The parser half of the CSS selector engine (selector.hpp): selector text to a selector_list,
// with the subset's syntax errors named and their columns counted in characters. Matching a
// parsed list against a document is selector_matcher.cpp's; the two share only selector.hpp's
// types.
#include "scrapers/css/selector.hpp"
#include "scrapers/text.hpp"
#include "server/core/utf8.hpp"

#include <memory>
#include <string>
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

} // namespace newsdesk::scrapers::css

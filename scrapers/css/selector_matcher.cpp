// The matcher half of the CSS selector engine (selector.hpp): a parsed selector_list against a
// dom::document, in one pass over the elements with a bitmask per open ancestor (see the cost
// note in selector.hpp), and the :scope and :has() budget of the selection in progress. Parsing
// is selector_parser.cpp's.
#include "scrapers/css/selector.hpp"
#include "scrapers/text.hpp"

#include <bit>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace newsdesk::scrapers::css {
namespace {

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

} // namespace

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

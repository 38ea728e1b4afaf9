// A small read-only view of a parsed HTML document.
//
// This is the only interface scrapers (and the selector engine built on it) use to look at a
// page. dom.cpp is the only file in newsdesk that includes <gumbo.h>; swapping the parser is a
// change to that one file.
//
// Ownership: a `document` owns the whole tree and a copy of the input bytes. A `node` is a
// non-owning handle (one pointer) into a document; it stays valid while the document it came
// from is alive, including after that document has been moved. Nothing here is mutable, so a
// document may be read from any number of threads at once once `parse` has returned.
//
// Stack use: nothing in this header recurses over the tree. Traversal, text collection and
// destruction all run in constant stack space, so arbitrarily deep nesting (say 100,000
// nested <div>s) cannot overflow the stack, even on a worker thread with a small stack.
#pragma once

#include <cstddef>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace newsdesk::scrapers::dom {

// The largest page the caller should hand to document::parse. It protects memory and CPU:
// the parsed tree takes roughly 5-10 times the input size, and the HTML tree-building rules
// are quadratic in nesting depth for some markup (100,000 nested <div>s, 0.5 MB of input,
// take ~20 s to build). Real front pages are 0.1-4 MB (the 2025 rendered CNN page is 3.9 MB),
// so 16 MB leaves room for growth while bounding the worst case. parse() itself does not
// enforce it: the fetcher, which knows where the bytes came from, rejects larger bodies.
inline constexpr std::size_t max_document_bytes = 16 * 1024 * 1024;

// What a page may cost before it is parsed. Tree building is quadratic in nesting depth for
// some markup (measured with Debian's Gumbo: 5,000 nested <div>s take 27 ms, 20,000 take 0.7 s,
// 100,000 over a minute), so a page nested deeper than this is refused before parsing, as is one
// with more elements than any real front page has (of the saved pages in ../shared, the deepest,
// the rendered 2025 CNN front page, nests 30 deep; the most elements, 7,776, are AP's, counted
// as measure_markup counts). Generous both ways: real pages are far below, hostile ones far
// above.
inline constexpr std::size_t max_nesting_depth = 2'000;
inline constexpr std::size_t max_elements = 500'000;
// Links are what scrapers weigh one by one (detection scores each, a selector's matches are each
// resolved): about 26 us of CPU a link, so 100,000 of them spent 2.6 s before the parse's CPU
// budget could be checked. The most in ../shared's saved pages is 1,535 (AP); a page with more
// than this is refused before parsing.
inline constexpr std::size_t max_links = 20'000;

// How deep `html`'s elements nest and how many there are, from a linear scan of its tags
// (no tree is built): void elements and those whose end tags HTML lets authors omit (p, li, td,
// option...) do not count as nesting, and the text of script, style, textarea and the like is
// skipped. An estimate that errs high for markup that never closes its elements, which is why
// the limits above are far from real pages.
struct markup_cost {
  std::size_t max_depth = 0;
  std::size_t elements = 0;
  std::size_t links = 0; // <a> elements
};
markup_cost measure_markup(std::string_view html);

// Thrown by scraper::parse for a page past max_nesting_depth, max_elements or max_links; the
// message names which limit and the page's figure.
class too_complex : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class document;

// One attribute of an element, as the parser stored it (names are lowercase for HTML).
struct attribute {
  std::string_view name;
  std::string_view value;
};

// A handle to one node of a document: the document itself, an element, a text run or a
// comment. A default-constructed node is null; every query on a null node returns the empty
// answer (no tag, no attributes, no children, null parent). Cheap to copy; compares by
// identity.
class node {
 public:
  node() = default;

  explicit operator bool() const { return raw_ != nullptr; }
  friend bool operator==(node a, node b) { return a.raw_ == b.raw_; }

  bool is_document() const;
  bool is_element() const; // includes <template>
  bool is_text() const;    // text, whitespace-only text and CDATA
  bool is_comment() const;

  // Tag name in ASCII lowercase ("div", "my-widget", "svg"); empty for non-elements.
  // Unknown tags come from the source text, so custom elements keep their real names.
  std::string tag_name() const;
  // True when this is an element named `name`, compared ASCII case-insensitively. Does not
  // allocate, unlike tag_name(); prefer it in hot loops.
  bool has_tag(std::string_view name) const;

  // The value of the attribute `name` (compared ASCII case-insensitively), or nullopt when
  // absent or when this is not an element. An attribute present without a value gives "".
  // The view points into the document.
  std::optional<std::string_view> attr(std::string_view name) const;
  std::vector<attribute> attributes() const; // in source order
  std::optional<std::string_view> id() const { return attr("id"); }
  // True when the whitespace-separated `class` list contains `name` exactly (case-sensitive,
  // as CSS class selectors are in standards mode). An empty `name` never matches.
  bool has_class(std::string_view name) const;

  // For a text node, its raw text (entities decoded, whitespace untouched); empty otherwise.
  std::string_view raw_text() const;
  // The text content of this node and all its descendants (like DOM textContent, comments
  // excluded), with every run of ASCII whitespace turned into one space and the ends
  // trimmed. Non-breaking spaces are content, not whitespace, and are kept. O(subtree).
  std::string text() const;

  // The parent node: an element, or the document for the root <html>; null for the document.
  node parent() const;

  class child_range;
  class descendant_range;

  // Direct children of any kind, in order.
  child_range children() const;
  std::size_t child_count() const;
  node child(std::size_t index) const; // null when out of range

  // Siblings in the parent's child list (any kind / elements only); null at the ends.
  node previous_sibling() const;
  node next_sibling() const;
  node previous_element_sibling() const;
  node next_element_sibling() const;
  node first_element_child() const;

  // All descendants (not this node itself) in document order (pre-order), either every node
  // or only elements. Iteration walks parent links instead of keeping a stack: constant
  // memory, constant stack, O(1) amortised per step.
  descendant_range descendants() const;
  descendant_range descendant_elements() const;

  // Internal: used by dom.cpp to make nodes; `raw` is a const GumboNode*.
  explicit node(const void* raw)
      : raw_(raw) {}
  const void* raw() const { return raw_; }

 private:
  const void* raw_ = nullptr;
};

class node::child_range {
 public:
  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = node;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = node;

    iterator() = default;
    iterator(node parent, std::size_t index)
        : parent_(parent)
        , index_(index) {}
    node operator*() const { return parent_.child(index_); }
    iterator& operator++() {
      ++index_;
      return *this;
    }
    iterator operator++(int) {
      iterator old = *this;
      ++index_;
      return old;
    }
    friend bool operator==(const iterator& a, const iterator& b) { return a.index_ == b.index_; }

   private:
    node parent_;
    std::size_t index_ = 0;
  };

  explicit child_range(node parent)
      : parent_(parent) {}
  iterator begin() const { return {parent_, 0}; }
  iterator end() const { return {parent_, parent_.child_count()}; }
  bool empty() const { return parent_.child_count() == 0; }

 private:
  node parent_;
};

class node::descendant_range {
 public:
  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = node;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = node;

    iterator() = default;
    iterator(node root, node current, bool elements_only)
        : root_(root)
        , current_(current)
        , elements_only_(elements_only) {}
    node operator*() const { return current_; }
    iterator& operator++();
    iterator operator++(int) {
      iterator old = *this;
      ++*this;
      return old;
    }
    friend bool operator==(const iterator& a, const iterator& b) {
      return a.current_ == b.current_;
    }

   private:
    node root_;
    node current_;
    bool elements_only_ = false;
  };

  descendant_range(node root, bool elements_only)
      : root_(root)
      , elements_only_(elements_only) {}
  iterator begin() const;
  iterator end() const { return {root_, node(), elements_only_}; }

 private:
  node root_;
  bool elements_only_;
};

inline node::child_range node::children() const {
  return child_range(*this);
}
inline node::descendant_range node::descendants() const {
  return {*this, false};
}
inline node::descendant_range node::descendant_elements() const {
  return {*this, true};
}

// A parsed HTML document (HTML5 parsing rules, as a browser would build the tree).
// Move-only; moving keeps every node handle valid. A moved-from document may only be
// destroyed or assigned to.
class document {
 public:
  // Parses any bytes: invalid UTF-8 becomes U+FFFD, NUL bytes and broken markup are repaired
  // as browsers do. Never fails except by running out of memory (which terminates: the
  // underlying C parser cannot report allocation failure). Time and memory grow with the
  // input; callers enforce max_document_bytes. Thread-safe: parses share no state.
  // The text of <script> and <style> elements is dropped before parsing unless `scripts` says
  // kept: no scraper reads it (they read elements and their text), and on real front pages it is
  // 16-80% of the bytes, a fifth to half of a parse's time. The tree is otherwise the same, the
  // elements themselves included (empty).
  enum class script_text { dropped, kept };
  static document parse(std::string_view html, script_text scripts = script_text::dropped);

  document(document&&) noexcept;
  document& operator=(document&&) noexcept;
  document(const document&) = delete;
  document& operator=(const document&) = delete;
  ~document();

  // The document node (parent of <html>, doctype-free); never null.
  node root() const;
  // The <html> element; never null (the parser always creates one).
  node html() const;

  // The href of the first <base> element that has one, in tree order (the HTML standard's
  // rule for a document's base URL; in practice it sits in <head>), untrimmed; nullopt when
  // there is none.
  std::optional<std::string_view> base_href() const;

 private:
  struct state;
  explicit document(std::unique_ptr<state> s);
  std::unique_ptr<state> state_;
};

} // namespace newsdesk::scrapers::dom

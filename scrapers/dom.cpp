#include "scrapers/dom.hpp"

#include "scrapers/text.hpp"

#include <gumbo.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace newsdesk::scrapers::dom {
namespace {

// Every block Gumbo allocates carries this header and sits in a doubly linked list owned by
// the document. Freeing the list in a loop replaces gumbo_destroy_output, which recurses once
// per nesting level and overflows a thread's stack on deeply nested pages. The header is two
// pointers (16 bytes on 64-bit), which keeps malloc's alignment for the block behind it.
struct alignas(std::max_align_t) block_header {
  block_header* prev;
  block_header* next;
};

struct block_list {
  block_header head{&head, &head};

  block_list() = default;
  block_list(const block_list&) = delete;
  block_list& operator=(const block_list&) = delete;
  ~block_list() {
    block_header* b = head.next;
    while (b != &head) {
      block_header* next = b->next;
      std::free(b);
      b = next;
    }
  }
};

void* tracked_allocate(void* userdata, std::size_t size) {
  auto* list = static_cast<block_list*>(userdata);
  auto* b = static_cast<block_header*>(std::malloc(sizeof(block_header) + size));
  if (b == nullptr) {
    // Gumbo dereferences whatever we return and cannot unwind C++ exceptions.
    std::abort();
  }
  b->prev = &list->head;
  b->next = list->head.next;
  list->head.next->prev = b;
  list->head.next = b;
  return b + 1;
}

void tracked_deallocate(void* /*userdata*/, void* ptr) {
  if (ptr == nullptr) {
    return;
  }
  block_header* b = static_cast<block_header*>(ptr) - 1;
  b->prev->next = b->next;
  b->next->prev = b->prev;
  std::free(b);
}

const GumboNode* as_gumbo(const void* raw) {
  return static_cast<const GumboNode*>(raw);
}

const GumboVector* children_of(const GumboNode* n) {
  if (n == nullptr) {
    return nullptr;
  }
  switch (n->type) {
  case GUMBO_NODE_DOCUMENT:
    return &n->v.document.children;
  case GUMBO_NODE_ELEMENT:
  case GUMBO_NODE_TEMPLATE:
    return &n->v.element.children;
  default:
    return nullptr;
  }
}

const GumboElement* element_of(const GumboNode* n) {
  if (n == nullptr || (n->type != GUMBO_NODE_ELEMENT && n->type != GUMBO_NODE_TEMPLATE)) {
    return nullptr;
  }
  return &n->v.element;
}

const GumboNode* child_at(const GumboNode* n, std::size_t index) {
  const GumboVector* kids = children_of(n);
  if (kids == nullptr || index >= kids->length) {
    return nullptr;
  }
  return static_cast<const GumboNode*>(kids->data[index]);
}

bool is_element_type(const GumboNode* n) {
  return n != nullptr && (n->type == GUMBO_NODE_ELEMENT || n->type == GUMBO_NODE_TEMPLATE);
}

char ascii_lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ascii_lower(a[i]) != ascii_lower(b[i])) {
      return false;
    }
  }
  return true;
}

// The tag name as written in the source ("<my-widget a=b>" -> "my-widget"), for tags Gumbo has
// no enum value for. Parsed here rather than with gumbo_tag_from_original_text, which asserts
// on the shapes it accepts.
std::string_view source_tag_name(const GumboElement& e) {
  std::string_view source(e.original_tag.data == nullptr ? "" : e.original_tag.data,
                          e.original_tag.length);
  if (source.size() < 2 || source.front() != '<') {
    return {};
  }
  source.remove_prefix(1);
  std::size_t end = 0;
  while (end < source.size() && !is_ascii_whitespace(source[end]) && source[end] != '/' &&
         source[end] != '>') {
    ++end;
  }
  return source.substr(0, end);
}

std::string_view raw_tag_name(const GumboElement& e) {
  if (e.tag != GUMBO_TAG_UNKNOWN) {
    return gumbo_normalized_tagname(e.tag);
  }
  return source_tag_name(e);
}

// Next node after `n` in document order within the subtree of `root`, or null.
const GumboNode* next_in_order(const GumboNode* root, const GumboNode* n) {
  if (const GumboNode* first = child_at(n, 0)) {
    return first;
  }
  while (n != nullptr && n != root) {
    const GumboNode* parent = n->parent;
    if (const GumboNode* sibling = child_at(parent, n->index_within_parent + 1)) {
      return sibling;
    }
    n = parent;
  }
  return nullptr;
}

} // namespace

bool node::is_document() const {
  return raw_ != nullptr && as_gumbo(raw_)->type == GUMBO_NODE_DOCUMENT;
}

bool node::is_element() const {
  return is_element_type(as_gumbo(raw_));
}

bool node::is_text() const {
  if (raw_ == nullptr) {
    return false;
  }
  auto type = as_gumbo(raw_)->type;
  return type == GUMBO_NODE_TEXT || type == GUMBO_NODE_WHITESPACE || type == GUMBO_NODE_CDATA;
}

bool node::is_comment() const {
  return raw_ != nullptr && as_gumbo(raw_)->type == GUMBO_NODE_COMMENT;
}

std::string node::tag_name() const {
  const GumboElement* e = element_of(as_gumbo(raw_));
  if (e == nullptr) {
    return {};
  }
  std::string name(raw_tag_name(*e));
  for (char& c : name) {
    c = ascii_lower(c);
  }
  return name;
}

bool node::has_tag(std::string_view name) const {
  const GumboElement* e = element_of(as_gumbo(raw_));
  return e != nullptr && !name.empty() && iequals(raw_tag_name(*e), name);
}

std::optional<std::string_view> node::attr(std::string_view name) const {
  const GumboElement* e = element_of(as_gumbo(raw_));
  if (e == nullptr) {
    return std::nullopt;
  }
  for (unsigned i = 0; i < e->attributes.length; ++i) {
    const auto* a = static_cast<const GumboAttribute*>(e->attributes.data[i]);
    if (iequals(a->name, name)) {
      return std::string_view(a->value);
    }
  }
  return std::nullopt;
}

std::vector<attribute> node::attributes() const {
  std::vector<attribute> out;
  const GumboElement* e = element_of(as_gumbo(raw_));
  if (e == nullptr) {
    return out;
  }
  out.reserve(e->attributes.length);
  for (unsigned i = 0; i < e->attributes.length; ++i) {
    const auto* a = static_cast<const GumboAttribute*>(e->attributes.data[i]);
    out.push_back({a->name, a->value});
  }
  return out;
}

bool node::has_class(std::string_view name) const {
  if (name.empty()) {
    return false;
  }
  std::optional<std::string_view> list = attr("class");
  if (!list) {
    return false;
  }
  std::string_view rest = *list;
  while (!rest.empty()) {
    std::size_t start = 0;
    while (start < rest.size() && is_ascii_whitespace(rest[start])) {
      ++start;
    }
    std::size_t end = start;
    while (end < rest.size() && !is_ascii_whitespace(rest[end])) {
      ++end;
    }
    if (rest.substr(start, end - start) == name) {
      return true;
    }
    rest.remove_prefix(end);
  }
  return false;
}

std::string_view node::raw_text() const {
  if (!is_text()) {
    return {};
  }
  const char* t = as_gumbo(raw_)->v.text.text;
  return t == nullptr ? std::string_view() : std::string_view(t);
}

std::string node::text() const {
  collapsed_text out;
  if (is_text()) {
    out.append(raw_text());
  } else {
    for (node n : descendants()) {
      if (n.is_text()) {
        out.append(n.raw_text());
      }
    }
  }
  return std::move(out).take();
}

node node::parent() const {
  if (raw_ == nullptr) {
    return {};
  }
  return node(as_gumbo(raw_)->parent);
}

std::size_t node::child_count() const {
  const GumboVector* kids = children_of(as_gumbo(raw_));
  return kids == nullptr ? 0 : kids->length;
}

node node::child(std::size_t index) const {
  return node(child_at(as_gumbo(raw_), index));
}

node node::previous_sibling() const {
  const GumboNode* n = as_gumbo(raw_);
  if (n == nullptr || n->parent == nullptr || n->index_within_parent == 0) {
    return {};
  }
  return node(child_at(n->parent, n->index_within_parent - 1));
}

node node::next_sibling() const {
  const GumboNode* n = as_gumbo(raw_);
  if (n == nullptr || n->parent == nullptr) {
    return {};
  }
  return node(child_at(n->parent, n->index_within_parent + 1));
}

node node::previous_element_sibling() const {
  node n = previous_sibling();
  while (n && !n.is_element()) {
    n = n.previous_sibling();
  }
  return n;
}

node node::next_element_sibling() const {
  node n = next_sibling();
  while (n && !n.is_element()) {
    n = n.next_sibling();
  }
  return n;
}

node node::first_element_child() const {
  node n = child(0);
  while (n && !n.is_element()) {
    n = n.next_sibling();
  }
  return n;
}

node::descendant_range::iterator& node::descendant_range::iterator::operator++() {
  const auto* root = as_gumbo(root_.raw());
  const auto* n = next_in_order(root, as_gumbo(current_.raw()));
  while (elements_only_ && n != nullptr && !is_element_type(n)) {
    n = next_in_order(root, n);
  }
  current_ = node(n);
  return *this;
}

node::descendant_range::iterator node::descendant_range::begin() const {
  iterator it(root_, root_, elements_only_);
  if (!root_) {
    return end();
  }
  return ++it;
}

struct document::state {
  // Declared first so it is destroyed last: the tree's blocks live in it.
  block_list blocks;
  // Gumbo keeps pointers into the input (original tag text), so the document owns a copy.
  std::string source;
  GumboOutput* output = nullptr;
};

namespace {

bool ascii_iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool one_of(std::string_view name, std::initializer_list<std::string_view> names) {
  return std::any_of(names.begin(), names.end(),
                     [&](std::string_view n) { return ascii_iequals(name, n); });
}

// Elements that never nest: void ones, and those whose end tag HTML lets authors omit (the
// parser closes them itself, so an unclosed one is no deeper).
bool never_nests(std::string_view name) {
  return one_of(name, {"area",  "base",     "br",      "col",   "embed",  "hr",       "img",
                       "input", "link",     "meta",    "param", "source", "track",    "wbr",
                       "p",     "li",       "dt",      "dd",    "option", "optgroup", "tr",
                       "td",    "th",       "thead",   "tbody", "tfoot",  "rb",       "rt",
                       "rp",    "colgroup", "caption", "html",  "head",   "body"});
}

// Elements whose content is text up to their end tag, not markup.
bool raw_text(std::string_view name) {
  return one_of(name, {"script", "style", "textarea", "title", "xmp", "iframe", "noembed",
                       "noframes", "plaintext"});
}

} // namespace

markup_cost measure_markup(std::string_view html) {
  markup_cost cost;
  std::size_t depth = 0;
  std::size_t at = 0;
  const auto n = html.size();
  while ((at = html.find('<', at)) != std::string_view::npos) {
    if (html.compare(at, 4, "<!--") == 0) {
      auto end = html.find("-->", at + 4);
      if (end == std::string_view::npos)
        break;
      at = end + 3;
      continue;
    }
    std::size_t i = at + 1;
    const bool closing = i < n && html[i] == '/';
    if (closing)
      ++i;
    const std::size_t name_start = i;
    while (i < n && (std::isalnum(static_cast<unsigned char>(html[i])) || html[i] == '-'))
      ++i;
    if (i == name_start || !std::isalpha(static_cast<unsigned char>(html[name_start]))) {
      at = at + 1; // "<" in text, "<!DOCTYPE", "<?xml": not an element
      continue;
    }
    const auto name = html.substr(name_start, i - name_start);
    // The end of the tag, past quoted attribute values (which may hold '>').
    char quote = 0;
    while (i < n && (quote || html[i] != '>')) {
      if (quote && html[i] == quote)
        quote = 0;
      else if (!quote && (html[i] == '"' || html[i] == '\''))
        quote = html[i];
      ++i;
    }
    const bool self_closing = i > 0 && i < n && html[i - 1] == '/';
    at = i < n ? i + 1 : n;
    if (closing) {
      if (!never_nests(name) && depth > 0)
        --depth;
      continue;
    }
    ++cost.elements;
    if (ascii_iequals(name, "a"))
      ++cost.links;
    if (raw_text(name)) {
      // Skip to "</name" (any case); an unclosed one runs to the end of the page.
      std::size_t end = at;
      while ((end = html.find("</", end)) != std::string_view::npos &&
             !ascii_iequals(html.substr(end + 2, name.size()), name))
        end += 2;
      at = end == std::string_view::npos ? n : end;
      continue;
    }
    if (never_nests(name) || self_closing)
      continue;
    cost.max_depth = std::max(cost.max_depth, ++depth);
  }
  return cost;
}

namespace {

bool tag_delimiter(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == '/' || c == '>';
}

// Whether `html` at `at` is "<NAME" or "</NAME" (`name` lowercase) followed by what ends a tag
// name.
bool tag_named(std::string_view html, std::size_t at, std::string_view name, bool end_tag) {
  const std::size_t start = at + (end_tag ? 2 : 1);
  if (html.compare(at, end_tag ? 2 : 1, end_tag ? "</" : "<") != 0 ||
      start + name.size() >= html.size())
    return false;
  return ascii_iequals(html.substr(start, name.size()), name) &&
         tag_delimiter(html[start + name.size()]);
}

// Where the start tag that begins at `at` ends (one past its '>'), as the HTML tokenizer reads
// it: quoted attribute values may hold '>'. npos when the page ends first.
std::size_t start_tag_end(std::string_view html, std::size_t at) {
  std::size_t i = at + 1;
  const std::size_t n = html.size();
  while (i < n && !tag_delimiter(html[i]))
    ++i;
  while (i < n) {
    const char c = html[i];
    if (c == '>')
      return i + 1;
    if (c == '=') {
      // A value: quoted, to its closing quote; unquoted, to whitespace or '>'.
      ++i;
      while (i < n && (html[i] == ' ' || html[i] == '\t' || html[i] == '\n' || html[i] == '\f' ||
                       html[i] == '\r'))
        ++i;
      if (i < n && (html[i] == '"' || html[i] == '\'')) {
        const auto close = html.find(html[i], i + 1);
        if (close == std::string_view::npos)
          return close;
        i = close + 1;
      }
      continue;
    }
    ++i; // names, whitespace, '/' and an unquoted value's characters
  }
  return std::string_view::npos;
}

// Where a script element's text that starts at `at` ends: the '<' of its "</script" end tag, as
// the tokenizer's script data states find it ("<!--" escapes, and inside an escape a "<script"
// makes the next "</script" end only the escape). npos when the page ends first.
std::size_t script_text_end(std::string_view html, std::size_t at) {
  enum { data, escaped, double_escaped } state = data;
  std::size_t i = at;
  while ((i = html.find_first_of("<-", i)) != std::string_view::npos) {
    if (html[i] == '-') {
      if (state != data && html.compare(i, 3, "-->") == 0) {
        state = data;
        i += 3;
      } else {
        ++i;
      }
    } else if (tag_named(html, i, "script", true)) {
      if (state != double_escaped)
        return i;
      state = escaped;
      i += 8;
    } else if (state == data && html.compare(i, 4, "<!--") == 0) {
      state = escaped;
      i += 2; // the dashes may also close it at once ("<!-->")
    } else if (state == escaped && tag_named(html, i, "script", false)) {
      state = double_escaped;
      i += 7;
    } else {
      ++i;
    }
  }
  return std::string_view::npos;
}

// Where a raw-text element's text (style, and the others no scraper needs dropped) that starts
// at `at` ends: the '<' of its end tag, or npos.
std::size_t raw_text_end(std::string_view html, std::size_t at, std::string_view name) {
  std::size_t i = at;
  while ((i = html.find("</", i)) != std::string_view::npos && !tag_named(html, i, name, true))
    i += 2;
  return i;
}

// `html` without the text of its <script> and <style> elements, which no scraper reads (they
// walk elements and their text): on today's front pages that text is 16-80% of the bytes
// (inline state for the page's JavaScript, CSS), and Gumbo reads it a code point at a time.
// Everything else is copied as it was, and the elements themselves stay (empty), so the tree is
// the one the whole page makes but for those texts. Text that only looks like those tags is
// left alone: comments, the text of other raw-text and RCDATA elements (a <script> in a
// <textarea> is text), a script's own escapes.
std::string without_script_text(std::string_view html) {
  std::string out;
  out.reserve(html.size());
  std::size_t copied = 0, i = 0;
  const std::size_t n = html.size();
  auto skip_to = [&](std::size_t end) { i = end == std::string_view::npos ? n : end; };
  while ((i = html.find('<', i)) != std::string_view::npos) {
    if (html.compare(i, 4, "<!--") == 0) {
      // A comment: "<!-->" and "<!--->" end at once, others at "-->" (or "--!>").
      if (html.compare(i, 5, "<!-->") == 0 || html.compare(i, 6, "<!--->") == 0) {
        i += 5;
        continue;
      }
      const auto end = html.find("--", i + 4);
      std::size_t close = end;
      while (close != std::string_view::npos && html.compare(close, 3, "-->") != 0 &&
             html.compare(close, 4, "--!>") != 0)
        close = html.find("--", close + 1);
      skip_to(close == std::string_view::npos ? close : html.find('>', close) + 1);
      continue;
    }
    if (i + 1 < n && (html[i + 1] == '!' || html[i + 1] == '?' || html[i + 1] == '/')) {
      // A doctype, a bogus comment or an end tag: to its '>'.
      skip_to(html.find('>', i + 1));
      continue;
    }
    if (i + 1 >= n || !std::isalpha(static_cast<unsigned char>(html[i + 1]))) {
      ++i; // a '<' in text
      continue;
    }
    const bool script = tag_named(html, i, "script", false);
    const bool style = tag_named(html, i, "style", false);
    const auto tag_end = start_tag_end(html, i);
    if (tag_end == std::string_view::npos)
      break;
    // The elements whose text is not markup: to their end tag, so a tag in their text is not
    // taken for one.
    static constexpr std::string_view kept_text[] = {"textarea", "title",   "xmp",
                                                     "iframe",   "noembed", "noframes"};
    if (script || style) {
      const auto text_end =
          script ? script_text_end(html, tag_end) : raw_text_end(html, tag_end, "style");
      if (text_end == std::string_view::npos)
        break; // unclosed: the rest of the page is its text, kept as it was
      out.append(html.substr(copied, tag_end - copied));
      copied = i = text_end;
    } else if (tag_named(html, i, "plaintext", false)) {
      break; // everything after it is text
    } else {
      const auto* kept =
          std::find_if(std::begin(kept_text), std::end(kept_text),
                       [&](std::string_view name) { return tag_named(html, i, name, false); });
      if (kept == std::end(kept_text))
        i = tag_end;
      else if ((i = raw_text_end(html, tag_end, *kept)) == std::string_view::npos)
        break;
    }
  }
  out.append(html.substr(copied));
  return out;
}

} // namespace

document document::parse(std::string_view html, script_text scripts) {
  auto s = std::make_unique<state>();
  if (scripts == script_text::kept)
    s->source.assign(html.data(), html.size());
  else
    s->source = without_script_text(html);
  GumboOptions options = kGumboDefaultOptions;
  options.allocator = &tracked_allocate;
  options.deallocator = &tracked_deallocate;
  options.userdata = &s->blocks;
  // Parse errors are only diagnostics; recording them costs time and memory on broken pages.
  options.max_errors = 0;
  s->output = gumbo_parse_with_options(&options, s->source.data(), s->source.size());
  return document(std::move(s));
}

document::document(std::unique_ptr<state> s)
    : state_(std::move(s)) {}
document::document(document&&) noexcept = default;
document& document::operator=(document&&) noexcept = default;
// No gumbo_destroy_output: ~block_list frees every block iteratively (see block_header).
document::~document() = default;

node document::root() const {
  return node(state_->output->document);
}

node document::html() const {
  return node(state_->output->root);
}

std::optional<std::string_view> document::base_href() const {
  for (node n : root().descendant_elements()) {
    if (n.has_tag("base")) {
      if (auto href = n.attr("href")) {
        return href;
      }
    }
  }
  return std::nullopt;
}

} // namespace newsdesk::scrapers::dom

#include "scrapers/feed_xml.hpp"

#include "scrapers/html_entities.hpp"

#include <libxml/SAX2.h>
#include <libxml/entities.h>

#include <algorithm>
#include <cctype>
#include <new>
#include <unordered_map>
#include <vector>

namespace newsdesk::scrapers::detail {

namespace {

// The text is handed to libxml2 in pieces of this size, so that a reader can take each item as
// it completes and free it: a 16 MiB feed of 200,000 items never holds more than a chunk's.
constexpr std::size_t chunk_bytes = 64 * 1024;

// Names HTML does not know either, kept as text: each costs an entity of its own, so a hostile
// feed of a million different "&x1;" "&x2;"... is bounded; past this many, a name is an error.
constexpr std::size_t max_unknown_names = 256;

bool is_name_start(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c == ':' || c >= 0x80;
}
bool is_name_char(unsigned char c) {
  return is_name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.';
}
// C0 controls other than tab, line feed and carriage return: XML 1.0 allows them nowhere.
bool is_forbidden_control(unsigned char c) {
  return c < 0x20 && c != '\t' && c != '\n' && c != '\r';
}
bool is_xml_char(unsigned long cp) {
  return cp == 0x9 || cp == 0xA || cp == 0xD || (cp >= 0x20 && cp <= 0xD7FF) ||
         (cp >= 0xE000 && cp <= 0xFFFD) || (cp >= 0x10000 && cp <= 0x10FFFF);
}

// The length of a well-formed reference at the start of `text` ("&amp;", "&#233;", "&#xE9;"),
// 0 when it is not one. `valid` says whether a numeric one names a character XML allows.
std::size_t reference_length(std::string_view text, bool& valid) {
  valid = true;
  std::size_t i = 1;
  if (i < text.size() && text[i] == '#') {
    const bool hex = i + 1 < text.size() && (text[i + 1] == 'x' || text[i + 1] == 'X');
    i += hex ? 2 : 1;
    const std::size_t digits_start = i;
    unsigned long value = 0;
    for (; i < text.size(); ++i) {
      const char c = text[i];
      int digit = -1;
      if (c >= '0' && c <= '9')
        digit = c - '0';
      else if (hex && c >= 'a' && c <= 'f')
        digit = c - 'a' + 10;
      else if (hex && c >= 'A' && c <= 'F')
        digit = c - 'A' + 10;
      if (digit < 0)
        break;
      value = std::min(value * (hex ? 16 : 10) + static_cast<unsigned long>(digit), 0x110000UL);
    }
    if (i == digits_start || i >= text.size() || text[i] != ';')
      return 0;
    valid = is_xml_char(value);
    return i + 1;
  }
  if (i >= text.size() || !is_name_start(static_cast<unsigned char>(text[i])))
    return 0;
  while (i < text.size() && is_name_char(static_cast<unsigned char>(text[i])))
    ++i;
  return i < text.size() && text[i] == ';' ? i + 1 : 0;
}

void append_without_controls(std::string& out, std::string_view text) {
  for (char c : text)
    if (!is_forbidden_control(static_cast<unsigned char>(c)))
      out += c;
}

// libxml2's view of one HTML name: an entity of the kind it uses for &amp;, whose text it
// copies into the document as it is. Owned by the stream that made it.
struct html_entity {
  std::string name;
  std::string text;
  xmlEntity entity{};
};

bool same_name_ascii_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// The elements open at each point of the text, so that an end tag that closes another element
// than the last one opened is mended as HTML's parsers and feed readers read it: "<title>A
// <b>bold</title>" closes the <b> too, "</Title>" closes <title>, and an end tag that closes
// nothing open is dropped. libxml2's recovery would instead close one element per end tag,
// and every item after the slip would land inside the one before.
class tag_balance {
 public:
  // A start tag at the start of `tag` ("<name ...>"): its element is open unless it closes
  // itself ("<br/>") or is cut off.
  void start(std::string_view tag) {
    if (!tracking_)
      return;
    std::size_t i = 1;
    while (i < tag.size() && is_name_char(static_cast<unsigned char>(tag[i])))
      ++i;
    const auto name = tag.substr(1, i - 1);
    char quote = 0;
    // A tag longer than any real one (a quote never closed) is not followed: the scan stays
    // linear in the text.
    tag = tag.substr(0, max_tag_bytes);
    for (; i < tag.size(); ++i) {
      if (quote) {
        quote = tag[i] == quote ? 0 : quote;
      } else if (tag[i] == '"' || tag[i] == '\'') {
        quote = tag[i];
      } else if (tag[i] == '>') {
        if (tag[i - 1] != '/')
          open_.emplace_back(name);
        // Deeper than any feed nests: a hostile document is left to libxml2's own limits.
        if (open_.size() > max_depth)
          tracking_ = false;
        return;
      } else if (tag[i] == '<') {
        return; // not a tag after all
      }
    }
  }

  // An end tag at the start of `tag` ("</name>"). Returns how many bytes of the text it takes
  // when it is mended (its replacement, if any, appended to `out`, and what was wrong in
  // `what`); 0 when it is copied as is.
  std::size_t end(std::string_view tag, std::string& out, std::string& what) {
    if (!tracking_)
      return 0;
    std::size_t i = 2;
    while (i < tag.size() && is_name_char(static_cast<unsigned char>(tag[i])))
      ++i;
    const auto name = tag.substr(2, i - 2);
    while (i < tag.size() && (tag[i] == ' ' || tag[i] == '\t' || tag[i] == '\n' || tag[i] == '\r'))
      ++i;
    if (name.empty() || i >= tag.size() || tag[i] != '>')
      return 0;
    if (!open_.empty() && open_.back() == name) {
      open_.pop_back();
      return 0;
    }
    auto at = open_.size();
    while (at > 0 && !same_name_ascii_case(open_[at - 1], name))
      --at;
    what = at > 0 ? "Opening and ending tag mismatch: " + open_.back() + " and " + std::string(name)
                  : "the end tag </" + std::string(name) + "> closes no open element";
    if (at > 0) // closes every element opened inside the one it names, then that one
      for (auto n = open_.size(); n >= at; --n) {
        out += "</" + open_.back() + ">";
        open_.pop_back();
      }
    return i + 1;
  }

 private:
  static constexpr std::size_t max_depth = 256;
  static constexpr std::size_t max_tag_bytes = 16 * 1024;
  std::vector<std::string> open_;
  bool tracking_ = true;
};

} // namespace

std::string mend_markup(std::string_view text, std::optional<markup_slip>* first_slip) {
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  tag_balance tags;
  std::string what;
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '<') {
      // Sections that are not markup, copied whole; an unclosed one runs to the end.
      static constexpr std::pair<std::string_view, std::string_view> verbatim[] = {
          {"<![CDATA[", "]]>"}, {"<!--", "-->"}, {"<?", "?>"}};
      bool copied = false;
      for (const auto& [open, close] : verbatim) {
        if (!text.substr(i).starts_with(open))
          continue;
        auto end = text.find(close, i + open.size());
        end = end == std::string_view::npos ? text.size() : end + close.size();
        append_without_controls(out, text.substr(i, end - i));
        i = end;
        copied = true;
        break;
      }
      if (copied)
        continue;
      // A tag starts with a name, '/', '!' or '?'; any other '<' is text ("a < b").
      const auto next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
      if (next == '/') {
        if (const auto mended = tags.end(text.substr(i), out, what)) {
          if (first_slip && !*first_slip)
            *first_slip = markup_slip{
                1 + static_cast<int>(std::count(text.begin(), text.begin() + i, '\n')), what};
          i += mended;
          continue;
        }
      } else if (is_name_start(next)) {
        tags.start(text.substr(i));
      }
      out += is_name_start(next) || next == '/' || next == '!' ? "<" : "&lt;";
      ++i;
    } else if (c == '&') {
      bool valid = true;
      const auto length = reference_length(text.substr(i), valid);
      if (length > 0) {
        if (valid) // HTML also writes "&#X2014;"; XML only "&#x2014;"
          out += text.substr(i, 3) == "&#X" ? "&#x" + std::string(text.substr(i + 3, length - 3))
                                            : std::string(text.substr(i, length));
        i += length;
        continue;
      }
      // "&eacute" without its ';', as HTML still reads a few names, unless it is followed by
      // '=' (a URL's "?a=1&copy=2"); any other '&' is text, and what follows it is copied.
      std::size_t end = i + 1;
      while (end < text.size() && std::isalnum(static_cast<unsigned char>(text[end])))
        ++end;
      const auto name = text.substr(i + 1, end - i - 1);
      const auto after = end < text.size() ? static_cast<unsigned char>(text[end]) : 0;
      if (!name.empty() && after != '=' && !is_name_char(after) && is_legacy_html_reference(name)) {
        out += "&" + std::string(name) + ";";
        i = end;
      } else {
        out += "&amp;";
        ++i;
      }
    } else {
      if (!is_forbidden_control(c))
        out += static_cast<char>(c);
      ++i;
    }
  }
  return out;
}

std::string describe(const xmlError* error) {
  if (!error || !error->message)
    return "not well-formed XML";
  std::string message = error->message;
  while (!message.empty() && (message.back() == '\n' || message.back() == ' '))
    message.pop_back();
  return error->line > 0 ? "line " + std::to_string(error->line) + ": " + message : message;
}

// What the parser's hooks share, reached through the parser context's _private.
struct xml_stream::state {
  std::optional<xmlError> first_error;
  std::optional<xmlError> mended_error; // the first end tag mend_markup mended
  bool declares_entities = false;
  std::unordered_map<std::string, std::unique_ptr<html_entity>> entities;
  std::size_t unknown_names = 0;

  state() = default;
  state(const state&) = delete;
  state& operator=(const state&) = delete;
  ~state() {
    if (first_error)
      xmlResetError(&*first_error);
    if (mended_error)
      xmlResetError(&*mended_error);
  }

  static state& of(void* parser) {
    return *static_cast<state*>(static_cast<xmlParserCtxt*>(parser)->_private);
  }

  // Every error is reported here (the context's structured handler). Only the first fatal one
  // is kept: warnings, and namespace errors (an undeclared prefix), leave a document readable.
  static void keep_error(void* parser, xmlError* error) {
    auto& s = of(parser);
    if (error && error->level == XML_ERR_FATAL && !s.first_error) {
      s.first_error.emplace();
      xmlCopyError(error, &*s.first_error);
    }
  }

  // An entity declaration: the document is refused (feed.hpp), so reading stops right there.
  static void refuse_entity(void* parser, const xmlChar*, int, const xmlChar*, const xmlChar*,
                            xmlChar*) {
    of(parser).declares_entities = true;
    xmlStopParser(static_cast<xmlParserCtxt*>(parser));
  }
  static void refuse_unparsed_entity(void* parser, const xmlChar*, const xmlChar*, const xmlChar*,
                                     const xmlChar*) {
    refuse_entity(parser, nullptr, 0, nullptr, nullptr, nullptr);
  }

  // libxml2 asks here for every named reference (XML_PARSE_OLDSAX puts this hook before its own
  // table of the five XML ones).
  static xmlEntity* get_entity(void* parser, const xmlChar* name) {
    auto* ctxt = static_cast<xmlParserCtxt*>(parser);
    auto& s = of(parser);
    // In recovery mode libxml2 drops every reference once the document is known not to be
    // well-formed, even &amp;. The stream keeps its own record of that (first_error), so the
    // parser may go on as if it were, and keep the text.
    if (s.first_error)
      ctxt->wellFormed = 1;
    if (xmlEntity* xml = xmlGetPredefinedEntity(name))
      return xml;
    return s.html(view(name), ctxt->instate == XML_PARSER_ATTRIBUTE_VALUE);
  }

  xmlEntity* html(std::string_view name, bool in_attribute) {
    const std::string key(name);
    if (auto it = entities.find(key); it != entities.end())
      return in_attribute && it->second->text.size() != 1 ? nullptr : &it->second->entity;
    auto text = html_named_reference(name);
    if (!text) {
      if (unknown_names >= max_unknown_names)
        return nullptr;
      ++unknown_names;
      text = "&" + key + ";";
    }
    auto made = std::make_unique<html_entity>();
    made->name = key;
    made->text = std::move(*text);
    made->entity.type = XML_ENTITY_DECL;
    made->entity.etype = XML_INTERNAL_PREDEFINED_ENTITY;
    made->entity.name = reinterpret_cast<const xmlChar*>(made->name.c_str());
    made->entity.content = reinterpret_cast<xmlChar*>(made->text.data());
    made->entity.length = static_cast<int>(made->text.size());
    auto* entity = &made->entity;
    const bool one_byte = made->text.size() == 1;
    entities.emplace(key, std::move(made));
    // In an attribute value libxml2 copies one byte of such an entity (it expects &amp;'s
    // kind): a longer text would be cut, so the reference is left unresolved there (dropped
    // from the value, and counted as an error).
    return in_attribute && !one_byte ? nullptr : entity;
  }
};

xml_stream::xml_stream(std::string_view text, const std::string& base)
    : state_(std::make_unique<state>()) {
  // A slip mend_markup mended is still the document's error, as libxml2 would have named it.
  std::optional<markup_slip> slip;
  text_ = mend_markup(text, &slip);
  if (slip) {
    xmlError& e = state_->mended_error.emplace();
    e = xmlError{};
    e.domain = XML_FROM_PARSER;
    e.code = XML_ERR_TAG_NAME_MISMATCH;
    e.level = XML_ERR_FATAL;
    e.line = slip->line;
    e.message =
        reinterpret_cast<char*>(xmlStrdup(reinterpret_cast<const xmlChar*>(slip->what.c_str())));
  }
  static const bool initialised = (xmlInitParser(), true); // once, before threads share it
  (void)initialised;
  ctxt_ =
      xmlCreatePushParserCtxt(nullptr, nullptr, nullptr, 0, base.empty() ? nullptr : base.c_str());
  if (!ctxt_)
    throw std::bad_alloc();
  // No network, no DTD loading, no entity substitution (entity references stay references;
  // declared ones are refused above). The text is UTF-8 whatever its declaration says:
  // feed_encoding.hpp has decoded it.
  xmlCtxtUseOptions(ctxt_, XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING |
                               XML_PARSE_NOCDATA | XML_PARSE_RECOVER | XML_PARSE_OLDSAX |
                               XML_PARSE_IGNORE_ENC);
  ctxt_->_private = state_.get();
  ctxt_->sax->serror = &state::keep_error;
  ctxt_->sax->getEntity = &state::get_entity;
  ctxt_->sax->entityDecl = &state::refuse_entity;
  ctxt_->sax->unparsedEntityDecl = &state::refuse_unparsed_entity;
}

xml_stream::~xml_stream() {
  if (ctxt_) {
    xmlFreeDoc(ctxt_->myDoc);
    ctxt_->myDoc = nullptr;
    xmlFreeParserCtxt(ctxt_);
  }
}

void xml_stream::parse_next() {
  if (finished_)
    return;
  const auto size = std::min(chunk_bytes, text_.size() - parsed_);
  const bool last = parsed_ + size == text_.size();
  xmlParseChunk(ctxt_, text_.data() + parsed_, static_cast<int>(size), last ? 1 : 0);
  parsed_ += size;
  // The parser stops by itself at what it cannot recover from (and at an entity declaration).
  finished_ = last || ctxt_->instate == XML_PARSER_EOF || ctxt_->disableSAX;
}

xmlDoc* xml_stream::document() const {
  return ctxt_->myDoc;
}

bool xml_stream::declares_entities() const {
  return state_->declares_entities;
}

bool xml_stream::open_at_end(const xmlNode* node) const {
  for (int i = 0; i < ctxt_->nodeNr; ++i)
    if (ctxt_->nodeTab[i] == node)
      return true;
  return false;
}

const xmlError* xml_stream::first_error() const {
  const xmlError* parsed = state_->first_error ? &*state_->first_error : nullptr;
  const xmlError* mended = state_->mended_error ? &*state_->mended_error : nullptr;
  if (parsed && mended)
    return parsed->line <= mended->line ? parsed : mended;
  return parsed ? parsed : mended;
}

} // namespace newsdesk::scrapers::detail

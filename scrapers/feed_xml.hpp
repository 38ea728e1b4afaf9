// The XML layer under the feed and OPML readers (feed.hpp): a document's text read with
// libxml2's push parser a chunk at a time, with what feeds need that XML does not give.
//
//  - HTML's named references (&eacute;, &rsquo;, &nbsp;: html_entities.hpp) are resolved as
//    libxml2 meets them, through its entity-lookup hook; a name HTML does not know either
//    stays in the text as written ("&fooo;"), as browsers keep it.
//  - Markup as the web writes it is mended before parsing (mend_markup): a bare '&' ("AT&T",
//    "?a=1&b=2") and a '<' that starts no tag are escaped, control characters XML forbids and
//    numeric references to them dropped, HTML's "&#X2014;" and "&eacute" (no ';', for the
//    names HTML reads so) written as XML's, and an end tag that closes another element than
//    the last one opened made to close what it names (its name's case aside) and everything
//    opened inside it, or dropped when it closes nothing open ("<title>A <b>B</title>",
//    "</Title>", a stray "</i>"), as HTML's parsers and feed readers read them. A well-formed
//    document is left exactly as it is; a mended end tag is still reported as the error.
//  - What is still not well-formed is read in libxml2's recovery mode, as far as it goes; the
//    first error is kept so that a caller that finds nothing can say what was wrong.
//  - Nothing is fetched: no network, no DTD, no external entity; a document that declares
//    entities of its own is stopped at the declaration (no entity expansion at all, so no
//    "billion laughs").
//
// Not thread-safe: one xml_stream per document, used by one thread. Different streams may run
// on different threads at once.
#pragma once

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace newsdesk::scrapers::detail {

// An end tag mend_markup mended: its line (from 1) and what was wrong.
struct markup_slip {
  int line = 0;
  std::string what; // "Opening and ending tag mismatch: b and title"
};

// `text` (UTF-8) with the web's slips mended into XML, as described above. Sections whose
// characters are not markup (CDATA, comments, processing instructions) are copied as they are,
// less the control characters XML allows nowhere. The first end tag mended is described in
// `first_slip` when given. Linear in the text.
std::string mend_markup(std::string_view text, std::optional<markup_slip>* first_slip = nullptr);

// What a reader sees of an XML name or text: libxml2 speaks unsigned char.
inline std::string_view view(const xmlChar* text) {
  return text ? std::string_view(reinterpret_cast<const char*>(text)) : std::string_view();
}

class xml_stream {
 public:
  // Reads `text` (UTF-8, mended or not: the stream mends it) as a document at `base` (for
  // xml:base, may be empty). Throws std::bad_alloc when libxml2 cannot start.
  xml_stream(std::string_view text, const std::string& base);
  ~xml_stream();
  xml_stream(const xml_stream&) = delete;
  xml_stream& operator=(const xml_stream&) = delete;

  // Parses the next chunk of the text (64 KiB). Once finished() is true, the tree is whole.
  void parse_next();
  bool finished() const { return finished_; }

  // The tree built so far (null before the first element). The caller may unlink and free any
  // node that is complete: one with a next sibling, or any node once finished(). The stream
  // frees the rest.
  xmlDoc* document() const;

  // Whether `node` was still open when the text ended (a feed cut off in the middle of an
  // item): its content is not whole. Meaningful once finished().
  bool open_at_end(const xmlNode* node) const;

  // The document declared entities of its own (the parser stopped there).
  bool declares_entities() const;
  // The first well-formedness error, if the text had one (reading went on past it).
  const xmlError* first_error() const;

 private:
  struct state;
  std::string text_;
  std::size_t parsed_ = 0;
  bool finished_ = false;
  std::unique_ptr<state> state_;
  xmlParserCtxt* ctxt_ = nullptr;
};

// "line 12: Opening and ending tag mismatch: item and channel": a libxml2 error as a message.
std::string describe(const xmlError* error);

} // namespace newsdesk::scrapers::detail

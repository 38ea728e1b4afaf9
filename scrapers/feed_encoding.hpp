// How a feed's bytes become text. XML names its encoding in three places, and RFC 7303 (XML
// media types, section 3) says which wins when a document comes over HTTP: a byte order mark
// first, then the charset parameter of the response's Content-Type, then the document's own
// XML declaration (with XML's appendix F telling UTF-16 and UTF-32 apart by their first bytes
// when there is no BOM); without any of them, UTF-8.
//
// Feeds do not always say what they are: a "UTF-8" feed saved by an old tool in Latin-1, a
// server that labels every response ISO-8859-1. Bytes that are not valid in the encoding found
// are read in the next one that fits (the declaration, UTF-8, then windows-1252, whose
// characters at 0x80-0x9F are what such feeds mean), so one wrong label never loses a feed.
//
// Conversion is glibc's iconv: every encoding libxml2 itself would read. Pure functions, safe
// from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace newsdesk::scrapers {

struct decoded_text {
  std::string text;     // the document as UTF-8, its byte order mark taken off
  std::string encoding; // what it was read as: "UTF-8", "UTF-16LE", "windows-1252"...
  // Empty, or what the bytes claimed and were not: "declared UTF-8 but is not; read as
  // windows-1252".
  std::string mismatch;
};

// `bytes` (an XML document) as text, its encoding found as above. `content_type` is the HTTP
// Content-Type it came with, if any ("application/rss+xml; charset=ISO-8859-1"). Never fails:
// the last resort, ISO-8859-1, reads any byte. The text may be up to three times the size of
// the bytes (a byte of windows-1252 can be three of UTF-8).
decoded_text decode_xml(std::string_view bytes, std::string_view content_type = {});

// `text` (UTF-8) with each C1 control character (U+0080-U+009F) replaced by the character
// windows-1252 has at that byte (U+0092 -> U+2019 "’"), as HTML does for &#146;: what feeds
// mean by them, whether they wrote the reference or mislabelled windows-1252 bytes as Latin-1.
// The five bytes windows-1252 leaves undefined stay as they are.
std::string c1_as_windows_1252(std::string_view text);

// `text` decoded once more when it is UTF-8 that was read as Latin-1 and written out again as
// UTF-8 ("CafÃ©" -> "Café"): every character below U+0100, some above U+007F, and their bytes
// valid UTF-8. nullopt for any other text, which is left alone.
std::optional<std::string> undo_double_utf8(std::string_view text);

// The charset parameter of a Content-Type value, unquoted: "text/xml; Charset=\"utf-8\"" ->
// "utf-8"; empty when it has none.
std::string charset_of(std::string_view content_type);

} // namespace newsdesk::scrapers

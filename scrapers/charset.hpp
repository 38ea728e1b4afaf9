// A fetched page's bytes made the UTF-8 text Gumbo reads, its charset found the way browsers
// find it (the HTML standard's encoding sniffing, section 13.2.3.2): a byte order mark (first, as
// the standard and every browser have it: a BOM cannot be wrong, a server's default charset
// often is), then the HTTP Content-Type's charset, then a <meta charset> or <meta
// http-equiv="Content-Type"> in the first 1,024 bytes (the standard's prescan), then, when nothing
// says, a guess from the bytes: UTF-8 when they are valid UTF-8, else ICU's detector (ucsdet).
// Labels mean what the Encoding Standard says they mean, so "ISO-8859-1" and "us-ascii" are read as
// windows-1252, "EUC-KR" as windows-949 and "GB2312"/"GBK" as GB18030 (each a superset that real
// pages declaring the smaller set rely on); a label naming no encoding of that standard (UTF-7,
// EBCDIC, made-up names) is passed over as if absent. Converted with ICU; bytes that are not valid
// in the charset become U+FFFD.
//
// Only pages go through here: feeds keep libxml2's own rules (their XML declaration).
// Pure functions, safe from any thread. Converting costs a pass over the page (a few ms per MB);
// a page with no declared charset that is not UTF-8 also costs the detector's look at up to
// max_detect_bytes of it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace newsdesk::scrapers {

// The standard's prescan reads this much of a page for a <meta> that names its charset.
inline constexpr std::size_t prescan_bytes = 1024;
// What ICU's detector is shown of an undeclared page, from its first byte that is not ASCII (the
// head before it says nothing): enough text for a sure guess (64 KiB of Shift_JIS is tens of
// thousands of characters), a few milliseconds rather than tens for a 4 MB page.
inline constexpr std::size_t max_detect_bytes = 64 * 1024;

// Where a page's charset came from.
enum class charset_source { bom, http, meta, valid_utf8, detected };

struct page_charset {
  std::string name; // the Encoding Standard's name: "UTF-8", "Shift_JIS", "windows-1251"
  charset_source source = charset_source::valid_utf8;
};

// The encoding a label names ("  Latin1 " -> "windows-1252", "sjis" -> "Shift_JIS"), or "" when
// it names none the Encoding Standard has.
std::string encoding_for_label(std::string_view label);

// The standard's prescan of the first prescan_bytes of `bytes`: the label a <meta charset> or a
// <meta http-equiv="content-type" content="...; charset=..."> gives, comments, other tags and
// their attributes skipped; "" when none does.
std::string prescan_meta_charset(std::string_view bytes);

// The charset of a page served with `content_type` (the HTTP header; may be empty).
page_charset find_page_charset(std::string_view bytes, std::string_view content_type);

// `bytes` (a page served with `content_type`) in UTF-8, without its byte order mark; nullopt when
// they are to be read as they are (UTF-8 without a BOM: invalid sequences are Gumbo's to
// replace), so the common case copies nothing.
std::optional<std::string> page_as_utf8(std::string_view bytes, std::string_view content_type);

} // namespace newsdesk::scrapers

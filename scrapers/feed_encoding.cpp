#include "scrapers/feed_encoding.hpp"

#include "scrapers/text.hpp"

#include <iconv.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <optional>
#include <vector>

namespace newsdesk::scrapers {

namespace {

std::string lower_ascii(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z')
      c = static_cast<char>(c - 'A' + 'a');
  return out;
}

bool starts_with_bytes(std::string_view bytes, std::initializer_list<unsigned char> prefix) {
  if (bytes.size() < prefix.size())
    return false;
  std::size_t i = 0;
  for (unsigned char b : prefix)
    if (static_cast<unsigned char>(bytes[i++]) != b)
      return false;
  return true;
}

// A byte order mark: the encoding it names and its length. UTF-32LE's mark starts with
// UTF-16LE's, so it is looked for first.
struct byte_order_mark {
  const char* encoding;
  std::size_t length;
};
std::optional<byte_order_mark> bom_of(std::string_view bytes) {
  if (starts_with_bytes(bytes, {0x00, 0x00, 0xFE, 0xFF}))
    return byte_order_mark{"UTF-32BE", 4};
  if (starts_with_bytes(bytes, {0xFF, 0xFE, 0x00, 0x00}))
    return byte_order_mark{"UTF-32LE", 4};
  if (starts_with_bytes(bytes, {0xFE, 0xFF}))
    return byte_order_mark{"UTF-16BE", 2};
  if (starts_with_bytes(bytes, {0xFF, 0xFE}))
    return byte_order_mark{"UTF-16LE", 2};
  if (starts_with_bytes(bytes, {0xEF, 0xBB, 0xBF}))
    return byte_order_mark{"UTF-8", 3};
  return std::nullopt;
}

// XML appendix F: "<" (or "<?") in UTF-32 or UTF-16 without a byte order mark.
const char* wide_encoding_by_pattern(std::string_view bytes) {
  if (starts_with_bytes(bytes, {0x00, 0x00, 0x00, 0x3C}))
    return "UTF-32BE";
  if (starts_with_bytes(bytes, {0x3C, 0x00, 0x00, 0x00}))
    return "UTF-32LE";
  if (starts_with_bytes(bytes, {0x00, 0x3C, 0x00, 0x3F}))
    return "UTF-16BE";
  if (starts_with_bytes(bytes, {0x3C, 0x00, 0x3F, 0x00}))
    return "UTF-16LE";
  return nullptr;
}

// The encoding an XML declaration at the start of ASCII-compatible bytes names ("<?xml
// version='1.0' encoding='ISO-8859-1'?>" -> "ISO-8859-1"); empty without one. Whitespace before
// the declaration (which XML forbids, and scripts print) is passed over.
std::string declared_encoding(std::string_view bytes) {
  bytes = bytes.substr(0, 1024); // a declaration is a line
  while (!bytes.empty() && is_ascii_whitespace(bytes.front()))
    bytes.remove_prefix(1);
  if (!bytes.starts_with("<?xml"))
    return {};
  bytes = bytes.substr(0, bytes.find("?>"));
  auto at = bytes.find("encoding");
  if (at == std::string_view::npos)
    return {};
  bytes.remove_prefix(at + 8);
  bytes = trim_ascii_whitespace(bytes);
  if (!bytes.starts_with('='))
    return {};
  bytes = trim_ascii_whitespace(bytes.substr(1));
  if (bytes.empty() || (bytes.front() != '"' && bytes.front() != '\''))
    return {};
  const char quote = bytes.front();
  bytes.remove_prefix(1);
  return std::string(bytes.substr(0, bytes.find(quote)));
}

// Labels the web uses that glibc's iconv does not know, and iconv's name for what they mean (the
// WHATWG Encoding Standard's label table, where iconv lacks the label): Microsoft's and old
// browsers' "ks_c_5601-1987" for Korean (Windows' superset of EUC-KR), "x-" names from before
// the registry had them, Mac OS Roman, Hebrew's logical and visual ISO-8859-8.
struct label_alias {
  std::string_view label;
  const char* iconv_name;
};
constexpr label_alias web_labels[] = {
    {"ks_c_5601-1987", "CP949"},
    {"ks_c_5601-1989", "CP949"},
    {"ksc_5601", "CP949"},
    {"ksc5601", "CP949"},
    {"csksc56011987", "CP949"},
    {"iso-ir-149", "CP949"},
    {"korean", "CP949"},
    {"windows-949", "CP949"},
    {"x-mac-roman", "MACINTOSH"},
    {"mac", "MACINTOSH"},
    {"csmacintosh", "MACINTOSH"},
    {"x-mac-cyrillic", "MAC-CYRILLIC"},
    {"x-mac-ukrainian", "MAC-CYRILLIC"},
    {"x-sjis", "SHIFT_JIS"},
    {"x-euc-jp", "EUC-JP"},
    {"x-gbk", "GBK"},
    {"x-x-big5", "BIG5"},
    {"x-cp1250", "CP1250"},
    {"x-cp1251", "CP1251"},
    {"x-cp1252", "CP1252"},
    {"x-cp1253", "CP1253"},
    {"x-cp1254", "CP1254"},
    {"x-cp1255", "CP1255"},
    {"x-cp1256", "CP1256"},
    {"x-cp1257", "CP1257"},
    {"x-cp1258", "CP1258"},
    {"unicode-1-1-utf-8", "UTF-8"},
    {"unicode11utf8", "UTF-8"},
    {"unicode20utf8", "UTF-8"},
    {"x-unicode20utf8", "UTF-8"},
    {"iso-8859-8-i", "ISO-8859-8"},
    {"csiso88598i", "ISO-8859-8"},
    {"logical", "ISO-8859-8"},
    {"visual", "ISO-8859-8"},
};

// What iconv should be asked for when a label names `label`, given the bytes it labels: UTF-16
// and UTF-32 without an order take it from the bytes (little-endian when "<" says so, else
// big-endian as the standards default); GB2312 is read as GB18030, its superset, as the WHATWG
// Encoding Standard does; the web's labels above as what they mean. Other names are given to
// iconv as written (in capitals), which knows their aliases.
std::string iconv_name(std::string_view label, std::string_view body) {
  const auto name = lower_ascii(trim_ascii_whitespace(label));
  for (const auto& alias : web_labels)
    if (name == alias.label)
      return alias.iconv_name;
  const bool little = body.size() >= 2 && body[0] != '\0' && body[1] == '\0';
  if (name == "utf-16" || name == "utf16" || name == "ucs-2" || name == "iso-10646-ucs-2" ||
      name == "unicode" || name == "csunicode")
    return little ? "UTF-16LE" : "UTF-16BE";
  if (name == "utf-32" || name == "utf32" || name == "ucs-4" || name == "iso-10646-ucs-4")
    return little ? "UTF-32LE" : "UTF-32BE";
  if (name == "gb2312" || name == "csgb2312")
    return "GB18030";
  std::string upper = name;
  for (char& c : upper)
    if (c >= 'a' && c <= 'z')
      c = static_cast<char>(c - 'a' + 'A');
  return upper;
}

struct iconv_closer {
  iconv_t cd;
  ~iconv_closer() { iconv_close(cd); }
};

// `bytes` read as `encoding`, as UTF-8; nullopt when iconv does not know the encoding or the
// bytes are not valid in it (including a sequence cut off at the end).
std::optional<std::string> convert(std::string_view bytes, const std::string& encoding) {
  iconv_t cd = iconv_open("UTF-8", encoding.c_str());
  if (cd == reinterpret_cast<iconv_t>(static_cast<std::intptr_t>(-1)))
    return std::nullopt;
  iconv_closer closer{cd};
  std::string out(bytes.size() + bytes.size() / 2 + 16, '\0');
  char* in = const_cast<char*>(bytes.data()); // iconv's signature; it does not write there
  std::size_t in_left = bytes.size();
  std::size_t written = 0;
  // The bytes, then the end (a stateful encoding such as ISO-2022-JP may still write there).
  for (bool flushing = false;;) {
    char* to = out.data() + written;
    std::size_t to_left = out.size() - written;
    const auto result = iconv(cd, flushing ? nullptr : &in, &in_left, &to, &to_left);
    written = out.size() - to_left;
    if (result == static_cast<std::size_t>(-1)) {
      if (errno != E2BIG)
        return std::nullopt; // EILSEQ: not this encoding; EINVAL: cut off at the end
      out.resize(out.size() * 2);
    } else if (!flushing) {
      flushing = true;
    } else {
      break;
    }
  }
  out.resize(written);
  return out;
}

} // namespace

std::string c1_as_windows_1252(std::string_view text) {
  // What windows-1252 puts at 0x80-0x9F, asked of iconv once (undefined bytes keep their C1).
  static const auto table = [] {
    std::array<std::string, 32> t;
    for (int i = 0; i < 32; ++i) {
      const char byte = static_cast<char>(0x80 + i);
      auto decoded = convert(std::string_view(&byte, 1), "windows-1252");
      t[static_cast<std::size_t>(i)] =
          decoded ? *decoded : std::string{'\xC2', static_cast<char>(0x80 + i)};
    }
    return t;
  }();
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    // U+0080-U+009F is C2 80-C2 9F in UTF-8.
    const auto next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
    if (static_cast<unsigned char>(text[i]) == 0xC2 && next >= 0x80 && next <= 0x9F) {
      out += table[next - 0x80];
      ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::optional<std::string> undo_double_utf8(std::string_view text) {
  // Each character as its Latin-1 byte: C2 xx is xx, C3 xx is xx + 0x40.
  std::string bytes;
  bool high = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      bytes += static_cast<char>(c);
      continue;
    }
    const auto next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
    if ((c != 0xC2 && c != 0xC3) || (next & 0xC0) != 0x80)
      return std::nullopt; // a character past U+00FF (or not UTF-8): not decoded twice
    bytes += static_cast<char>(c == 0xC2 ? next : next + 0x40);
    high = true;
    ++i;
  }
  if (!high)
    return std::nullopt;
  return convert(bytes, "UTF-8");
}

std::string charset_of(std::string_view content_type) {
  // Parameters follow the media type, each "; name=value", the value a token or quoted.
  auto at = content_type.find(';');
  while (at != std::string_view::npos) {
    auto parameter = content_type.substr(at + 1);
    const auto next = parameter.find(';');
    auto current = trim_ascii_whitespace(parameter.substr(0, next));
    const auto equals = current.find('=');
    if (equals != std::string_view::npos &&
        lower_ascii(trim_ascii_whitespace(current.substr(0, equals))) == "charset") {
      auto value = trim_ascii_whitespace(current.substr(equals + 1));
      if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
          value.back() == value.front())
        value = value.substr(1, value.size() - 2);
      return std::string(value);
    }
    at = next == std::string_view::npos ? next : at + 1 + next;
  }
  return {};
}

decoded_text decode_xml(std::string_view bytes, std::string_view content_type) {
  // The candidates in the order RFC 7303 gives them, then the fallbacks; the first that reads
  // the bytes wins. A BOM is authoritative, but bytes invalid in it still get the fallbacks.
  struct candidate {
    std::string encoding;
    const char* said_by; // who named it, for the mismatch note; null for a fallback
  };
  std::vector<candidate> candidates;
  std::string_view body = bytes;
  if (auto bom = bom_of(bytes)) {
    body.remove_prefix(bom->length);
    candidates.push_back({bom->encoding, "the byte order mark says"});
  } else {
    if (auto charset = charset_of(content_type); !charset.empty())
      candidates.push_back({iconv_name(charset, body), "the Content-Type says"});
    if (const char* wide = wide_encoding_by_pattern(body)) {
      candidates.push_back({wide, "its first bytes say"});
    } else if (auto declared = declared_encoding(body); !declared.empty()) {
      auto name = iconv_name(declared, body);
      if (!name.starts_with("UTF-16") && !name.starts_with("UTF-32"))
        candidates.push_back({std::move(name), "declared"});
    }
  }
  candidates.push_back({"UTF-8", nullptr});
  candidates.push_back({"windows-1252", nullptr});
  candidates.push_back({"ISO-8859-1", nullptr});

  for (std::size_t i = 0; i < candidates.size(); ++i) {
    auto text = convert(body, candidates[i].encoding);
    if (!text)
      continue;
    decoded_text out{std::move(*text), candidates[i].encoding, {}};
    if (i > 0)
      out.mismatch =
          (candidates.front().said_by ? std::string(candidates.front().said_by) + " " +
                                            candidates.front().encoding + ", which does not read it"
                                      : std::string("not UTF-8")) +
          "; read as " + out.encoding;
    return out;
  }
  // Unreachable: ISO-8859-1 maps every byte. Kept so that the function always returns text.
  return {std::string(body), "ISO-8859-1", {}};
}

} // namespace newsdesk::scrapers

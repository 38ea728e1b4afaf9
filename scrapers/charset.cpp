#include "scrapers/charset.hpp"

#include "scrapers/feed_encoding.hpp"
#include "scrapers/text.hpp"
#include "server/core/utf8.hpp"

#include <unicode/ucnv.h>
#include <unicode/ucnv_cb.h>
#include <unicode/ucsdet.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace newsdesk::scrapers {

namespace {

struct converter_closer {
  void operator()(UConverter* c) const { ucnv_close(c); }
};
using converter = std::unique_ptr<UConverter, converter_closer>;

struct detector_closer {
  void operator()(UCharsetDetector* d) const { ucsdet_close(d); }
};

converter open_converter(const std::string& name) {
  UErrorCode status = U_ZERO_ERROR;
  converter c(ucnv_open(name.c_str(), &status));
  if (U_FAILURE(status))
    return nullptr;
  return c;
}

// ICU's name for the converter behind `label` ("sjis" and "Shift_JIS" are both
// "ibm-943_P15A-2003"), or "" when ICU knows no such label.
std::string icu_name_of(const std::string& label) {
  auto c = open_converter(label);
  if (!c)
    return {};
  UErrorCode status = U_ZERO_ERROR;
  const char* name = ucnv_getName(c.get(), &status);
  return U_FAILURE(status) || !name ? std::string() : std::string(name);
}

// The Encoding Standard's encodings, keyed by the ICU converter that reads each, with the labels
// whose ICU converter is a subset of what the standard reads under that label (ISO-8859-1 is read
// as windows-1252, as every browser does: pages that say Latin-1 use its C1 range for curly
// quotes). Built once: the converters' names depend on ICU's data, not on this list's spelling.
const std::map<std::string, std::string>& encodings() {
  static const std::map<std::string, std::string> table = [] {
    // {label ICU reads, the encoding it stands for}
    const std::pair<const char*, const char*> rows[] = {
        {"UTF-8", "UTF-8"},
        {"IBM866", "IBM866"},
        {"ISO-8859-2", "ISO-8859-2"},
        {"ISO-8859-3", "ISO-8859-3"},
        {"ISO-8859-4", "ISO-8859-4"},
        {"ISO-8859-5", "ISO-8859-5"},
        {"ISO-8859-6", "ISO-8859-6"},
        {"ISO-8859-7", "ISO-8859-7"},
        {"ISO-8859-8", "ISO-8859-8"},
        {"ISO-8859-10", "ISO-8859-10"},
        {"ISO-8859-13", "ISO-8859-13"},
        {"ISO-8859-14", "ISO-8859-14"},
        {"ISO-8859-15", "ISO-8859-15"},
        {"KOI8-R", "KOI8-R"},
        {"KOI8-U", "KOI8-U"},
        {"macintosh", "macintosh"},
        {"x-mac-cyrillic", "x-mac-cyrillic"},
        {"windows-874", "windows-874"},
        {"iso-8859-11", "windows-874"},
        {"windows-1250", "windows-1250"},
        {"windows-1251", "windows-1251"},
        {"windows-1252", "windows-1252"},
        {"ISO-8859-1", "windows-1252"},
        {"US-ASCII", "windows-1252"},
        {"windows-1253", "windows-1253"},
        {"windows-1254", "windows-1254"},
        {"ISO-8859-9", "windows-1254"},
        {"windows-1255", "windows-1255"},
        {"windows-1256", "windows-1256"},
        {"windows-1257", "windows-1257"},
        {"windows-1258", "windows-1258"},
        {"GB18030", "GB18030"},
        {"GBK", "GB18030"},
        {"GB2312", "GB18030"},
        {"Big5", "Big5"},
        {"EUC-JP", "EUC-JP"},
        {"ISO-2022-JP", "ISO-2022-JP"},
        {"Shift_JIS", "Shift_JIS"},
        {"windows-949", "EUC-KR"},
        {"EUC-KR", "EUC-KR"},
        {"UTF-16BE", "UTF-16BE"},
        {"UTF-16LE", "UTF-16LE"},
        {"UTF-16", "UTF-16LE"},
    };
    std::map<std::string, std::string> out;
    for (const auto& [label, encoding] : rows)
      if (auto name = icu_name_of(label); !name.empty())
        out.emplace(std::move(name), encoding);
    return out;
  }();
  return table;
}

// The ICU converter that reads an encoding as the Encoding Standard defines it: the superset
// where ICU's converter of that name is stricter.
std::string converter_for(const std::string& encoding) {
  if (encoding == "EUC-KR")
    return "windows-949";
  return encoding;
}

bool is_utf8(const std::string& encoding) {
  return encoding == "UTF-8";
}

// A page that says UTF-16 in a <meta> is not UTF-16 (its ASCII <meta> could not have been read
// otherwise): the standard reads it as UTF-8.
std::string from_meta(std::string encoding) {
  return encoding.starts_with("UTF-16") ? std::string("UTF-8") : encoding;
}

constexpr bool is_space(char c) {
  return is_ascii_whitespace(c);
}

constexpr bool is_letter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

constexpr char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

bool starts_with_nocase(std::string_view text, std::size_t at, std::string_view word) {
  if (text.size() - std::min(at, text.size()) < word.size())
    return false;
  for (std::size_t i = 0; i < word.size(); ++i)
    if (lower(text[at + i]) != word[i])
      return false;
  return true;
}

// The standard's "extract a character encoding from a meta element" on a content attribute's
// value ("text/html; charset=windows-1251"): the label, or nullopt.
std::optional<std::string> charset_in_content(std::string_view value) {
  std::size_t at = 0;
  for (;;) {
    while (at < value.size() && !starts_with_nocase(value, at, "charset"))
      ++at;
    if (at >= value.size())
      return std::nullopt;
    at += 7;
    while (at < value.size() && is_space(value[at]))
      ++at;
    if (at < value.size() && value[at] == '=')
      break;
  }
  ++at;
  while (at < value.size() && is_space(value[at]))
    ++at;
  if (at >= value.size())
    return std::nullopt;
  if (value[at] == '"' || value[at] == '\'') {
    const auto close = value.find(value[at], at + 1);
    if (close == std::string_view::npos)
      return std::nullopt;
    return std::string(value.substr(at + 1, close - at - 1));
  }
  auto end = at;
  while (end < value.size() && !is_space(value[end]) && value[end] != ';')
    ++end;
  return std::string(value.substr(at, end - at));
}

// The prescan's walk over the first bytes of a page, one construct at a time.
class prescanner {
 public:
  explicit prescanner(std::string_view bytes)
      : s_(bytes.substr(0, prescan_bytes)) {}

  std::string run() {
    while (at_ < s_.size()) {
      if (starts_with_nocase(s_, at_, "<!--")) {
        // To the '>' of the first "-->" after "<!" ("<!-->" closes itself).
        const auto end = s_.find("-->", at_ + 2);
        if (end == std::string_view::npos)
          return {};
        at_ = end + 3;
        continue;
      }
      if (starts_with_nocase(s_, at_, "<meta") && at_ + 5 < s_.size() &&
          (is_space(s_[at_ + 5]) || s_[at_ + 5] == '/')) {
        at_ += 5;
        if (auto found = meta(); !found.empty())
          return found;
        continue;
      }
      if (s_[at_] == '<' && at_ + 1 < s_.size()) {
        const auto next = s_[at_ + 1];
        const auto letter_at = next == '/' ? at_ + 2 : at_ + 1;
        if (letter_at < s_.size() && is_letter(s_[letter_at])) {
          // A tag: its name, then its attributes, are skipped.
          at_ = letter_at;
          while (at_ < s_.size() && !is_space(s_[at_]) && s_[at_] != '>')
            ++at_;
          while (attribute()) {
          }
          if (ran_out_)
            return {};
          ++at_;
          continue;
        }
        if (next == '!' || next == '/' || next == '?') {
          const auto end = s_.find('>', at_ + 1);
          if (end == std::string_view::npos)
            return {};
          at_ = end + 1;
          continue;
        }
      }
      ++at_;
    }
    return {};
  }

 private:
  // A <meta>'s attributes: an encoding when they name one the way the standard accepts.
  std::string meta() {
    bool got_pragma = false;
    std::optional<bool> need_pragma;
    std::string charset;
    std::vector<std::string> seen;
    while (attribute()) {
      if (std::find(seen.begin(), seen.end(), name_) != seen.end())
        continue;
      seen.push_back(name_);
      if (name_ == "http-equiv") {
        got_pragma = got_pragma || value_ == "content-type";
      } else if (name_ == "content" && charset.empty()) {
        if (auto label = charset_in_content(value_)) {
          charset = encoding_for_label(*label);
          need_pragma = true;
        }
      } else if (name_ == "charset") {
        charset = encoding_for_label(value_);
        need_pragma = false;
      }
    }
    if (ran_out_ || !need_pragma || (*need_pragma && !got_pragma) || charset.empty()) {
      if (!ran_out_)
        ++at_;
      return {};
    }
    return from_meta(charset);
  }

  // The standard's "get an attribute": sets name_ and value_ (lowercased, as the standard
  // compares them) and returns true, or returns false at the tag's '>' or the end of the bytes.
  bool attribute() {
    name_.clear();
    value_.clear();
    while (at_ < s_.size() && (is_space(s_[at_]) || s_[at_] == '/'))
      ++at_;
    if (at_ >= s_.size())
      return out();
    if (s_[at_] == '>')
      return false;
    // The name, up to '=', a space, '/' or '>'.
    for (;; ++at_) {
      if (at_ >= s_.size())
        return out();
      const char c = s_[at_];
      if (c == '=' && !name_.empty())
        break;
      if (is_space(c)) {
        while (at_ < s_.size() && is_space(s_[at_]))
          ++at_;
        if (at_ >= s_.size())
          return out();
        if (s_[at_] != '=')
          return true; // a name without a value; this byte starts what follows
        break;
      }
      if (c == '/' || c == '>')
        return true;
      name_ += lower(c);
    }
    ++at_; // past '='
    while (at_ < s_.size() && is_space(s_[at_]))
      ++at_;
    if (at_ >= s_.size())
      return out();
    const char first = s_[at_];
    if (first == '"' || first == '\'') {
      for (++at_;; ++at_) {
        if (at_ >= s_.size())
          return out();
        if (s_[at_] == first) {
          ++at_;
          return true;
        }
        value_ += lower(s_[at_]);
      }
    }
    if (first == '>')
      return true;
    for (;; ++at_) {
      if (at_ >= s_.size())
        return out();
      if (is_space(s_[at_]) || s_[at_] == '>')
        return true;
      value_ += lower(s_[at_]);
    }
  }

  bool out() {
    ran_out_ = true;
    at_ = s_.size();
    return false;
  }

  std::string_view s_;
  std::size_t at_ = 0;
  bool ran_out_ = false; // the bytes ended inside a tag: the prescan found nothing
  std::string name_, value_;
};

// ICU's guess from a sample of the page: its best-rated encoding that the Encoding Standard has,
// else windows-1252 (the standard's fallback for pages that say nothing).
std::string detect(std::string_view bytes) {
  auto first = std::find_if(bytes.begin(), bytes.end(),
                            [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
  auto start = static_cast<std::size_t>(first - bytes.begin());
  // From the tag boundary before it, so the detector's markup filter sees whole tags.
  if (auto gt = bytes.rfind('>', start); gt != std::string_view::npos)
    start = gt + 1;
  const auto sample = bytes.substr(start, max_detect_bytes);
  UErrorCode status = U_ZERO_ERROR;
  std::unique_ptr<UCharsetDetector, detector_closer> detector(ucsdet_open(&status));
  if (U_FAILURE(status))
    return "windows-1252";
  ucsdet_enableInputFilter(detector.get(), true); // tags say nothing of the language
  ucsdet_setText(detector.get(), sample.data(), static_cast<std::int32_t>(sample.size()), &status);
  std::int32_t found = 0;
  const UCharsetMatch** matches = ucsdet_detectAll(detector.get(), &found, &status);
  for (std::int32_t i = 0; U_SUCCESS(status) && i < found; ++i) {
    const char* name = ucsdet_getName(matches[i], &status);
    if (U_SUCCESS(status) && name)
      if (auto encoding = encoding_for_label(name); !encoding.empty())
        return encoding;
  }
  return "windows-1252";
}

// A byte order mark: its encoding and length.
std::optional<std::pair<std::string, std::size_t>> byte_order_mark(std::string_view bytes) {
  if (bytes.starts_with("\xEF\xBB\xBF"))
    return std::pair<std::string, std::size_t>{"UTF-8", 3};
  if (bytes.starts_with("\xFE\xFF"))
    return std::pair<std::string, std::size_t>{"UTF-16BE", 2};
  if (bytes.starts_with("\xFF\xFE"))
    return std::pair<std::string, std::size_t>{"UTF-16LE", 2};
  return std::nullopt;
}

// To-Unicode error callback: one U+FFFD per invalid sequence (ICU's own substitute is U+001A
// for several legacy charsets, a control character that would vanish from titles silently).
void replace_invalid(const void*, UConverterToUnicodeArgs* args, const char*, std::int32_t,
                     UConverterCallbackReason reason, UErrorCode* status) {
  if (reason > UCNV_IRREGULAR)
    return; // reset, close, clone: nothing to write
  *status = U_ZERO_ERROR;
  const UChar replacement = 0xFFFD;
  ucnv_cbToUWriteUChars(args, &replacement, 1, 0, status);
}

// `bytes` read as `encoding`, in UTF-8.
std::string convert(std::string_view bytes, const std::string& encoding) {
  auto from = open_converter(converter_for(encoding));
  auto to = open_converter("UTF-8");
  if (!from || !to)
    return std::string(bytes); // the table only holds encodings ICU opened once already
  UErrorCode status = U_ZERO_ERROR;
  ucnv_setToUCallBack(from.get(), replace_invalid, nullptr, nullptr, nullptr, &status);
  std::string out(bytes.size() + bytes.size() / 2 + 16, '\0');
  const char* source = bytes.data();
  char* target = out.data();
  std::array<UChar, 4096> pivot;
  UChar* pivot_source = pivot.data();
  UChar* pivot_target = pivot.data();
  bool reset = true;
  for (;;) {
    status = U_ZERO_ERROR;
    ucnv_convertEx(to.get(), from.get(), &target, out.data() + out.size(), &source,
                   bytes.data() + bytes.size(), pivot.data(), &pivot_source, &pivot_target,
                   pivot.data() + pivot.size(), reset, true, &status);
    reset = false;
    if (status != U_BUFFER_OVERFLOW_ERROR)
      break;
    const auto used = target - out.data();
    out.resize(out.size() * 2);
    target = out.data() + used;
  }
  out.resize(static_cast<std::size_t>(target - out.data()));
  return out;
}

} // namespace

std::string encoding_for_label(std::string_view label) {
  const auto trimmed = trim_ascii_whitespace(label);
  // Labels are short ASCII words; anything else is not one (and is not handed to ICU).
  if (trimmed.empty() || trimmed.size() > 64 ||
      std::any_of(trimmed.begin(), trimmed.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x21 || static_cast<unsigned char>(c) > 0x7E;
      }))
    return {};
  std::string lowered(trimmed);
  std::transform(lowered.begin(), lowered.end(), lowered.begin(), lower);
  if (lowered == "x-user-defined")
    return "windows-1252";
  const auto& table = encodings();
  auto it = table.find(icu_name_of(lowered));
  return it == table.end() ? std::string() : it->second;
}

std::string prescan_meta_charset(std::string_view bytes) {
  return prescanner(bytes).run();
}

page_charset find_page_charset(std::string_view bytes, std::string_view content_type) {
  if (auto bom = byte_order_mark(bytes))
    return {bom->first, charset_source::bom};
  if (auto declared = encoding_for_label(charset_of(content_type)); !declared.empty())
    return {declared, charset_source::http};
  if (auto meta = prescan_meta_charset(bytes); !meta.empty())
    return {meta, charset_source::meta};
  if (server::valid_utf8(bytes))
    return {"UTF-8", charset_source::valid_utf8};
  return {detect(bytes), charset_source::detected};
}

std::optional<std::string> page_as_utf8(std::string_view bytes, std::string_view content_type) {
  const auto found = find_page_charset(bytes, content_type);
  if (found.source == charset_source::bom)
    bytes.remove_prefix(byte_order_mark(bytes)->second);
  else if (is_utf8(found.name))
    return std::nullopt;
  if (is_utf8(found.name))
    return std::string(bytes);
  return convert(bytes, found.name);
}

} // namespace newsdesk::scrapers

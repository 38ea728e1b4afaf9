#include "server/words/language.hpp"

#include "server/core/utf8.hpp"

// CLD2's public header uses FILE without including <cstdio>.
#include <cstdio>

#include <cld2/public/compact_lang_det.h>
#include <cld2/public/encodings.h>
#include <unicode/uscript.h>
#include <utf8proc.h>

#include <malloc.h>

#include <algorithm>
#include <array>
#include <initializer_list>

namespace newsdesk::server::words {

namespace {

// The scripts that tell a title's language, or narrow it to a few: each with the languages
// written in it and the one a title in it is taken to be when CLD2 names none of them. Latin,
// and any script not listed, leave the choice to CLD2.
struct script_languages {
  UScriptCode script;
  std::string_view fallback;
  std::initializer_list<std::string_view> languages;
};

const std::array<script_languages, 22>& scripts() {
  static const std::array<script_languages, 22> table{{
      {USCRIPT_CYRILLIC,
       "ru",
       {"ru", "uk", "be", "bg", "sr", "mk", "kk", "ky", "tg", "mn", "tt", "ba", "cv", "ce", "os",
        "ab", "uz", "az", "tk"}},
      {USCRIPT_ARABIC, "ar", {"ar", "fa", "ur", "ps", "ku", "ckb", "sd", "ug", "ks", "az"}},
      // Han stands for Chinese and Japanese: kana anywhere in the title makes it Japanese.
      {USCRIPT_HAN, "zh", {"zh", "ja", "yue", "wuu"}},
      {USCRIPT_HIRAGANA, "ja", {"ja"}},
      {USCRIPT_KATAKANA, "ja", {"ja"}},
      {USCRIPT_HANGUL, "ko", {"ko"}},
      {USCRIPT_THAI, "th", {"th"}},
      {USCRIPT_LAO, "lo", {"lo"}},
      {USCRIPT_KHMER, "km", {"km"}},
      {USCRIPT_MYANMAR, "my", {"my"}},
      {USCRIPT_GREEK, "el", {"el"}},
      {USCRIPT_HEBREW, "he", {"he", "yi"}},
      {USCRIPT_DEVANAGARI, "hi", {"hi", "mr", "ne", "sa", "kok", "mai", "bho"}},
      {USCRIPT_BENGALI, "bn", {"bn", "as"}},
      {USCRIPT_GEORGIAN, "ka", {"ka"}},
      {USCRIPT_ARMENIAN, "hy", {"hy"}},
      {USCRIPT_TAMIL, "ta", {"ta"}},
      {USCRIPT_TELUGU, "te", {"te"}},
      {USCRIPT_KANNADA, "kn", {"kn"}},
      {USCRIPT_MALAYALAM, "ml", {"ml"}},
      {USCRIPT_GUJARATI, "gu", {"gu"}},
      {USCRIPT_ETHIOPIC, "am", {"am", "ti"}},
  }};
  return table;
}

const script_languages* languages_of(UScriptCode script) {
  for (const auto& s : scripts())
    if (s.script == script)
      return &s;
  return nullptr;
}

bool written_in(std::string_view language, const script_languages& s) {
  return std::find(s.languages.begin(), s.languages.end(), language) != s.languages.end();
}

// Languages also written in the Latin script (Serbian, Azerbaijani, Uzbek, ...): a declared one
// fits a Latin title as well as its other script.
bool also_latin(std::string_view language) {
  static constexpr std::array<std::string_view, 7> list{"sr", "az", "uz", "tk", "ku", "kk", "mn"};
  return std::find(list.begin(), list.end(), language) != list.end();
}

// What the letters of a title are written in: the script most of them are in (Han and kana
// counted together as Han), whether any is kana, and whether there are letters at all.
struct title_script {
  UScriptCode script = USCRIPT_COMMON;
  bool kana = false;
  bool letters = false;
};

title_script script_of(std::string_view title) {
  std::array<std::pair<UScriptCode, int>, 8> counts{}; // the first few scripts met
  title_script out;
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(title.data());
  const auto size = static_cast<utf8proc_ssize_t>(title.size());
  for (utf8proc_ssize_t at = 0; at < size;) {
    UScriptCode script = USCRIPT_LATIN;
    if (p[at] < 0x80) { // ASCII (most of most titles): only its letters count, all Latin
      const auto lower = p[at++] | 0x20;
      if (lower < 'a' || lower > 'z')
        continue;
    } else {
      utf8proc_int32_t c = 0;
      auto n = utf8proc_iterate(p + at, size - at, &c);
      at += n > 0 ? n : 1;
      if (n <= 0)
        continue;
      const auto category = utf8proc_category(c);
      if (category < UTF8PROC_CATEGORY_LU || category > UTF8PROC_CATEGORY_LO)
        continue;
      UErrorCode error = U_ZERO_ERROR;
      script = uscript_getScript(c, &error);
      if (U_FAILURE(error) || script == USCRIPT_COMMON || script == USCRIPT_INHERITED)
        continue;
    }
    out.letters = true;
    if (script == USCRIPT_HIRAGANA || script == USCRIPT_KATAKANA) {
      out.kana = true;
      script = USCRIPT_HAN;
    }
    for (auto& [s, count] : counts)
      if (count == 0 || s == script) {
        s = script;
        ++count;
        break;
      }
  }
  int best = 0;
  for (const auto& [s, count] : counts)
    if (count > best) {
      best = count;
      out.script = s;
    }
  return out;
}

// The country-code domain of `url`'s host ("jp" for www.asahi.co.jp), CLD2's hint; "" for none.
std::string country_domain(std::string_view url) {
  auto scheme = url.find("://");
  if (scheme == std::string_view::npos)
    return {};
  auto host = url.substr(scheme + 3);
  host = host.substr(0, host.find_first_of("/:?#"));
  const auto dot = host.rfind('.');
  if (dot == std::string_view::npos || host.size() - dot != 3)
    return {};
  std::string tld(host.substr(dot + 1));
  for (auto& c : tld)
    if (c >= 'A' && c <= 'Z')
      c = static_cast<char>(c - 'A' + 'a');
  return tld;
}

// CLD2's best guess, as a code ("" when it has none).
std::string cld2_guess(std::string_view title, std::string_view url) {
  // CLD2 allocates a few hundred kilobytes for each call and frees them: with glibc's default
  // trim threshold the freed top of the heap goes back to the kernel every time, and the brk
  // calls and TLB flushes cost fifty times the detection itself (200 us a title, against 4).
  // Keeping up to 16 MiB of freed heap in the process stops that.
  static const bool untrimmed = (mallopt(M_TRIM_THRESHOLD, 16 << 20), true);
  (void)untrimmed;
  const auto tld = country_domain(url);
  CLD2::CLDHints hints{nullptr, tld.empty() ? nullptr : tld.c_str(), CLD2::UNKNOWN_ENCODING,
                       CLD2::UNKNOWN_LANGUAGE};
  CLD2::Language top3[3];
  int percent3[3];
  double score3[3];
  int text_bytes = 0;
  bool reliable = false;
  // CLD2 takes its input to be valid UTF-8 and reads past the end of a buffer that is not (a
  // fuzzed title, invalid bytes after a NUL, crashed it in its script scanner): it gets the title
  // with each invalid sequence replaced and NULs as spaces, followed by zero bytes.
  std::string text = replace_invalid_utf8(title);
  std::replace(text.begin(), text.end(), '\0', ' ');
  const auto length = static_cast<int>(text.size());
  text.append(8, '\0');
  const auto guess =
      CLD2::ExtDetectLanguageSummary(text.data(), length, true, &hints, 0, top3, percent3, score3,
                                     nullptr, &text_bytes, &reliable);
  // Unsure (a short title), CLD2 answers "unknown" but still ranks the languages it saw.
  const auto best = guess != CLD2::UNKNOWN_LANGUAGE ? guess : top3[0];
  if (best == CLD2::UNKNOWN_LANGUAGE)
    return {};
  return language_tag(CLD2::LanguageCode(best));
}

} // namespace

std::string language_tag(std::string_view declared) {
  while (!declared.empty() && (declared.front() == ' ' || declared.front() == '\t'))
    declared.remove_prefix(1);
  const auto end = declared.find_first_of("-_ \t;,");
  const auto primary = declared.substr(0, end);
  if (primary.size() < 2 || primary.size() > 3)
    return {};
  std::string code;
  for (char c : primary) {
    if (c >= 'A' && c <= 'Z')
      c = static_cast<char>(c - 'A' + 'a');
    if (c < 'a' || c > 'z')
      return {};
    code += c;
  }
  if (code == "iw")
    return "he";
  if (code == "in")
    return "id";
  if (code == "ji")
    return "yi";
  if (code == "nb" || code == "nn")
    return "no";
  if (code == "und" || code == "mul" || code == "zxx")
    return {};
  return code;
}

std::string detect_language(std::string_view title, std::string_view url) {
  const auto script = script_of(title);
  if (!script.letters)
    return {};
  if (script.kana)
    return "ja";
  auto guess = cld2_guess(title, url);
  const auto* languages = languages_of(script.script);
  if (!languages) // Latin and the rest: CLD2's guess; English when it has none (a few words)
    return guess.empty() && script.script == USCRIPT_LATIN ? "en" : guess;
  return written_in(guess, *languages) ? guess : std::string(languages->fallback);
}

std::string headline_language(std::string_view declared, std::string_view title,
                              std::string_view url) {
  auto tag = language_tag(declared);
  if (tag.empty())
    return detect_language(title, url);
  const auto script = script_of(title);
  if (!script.letters)
    return tag;
  const auto* languages = languages_of(script.script);
  const bool fits = languages ? written_in(tag, *languages) && (tag != "zh" || !script.kana)
                              : also_latin(tag) || std::none_of(scripts().begin(), scripts().end(),
                                                                [&](const script_languages& s) {
                                                                  return written_in(tag, s);
                                                                });
  return fits ? tag : detect_language(title, url);
}

} // namespace newsdesk::server::words

#include "server/words/words.hpp"

#include "server/words/fold.hpp"
#include "server/words/stop_words.hpp"

#include <libstemmer.h>
#include <unicode/brkiter.h>
#include <unicode/uchar.h>
#include <unicode/utext.h>
#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

namespace newsdesk::server::words {

namespace {

// Snowball's name for each language it stems (libstemmer 2.2's list, by ISO 639 code).
constexpr std::array<std::pair<std::string_view, const char*>, 28> snowball_names{{
    {"ar", "arabic"},     {"hy", "armenian"},   {"eu", "basque"},    {"ca", "catalan"},
    {"da", "danish"},     {"nl", "dutch"},      {"en", "english"},   {"fi", "finnish"},
    {"fr", "french"},     {"de", "german"},     {"el", "greek"},     {"hi", "hindi"},
    {"hu", "hungarian"},  {"id", "indonesian"}, {"ga", "irish"},     {"it", "italian"},
    {"lt", "lithuanian"}, {"ne", "nepali"},     {"no", "norwegian"}, {"pt", "portuguese"},
    {"ro", "romanian"},   {"ru", "russian"},    {"sr", "serbian"},   {"es", "spanish"},
    {"sv", "swedish"},    {"ta", "tamil"},      {"tr", "turkish"},   {"yi", "yiddish"},
}};

const char* snowball_name(std::string_view language) {
  for (const auto& [code, name] : snowball_names)
    if (code == language)
      return name;
  return nullptr;
}

// Slavic languages build a root's words with suffixes a stemmer leaves on (Russian "камчатк" and
// "камчатск" from Камчатке and Камчатском, "оренбуржь" and "оренбургск"), so their words are
// cut to their first six letters, as truncation stemmers for these languages do. Measured on
// bench/stories' multilingual file, Russian: F1 0.731 -> 0.778 at precision 0.99 (five letters
// 0.790, seven 0.754); six keeps more roots apart.
constexpr std::array<std::string_view, 12> slavic_languages{"be", "bg", "bs", "cs", "hr", "mk",
                                                            "pl", "ru", "sk", "sl", "sr", "uk"};
constexpr std::size_t slavic_word_letters = 6;

bool cuts_words(std::string_view language) {
  return std::find(slavic_languages.begin(), slavic_languages.end(), language) !=
         slavic_languages.end();
}

// `text` cut after `letters` code points (UTF-8).
void keep_letters(std::string& text, std::size_t letters) {
  std::size_t at = 0;
  for (std::size_t seen = 0; at < text.size() && seen < letters; ++seen)
    do
      ++at;
    while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80);
  text.resize(at);
}

struct stemmer_free {
  void operator()(sb_stemmer* s) const { sb_stemmer_delete(s); }
};

// `lower` stemmed in `language`, or unchanged without a stemmer. A Snowball stemmer keeps its
// state between calls, so each thread has its own, made on first use.
std::string stem(std::string_view lower, std::string_view language) {
  const char* name = snowball_name(language);
  if (!name)
    return std::string(lower);
  thread_local std::map<std::string_view, std::unique_ptr<sb_stemmer, stemmer_free>> stemmers;
  auto& s = stemmers[name];
  if (!s)
    s.reset(sb_stemmer_new(name, "UTF_8"));
  if (!s)
    return std::string(lower);
  const auto* out = sb_stemmer_stem(s.get(), reinterpret_cast<const sb_symbol*>(lower.data()),
                                    static_cast<int>(lower.size()));
  if (!out) // out of memory
    return std::string(lower);
  return std::string(reinterpret_cast<const char*>(out),
                     static_cast<std::size_t>(sb_stemmer_length(s.get())));
}

// The stop words of each language that has a list, each entry as written and folded (a title
// written without its accents still has them), built once.
using stop_set = std::unordered_set<std::string>;

const stop_set* stop_words_of(std::string_view language) {
  static const std::map<std::string, stop_set, std::less<>> sets = [] {
    std::map<std::string, stop_set, std::less<>> out;
    for (const auto& list : stop_word_lists()) {
      auto& set = out[std::string(list.language)];
      std::string_view text = list.words;
      while (!text.empty()) {
        const auto end = text.find('\n');
        auto line = text.substr(0, end);
        text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
        while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
          line.remove_suffix(1);
        if (line.empty() || line.front() == '#')
          continue;
        set.insert(lower_text(line));
        set.insert(fold_text(line));
      }
    }
    return out;
  }();
  auto it = sets.find(language);
  return it == sets.end() ? nullptr : &it->second;
}

// Scripts written without spaces between words, which ICU's dictionaries cut into words: Thai,
// Lao, Myanmar, Khmer, and CJK (Han, kana, their compatibility and extension blocks).
bool unspaced_script(char32_t c) {
  return (c >= 0x0E00 && c <= 0x0EFF) || (c >= 0x1000 && c <= 0x109F) ||
         (c >= 0x1780 && c <= 0x17FF) || (c >= 0x2E80 && c <= 0x31FF) ||
         (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0xFF66 && c <= 0xFF9F) ||
         (c >= 0x20000 && c <= 0x3FFFF);
}

bool hangul(char32_t c) {
  return (c >= 0xAC00 && c <= 0xD7A3) || (c >= 0x1100 && c <= 0x11FF) ||
         (c >= 0x3130 && c <= 0x318F);
}

// Korean particles (josa) and the copula's common forms, as they end an eojeol: "지진이",
// "지진으로", "지진에서는" are all "지진". The longest that leaves a word of two syllables or
// more is taken off (one syllable left is more often a word that merely ends like a particle).
constexpr std::array<std::string_view, 42> korean_particles{
    "에서부터", "으로부터", "에게서", "에서는", "에서도", "으로는", "으로도", "이라는", "이라고",
    "이라며",   "에서",     "에게",   "한테",   "으로",   "부터",   "까지",   "보다",   "처럼",
    "만큼",     "마저",     "조차",   "이나",   "이란",   "라는",   "라고",   "라며",   "에는",
    "에도",     "와는",     "과는",   "이다",   "은",     "는",     "이",     "가",     "을",
    "를",       "의",       "에",     "로",     "와",     "과"};

std::size_t syllables(std::string_view hangul_word) {
  return hangul_word.size() / 3; // Hangul syllables are three bytes each in UTF-8
}

std::string_view without_particle(std::string_view eojeol) {
  for (auto particle : korean_particles)
    if (eojeol.size() > particle.size() && eojeol.ends_with(particle) &&
        syllables(eojeol.substr(0, eojeol.size() - particle.size())) >= 2)
      return eojeol.substr(0, eojeol.size() - particle.size());
  return eojeol;
}

// The value of digit `c` (any script's), or -1.
int digit_value(char32_t c) {
  if (c >= '0' && c <= '9')
    return static_cast<int>(c - '0');
  return u_charDigitValue(static_cast<UChar32>(c));
}

// A number's digits and separators as one word: separators followed by exactly three digits
// group thousands ("1,000", "1.000", "1 000" all read 1000); the last other one is the decimal
// point ("7,1" and "7.1" both read 7.1).
std::string normalised_number(const std::u32string& chars) {
  std::vector<std::string> groups(1);
  std::vector<char32_t> separators;
  for (char32_t c : chars) {
    const int d = digit_value(c);
    if (d >= 0) {
      groups.back() += static_cast<char>('0' + d);
    } else {
      separators.push_back(c);
      groups.emplace_back();
    }
  }
  std::string out = groups[0];
  for (std::size_t i = 1; i < groups.size(); ++i) {
    const bool thousands =
        groups[i].size() == 3 && (separators.size() == 1 ||
                                  std::all_of(separators.begin(), separators.end(),
                                              [&](char32_t s) { return s == separators[0]; }) ||
                                  i + 1 < groups.size());
    if (!thousands)
      out += '.';
    out += groups[i];
  }
  return out;
}

// How many of `chars` are digits (the rest are separators).
std::size_t run_digits(const std::u32string& chars) {
  return static_cast<std::size_t>(
      std::count_if(chars.begin(), chars.end(), [](char32_t c) { return digit_value(c) >= 0; }));
}

// What a word as written reads as in a language, all of word but its capitals: the costly part
// (case folding and accents through utf8proc, the stop-word list, the Snowball stemmer).
// `folded` empty: the word is left out (nothing left after folding, or over max_word_bytes).
struct reading {
  std::string text;
  std::string folded;
  bool stop = false;
};

// Not noexcept on purpose: libstdc++ then keeps each key's hash in its node, so a lookup walking
// a bucket compares hashes before strings, and rehashing never hashes a key again.
struct string_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// Readings kept per thread, keyed by language and word: headlines repeat their words (a stream's
// commonest few thousand make most of its words), and stemming one costs as much as the rest of
// reading a title. Emptied when full: at most ~200 bytes an entry, so ~3 MB per thread that
// reads words, and what is common is back after a few titles.
constexpr std::size_t max_cached_readings = 16384;

std::unordered_map<std::string, reading, string_hash, std::equal_to<>>& readings() {
  thread_local std::unordered_map<std::string, reading, string_hash, std::equal_to<>> cache;
  return cache;
}

// Cuts words out of a text; one instance per call.
class splitter {
 public:
  splitter(std::string_view language, std::vector<word>& out)
      : language_(language)
      , stops_(stop_words_of(language))
      , stems_(snowball_name(language) != nullptr)
      , cuts_(cuts_words(language))
      , out_(out) {}

  void split(std::string_view text) {
    const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
    const auto size = static_cast<utf8proc_ssize_t>(text.size());
    utf8proc_ssize_t at = 0;
    std::size_t start = 0;
    bool in_run = false;
    bool number = false; // the run so far is digits and separators
    bool unspaced = false;
    bool korean = false;
    bool after_digit = false;
    std::u32string digits;
    auto finish = [&](std::size_t end) {
      if (in_run)
        run(text.substr(start, end - start), number, unspaced, korean, digits);
      in_run = false;
    };
    while (at < size) {
      utf8proc_int32_t c = 0;
      auto n = utf8proc_iterate(p + at, size - at, &c);
      const bool valid = n > 0;
      if (!valid)
        n = 1;
      const auto ch = static_cast<char32_t>(c);
      const bool ascii = ch < 0x80; // most characters of most titles: no table lookups
      const bool word_character =
          valid && (ascii ? (ch >= '0' && ch <= '9') || ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'z')
                          : is_word_character(ch));
      if (word_character) {
        const bool digit = ascii ? ch >= '0' && ch <= '9' : digit_value(ch) >= 0;
        if (in_run && number && !digit && digits.size() != run_digits(digits))
          finish(static_cast<std::size_t>(at)); // "1,5km": the number, then the word
        if (!in_run) {
          in_run = true;
          start = static_cast<std::size_t>(at);
          number = digit;
          unspaced = korean = false;
          digits.clear();
        }
        number = number && digit;
        unspaced = unspaced || (!ascii && unspaced_script(ch));
        korean = korean || (!ascii && hangul(ch));
        if (number)
          digits += ch;
        after_digit = digit;
        at += n;
        continue;
      }
      // A separator between digits stays inside the number: of a run of digits, or of a run ICU
      // cuts ("发生5.2级": ICU keeps "5.2" one word). Arabic writes U+066B and U+066C for them.
      utf8proc_int32_t next = -1;
      if (valid && in_run && after_digit && (number || unspaced) &&
          (c == ',' || c == '.' || c == 0x066B || c == 0x066C) && at + n < size)
        utf8proc_iterate(p + at + n, size - at - n, &next);
      if (next >= 0 && digit_value(static_cast<char32_t>(next)) >= 0) {
        if (number)
          digits += ch;
      } else {
        finish(static_cast<std::size_t>(at));
      }
      after_digit = false;
      at += n;
    }
    finish(text.size());
  }

 private:
  void run(std::string_view text, bool number, bool unspaced, bool korean,
           const std::u32string& digits) {
    if (number) {
      add_number(normalised_number(digits));
    } else if (unspaced) {
      segment(text);
    } else if (korean) {
      add(without_particle(text));
    } else {
      add(text);
    }
  }

  void add_number(std::string digits) {
    if (digits.empty() || digits.size() > max_word_bytes)
      return;
    word w;
    w.text = digits;
    w.folded = std::move(digits);
    w.number = true;
    out_.push_back(std::move(w));
  }

  void add(std::string_view raw) {
    if (raw.empty() || raw.size() > 2 * max_word_bytes)
      return;
    const auto& r = reading_of(raw);
    if (r.folded.empty())
      return;
    word w;
    capitals(raw, w);
    w.text = r.text;
    w.folded = r.folded;
    w.stop = r.stop;
    out_.push_back(std::move(w));
  }

  // What `raw` reads as in the splitter's language, from the thread's cache or worked out.
  const reading& reading_of(std::string_view raw) {
    auto& cache = readings();
    key_.assign(language_).append(1, '\x1f').append(raw);
    if (auto it = cache.find(key_); it != cache.end())
      return it->second;
    if (cache.size() >= max_cached_readings)
      cache.clear();
    return cache.emplace(key_, read(raw)).first->second;
  }

  reading read(std::string_view raw) const {
    reading r;
    auto lower = lower_text(raw);
    r.folded = fold_text(lower);
    if (r.folded.size() > max_word_bytes) {
      r.folded.clear(); // left out
      return r;
    }
    if (r.folded.empty())
      return r;
    r.stop = stops_ &&
             (stops_->count(lower) != 0 || (r.folded != lower && stops_->count(r.folded) != 0));
    r.text = stems_ ? fold_text(stem(lower, language_)) : r.folded;
    if (r.text.empty())
      r.text = r.folded;
    if (cuts_)
      keep_letters(r.text, slavic_word_letters);
    return r;
  }

  static void capitals(std::string_view raw, word& w) {
    if (std::all_of(raw.begin(), raw.end(), [](char c) { return (c & 0x80) == 0; })) {
      w.capitalised = raw.front() >= 'A' && raw.front() <= 'Z';
      w.all_capitals =
          std::none_of(raw.begin(), raw.end(), [](char c) { return c >= 'a' && c <= 'z'; });
      return;
    }
    const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(raw.data());
    const auto size = static_cast<utf8proc_ssize_t>(raw.size());
    w.all_capitals = true;
    bool first = true;
    for (utf8proc_ssize_t at = 0; at < size;) {
      utf8proc_int32_t c = 0;
      auto n = utf8proc_iterate(p + at, size - at, &c);
      if (n <= 0)
        break;
      const auto category = utf8proc_category(c);
      if (first)
        w.capitalised = category == UTF8PROC_CATEGORY_LU || category == UTF8PROC_CATEGORY_LT;
      if (category == UTF8PROC_CATEGORY_LL)
        w.all_capitals = false;
      first = false;
      at += n;
    }
  }

  // A run in a script without spaces, cut by ICU's dictionary word breaker. The breaker is made
  // once per thread (loading its rules and dictionaries costs milliseconds) and reads the UTF-8
  // text in place, through a UText reused for every run.
  struct word_breaker {
    std::unique_ptr<icu::BreakIterator> iterator;
    UText* text = nullptr;
    word_breaker() {
      UErrorCode error = U_ZERO_ERROR;
      iterator.reset(icu::BreakIterator::createWordInstance(icu::Locale::getRoot(), error));
      if (U_FAILURE(error))
        iterator.reset();
    }
    ~word_breaker() {
      iterator.reset();
      if (text)
        utext_close(text);
    }
    word_breaker(const word_breaker&) = delete;
    word_breaker& operator=(const word_breaker&) = delete;
  };

  void segment(std::string_view text) {
    thread_local word_breaker breaker;
    UErrorCode error = U_ZERO_ERROR;
    if (breaker.iterator)
      breaker.text =
          utext_openUTF8(breaker.text, text.data(), static_cast<int64_t>(text.size()), &error);
    if (!breaker.iterator || U_FAILURE(error)) { // ICU's data missing: the run as one word
      add(text);
      return;
    }
    auto& it = *breaker.iterator;
    it.setText(breaker.text, error);
    std::int32_t start = it.first();
    for (std::int32_t end = it.next(); end != icu::BreakIterator::DONE;
         start = end, end = it.next()) {
      const auto status = it.getRuleStatus();
      if (status < UBRK_WORD_NONE_LIMIT)
        continue;
      const auto piece =
          text.substr(static_cast<std::size_t>(start), static_cast<std::size_t>(end - start));
      auto chars = decode(piece);
      if (status < UBRK_WORD_NUMBER_LIMIT && run_digits(chars) > 0 &&
          std::all_of(chars.begin(), chars.end(),
                      [](char32_t c) { return digit_value(c) >= 0 || c == ',' || c == '.'; }))
        add_number(normalised_number(chars));
      else
        add(piece);
    }
  }

  static std::u32string decode(std::string_view text) {
    std::u32string out;
    const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
    const auto size = static_cast<utf8proc_ssize_t>(text.size());
    for (utf8proc_ssize_t at = 0; at < size;) {
      utf8proc_int32_t c = 0;
      auto n = utf8proc_iterate(p + at, size - at, &c);
      if (n <= 0)
        break;
      out += static_cast<char32_t>(c);
      at += n;
    }
    return out;
  }

  std::string_view language_;
  const stop_set* stops_;
  bool stems_;
  bool cuts_; // a Slavic language: words are their first letters (slavic_word_letters)
  std::vector<word>& out_;
  std::string key_; // the cache's key for a word: language, U+001F, the word as written
};

} // namespace

std::vector<word> words_of(std::string_view text, std::string_view language) {
  std::vector<word> out;
  // About a title's words at once: grown by doubling, the vector made most of the allocations of
  // reading a title.
  out.reserve(text.size() / 6 + 2);
  splitter split(language, out);
  if (std::all_of(text.begin(), text.end(), [](char c) { return (c & 0x80) == 0; })) {
    split.split(text); // ASCII has no compatibility forms: no copy to make
  } else {
    split.split(compatible_text(text));
  }
  return out;
}

std::vector<std::string_view> stemming_languages() {
  std::vector<std::string_view> out;
  for (const auto& [code, name] : snowball_names)
    out.push_back(code);
  return out;
}

bool has_stop_words(std::string_view language) {
  return stop_words_of(language) != nullptr;
}

} // namespace newsdesk::server::words

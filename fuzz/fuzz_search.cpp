// libFuzzer target: words per language and search by words (server/words/, server/news/search.hpp)
// on arbitrary bytes, as q= and scraped titles arrive.
//
// Checked: nothing throws or crashes; folded text and every word are valid UTF-8, and no word is
// empty, in several languages; a language is decided for any bytes; a text always matches its
// own words; and a query (the bytes before the first NUL) against a title (the rest) answers
// without failing.
#include "server/news/search.hpp"
#include "server/words/fold.hpp"
#include "server/words/language.hpp"

#include <utf8proc.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace {

void require(bool ok) {
  if (!ok)
    std::abort();
}

bool valid_utf8(std::string_view text) {
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  utf8proc_ssize_t at = 0;
  const auto size = static_cast<utf8proc_ssize_t>(text.size());
  while (at < size) {
    utf8proc_int32_t c = 0;
    auto n = utf8proc_iterate(p + at, size - at, &c);
    if (n <= 0)
      return false;
    at += n;
  }
  return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace newsdesk::server;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  require(valid_utf8(words::fold_text(text)));
  for (const char* language : {"", "en", "de", "ja", "ko", "ar"}) {
    for (const auto& w : words::words_of(text, language))
      require(!w.text.empty() && valid_utf8(w.text) && !w.folded.empty() && valid_utf8(w.folded));
    (void)words::headline_language(language, text, text);
  }
  const search_query query(text);
  for (const auto& w : query.words())
    require(!w.empty() && valid_utf8(w));
  require(query.matches(text, "") && query.matches(text, "de"));

  const auto nul = text.find('\0');
  if (nul != std::string_view::npos)
    (void)search_query(text.substr(0, nul)).matches(text.substr(nul + 1), "en");
  return 0;
}

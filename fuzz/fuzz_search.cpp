// libFuzzer target: words per language and search by words (server/words/, server/news/search.hpp)
// on arbitrary bytes, as q= and scraped titles arrive.
//
// Checked: nothing throws or crashes; folded text and every word are valid UTF-8, and no word is
// empty, in several languages; a language is decided for any bytes; a text always matches its
// own words; and a query (the bytes before the first NUL) against a title (the rest) answers
// without failing.
#include "server/core/utf8.hpp"
#include "server/news/search.hpp"
#include "server/words/fold.hpp"
#include "server/words/language.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace {

void require(bool ok) {
  if (!ok)
    std::abort();
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

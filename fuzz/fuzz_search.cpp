// libFuzzer target: search by words (server/news/search.hpp) on arbitrary bytes, as q= and
// scraped titles arrive.
//
// Checked: nothing throws or crashes; folded text and every word are valid UTF-8, and no word is
// empty; a text always matches its own words; and a query (the bytes before the first NUL)
// against a title (the rest) answers without failing.
#include "server/news/search.hpp"

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
  require(valid_utf8(fold_text(text)));
  const auto words = search_words(text);
  for (const auto& w : words)
    require(!w.empty() && valid_utf8(w));
  require(title_matches(words, text));

  const auto nul = text.find('\0');
  if (nul != std::string_view::npos)
    (void)title_matches(search_words(text.substr(0, nul)), text.substr(nul + 1));
  return 0;
}

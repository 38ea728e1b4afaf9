// Site files: scrapers declared in a small JSON file instead of C++.
//
// A site file names a site (as site_info does) and a rule: a CSS selector for the headline
// links, an optional selector for the title inside each link, the attribute that holds the URL,
// and optional include/exclude filters on the resolved URL. The format, every field and a worked
// example are in docs/site-files.md. A loaded site file is an ordinary `scraper`: the rest of
// newsdesk cannot tell it from a built-in one, and it obeys the same contract (pure, thread-safe,
// never throws from extract()); headlines go through headline_collector like everyone else's.
//
// Errors: everything that reads a file throws site_file_error, whose message names the file,
// the field and what is wrong:
//   sites/bbc.json: link: bad selector "a[" at column 3: expected attribute name
#pragma once

#include "scrapers/headlines.hpp"
#include "scrapers/registry.hpp"
#include "scrapers/scraper.hpp"

#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace newsdesk::scrapers {

// The largest site file accepted, in bytes. A site file is a dozen lines (about 1 KB); the limit
// stops a wrong path (a log, a page saved as .json) from being read into memory and parsed.
inline constexpr std::size_t max_site_file_bytes = 64 * 1024;

// A section's name is a chip's label: a few words ("Science and technology" is 22 bytes).
inline constexpr std::size_t max_section_bytes = 40;

// The longest regex source accepted in include/exclude. std::regex compiles patterns to an NFA
// whose size grows with the pattern; real URL patterns are under 100 characters.
inline constexpr std::size_t max_regex_length = 256;

// URLs longer than this are dropped before the filters run. libstdc++'s std::regex matches by
// recursion, one stack frame per input character for patterns like `.*`, so an unbounded URL
// could overflow a worker thread's stack; real article URLs are under 300 bytes.
inline constexpr std::size_t max_filtered_url_bytes = 2048;

// The most link-selector matches one page is read for. Each match costs its title search and
// text collection (O(its subtree)), which is linear over a page only while matches do not nest
// (true for `a` elements, which HTML parsing never nests); the cap bounds the cost of a careless
// selector such as `div` on deeply nested markup. Real pages have 20-1,000 matches.
inline constexpr std::size_t max_link_matches = 10000;

// Thrown for an unreadable, oversized or invalid site file or folder.
class site_file_error : public std::runtime_error {
 public:
  // what() is "<file>: <field>: <reason>", or "<file>: <reason>" when `field` is empty.
  site_file_error(std::filesystem::path file, std::string field, std::string reason);

  const std::filesystem::path& file() const { return file_; }
  // Dotted path of the offending field ("link", "include.prefix[1]"); empty when the file as a
  // whole is wrong (not JSON, too large, unreadable).
  const std::string& field() const { return field_; }
  const std::string& reason() const { return reason_; }

 private:
  std::filesystem::path file_;
  std::string field_;
  std::string reason_;
};

// Builds a scraper from the JSON text of a site file. `file` is used in error messages and
// becomes the site's origin (site_info::origin); it is not read. Throws site_file_error.
std::unique_ptr<scraper> parse_site_file(std::string_view json_text,
                                         const std::filesystem::path& file);

// Reads and parses one site file. Throws site_file_error (including for files larger than
// max_site_file_bytes, which are not read).
std::unique_ptr<scraper> load_site_file(const std::filesystem::path& file);

// Loads every `*.json` file directly in `dir` (not subfolders; names starting with "." are
// skipped as editor leftovers), in file-name order, and adds them to `r`. Stops at the first
// error and throws site_file_error; scrapers added before the error stay in `r`. A site name
// already in `r` is an error naming both: "sites/cnn.json: name: "cnn" is already taken by the
// built-in scraper CNN" or "... by sites/cnn2.json". A missing folder is an error too.
void load_site_folder(const std::filesystem::path& dir, registry& r);

// The site files load_site_folder reads from `dir`: its `*.json` regular files, not in
// subfolders, names starting with "." skipped, in file-name order. Throws site_file_error when
// `dir` is not a readable folder.
std::vector<std::filesystem::path> site_files_in(const std::filesystem::path& dir);

// Validates every site file in `dir` as load_site_folder would on top of the built-in scrapers,
// without stopping at the first problem: returns one message per error (empty when everything
// is fine), in file-name order.
std::vector<std::string> check_site_folder(const std::filesystem::path& dir);

// What a site file finds on a page, with the reasons links were left out, for iterating on a
// rule (`newsdesk --try-site FILE --html PAGE`).
struct site_trial {
  site_info site;
  // How the headlines were found: "selectors", "detection" (a file without rules),
  // "detection (the selectors matched nothing)", "feed" or "built-in scraper (FILE)".
  std::string method;

  std::size_t link_matches = 0;    // elements the link selector matched (up to max_link_matches)
  std::size_t without_url = 0;     // no url_attribute, or it does not resolve to http(s)
  std::size_t without_title = 0;   // the title selector found nothing, or the text was empty
  std::size_t filtered_out = 0;    // rejected by include/exclude (or URL over the filter limit)
  std::size_t duplicates = 0;      // a URL already collected (or over max_headlines_per_site)
  std::size_t bad_titles = 0;      // a title of one word (titles.hpp), or empty once cleaned
  std::vector<headline> headlines; // exactly what /news shows for this page
  // Every link left out and why, in page order: for selectors, the matches refused (no URL,
  // no title, filtered, duplicate, bad title); for detection, every link of the page not kept,
  // with the furniture rule, bad title, duplicate or score that kept it out.
  std::vector<left_out_link> left_out;
  // When a link selector matched only elements that hold links (not links), what to change:
  // "link: 'h3.title' matched 12 elements but none is a link (an <a href>); they contain
  // links: try 'h3.title a'". Empty otherwise.
  std::string hint;
};

// Runs scraper `s` (a site file, a feed or a built-in) on `html` as the service would; the counts
// are filled for site files with selectors, and for a feed, the hint is what the reader would
// warn about (recovered XML, a wrong encoding label). The page URL used to resolve relative links
// is `page_url`, or the site's own url when it is empty; `content_type` the Content-Type the page
// came with, if known (a feed's charset).
site_trial try_scraper(const scraper& s, std::string_view html, std::string_view page_url = {},
                       std::string_view content_type = {});

// Loads `file` (throws site_file_error) and tries it: try_scraper(*load_site_file(file), ...).
site_trial try_site_file(const std::filesystem::path& file, std::string_view html,
                         std::string_view page_url = {});

// The headlines alone: try_site_file(...).headlines.
std::vector<headline> try_site(const std::filesystem::path& file, std::string_view html,
                               std::string_view page_url = {});

} // namespace newsdesk::scrapers

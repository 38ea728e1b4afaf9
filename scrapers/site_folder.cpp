// Site folders: every site file of a folder loaded into a registry, or only checked (for
// --check-scrapers); a site's name is taken once, by whoever took it first.
#include "scrapers/site_file.hpp"

#include "scrapers/registry.hpp"
#include "scrapers/scraper.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <system_error>
#include <utility>

namespace newsdesk::scrapers {
namespace {

using json = nlohmann::json;

// Adds `s` to `r`, or throws naming whoever has the name already.
void add_site(registry& r, std::unique_ptr<scraper> s, const std::filesystem::path& file) {
  if (const scraper* taken = r.find(s->site().name)) {
    const site_info& other = taken->site();
    std::string by = !other.origin.empty() ? other.origin
                                           : "the built-in scraper " + other.display_name + " (" +
                                                 origin_of(other) + ")";
    throw site_file_error(file, "name", json(s->site().name).dump() + " is already taken by " + by);
  }
  r.add(std::move(s));
}

} // namespace

void load_site_folder(const std::filesystem::path& dir, registry& r) {
  for (const std::filesystem::path& file : site_files_in(dir)) {
    add_site(r, load_site_file(file), file);
  }
}

std::vector<std::filesystem::path> site_files_in(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw site_file_error(dir, "",
                          std::filesystem::exists(dir, ec) ? "not a folder" : "no such folder");
  }
  std::vector<std::filesystem::path> files;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) {
    throw site_file_error(dir, "", "cannot list folder: " + ec.message());
  }
  for (const auto& entry : it) {
    const std::filesystem::path& p = entry.path();
    std::string name = p.filename().string();
    if (p.extension() != ".json" || name.starts_with(".")) {
      continue;
    }
    std::error_code type_ec;
    if (entry.is_regular_file(type_ec)) {
      files.push_back(p);
    }
  }
  std::sort(files.begin(), files.end(),
            [](const auto& a, const auto& b) { return a.filename() < b.filename(); });
  return files;
}

std::vector<std::string> check_site_folder(const std::filesystem::path& dir) {
  std::vector<std::string> errors;
  std::vector<std::filesystem::path> files;
  try {
    files = site_files_in(dir);
  } catch (const site_file_error& e) {
    errors.push_back(e.what());
    return errors;
  }
  registry r;
  register_builtin_scrapers(r);
  for (const std::filesystem::path& file : files) {
    try {
      add_site(r, load_site_file(file), file);
    } catch (const site_file_error& e) {
      errors.push_back(e.what());
    }
  }
  return errors;
}

} // namespace newsdesk::scrapers

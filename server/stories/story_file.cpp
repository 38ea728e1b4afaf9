#include "server/stories/story_file.hpp"

#include "server/core/utf8.hpp"
#include "server/stories/story_assigner.hpp"
#include "server/words/language.hpp"

#include <array>
#include <charconv>
#include <fstream>
#include <optional>
#include <ostream>
#include <unordered_map>

namespace newsdesk::server::stories {

namespace {

// Appends c unless the record already failed (then its fields are dropped anyway).
void append_unless_failed(std::string& field, char c, const std::string& error) {
  if (error.empty())
    field += c;
}

constexpr std::array<const char*, 5> required = {"ID", "TITLE", "URL", "HOSTNAME", "TIMESTAMP"};
enum column { id_column, title_column, url_column, host_column, time_column };

// Where each required column is in the header, or a message naming the first one missing.
std::optional<std::array<std::size_t, 5>> find_columns(std::vector<std::string> header,
                                                       std::string& error) {
  if (!header.empty() && header[0].rfind("\xEF\xBB\xBF", 0) == 0)
    header[0].erase(0, 3); // a byte-order mark
  std::array<std::size_t, 5> at{};
  for (std::size_t k = 0; k < required.size(); ++k) {
    std::size_t i = 0;
    while (i < header.size() && header[i] != required[k])
      ++i;
    if (i == header.size()) {
      error = std::string("the header has no column ") + required[k];
      return std::nullopt;
    }
    at[k] = i;
  }
  return at;
}

// The row's headline fields, or a message saying what is wrong with it.
std::optional<story_headline> read_row(const std::vector<std::string>& fields,
                                       const std::array<std::size_t, 5>& at, std::string& error) {
  for (std::size_t k = 0; k < at.size(); ++k) {
    if (at[k] >= fields.size()) {
      error = std::string("no ") + required[k] + " field (the row has " +
              std::to_string(fields.size()) + " fields)";
      return std::nullopt;
    }
    if (!valid_utf8(fields[at[k]])) {
      error = std::string(required[k]) + " is not valid UTF-8";
      return std::nullopt;
    }
  }
  const auto& time = fields[at[time_column]];
  story_headline h;
  auto [end, ec] = std::from_chars(time.data(), time.data() + time.size(), h.time_ms);
  if (time.empty() || ec != std::errc() || end != time.data() + time.size()) {
    error = "TIMESTAMP \"" + time.substr(0, 40) + "\" is not a whole number of milliseconds";
    return std::nullopt;
  }
  if (fields[at[id_column]].empty()) {
    error = "the ID is empty";
    return std::nullopt;
  }
  h.title = fields[at[title_column]];
  h.url = fields[at[url_column]];
  h.site = fields[at[host_column]];
  return h;
}

} // namespace

bool csv_reader::next(std::vector<std::string>& fields, std::string& error) {
  error.clear();
  start_line_ = line_;
  // Characters straight from the stream's buffer: istream::get() per character builds a sentry
  // each time, and reading a large file cost more than assigning its headlines.
  auto& in = *in_.rdbuf();
  constexpr auto eof = std::char_traits<char>::eof();
  if (in.sgetc() == eof) {
    fields.clear();
    return false;
  }
  // The fields are read into the strings `fields` already has, so that a file's records reuse
  // one record's memory.
  std::size_t count = 0;
  auto start_field = [&]() {
    if (count == fields.size())
      fields.emplace_back();
    auto* field = &fields[count++];
    field->clear();
    return field;
  };
  auto* field = start_field();
  std::size_t bytes = 0;
  bool quoted = false;
  bool was_quoted = false;
  for (;;) {
    const int c = in.sbumpc();
    if (c == eof) {
      if (quoted)
        error = "a quoted field is never closed";
      break;
    }
    if (++bytes > max_record_bytes && error.empty())
      error = "the record is over " + std::to_string(max_record_bytes) + " bytes";
    if (c == '\n')
      ++line_;
    if (quoted) {
      if (c == '"') {
        if (in.sgetc() == '"') {
          in.sbumpc();
          append_unless_failed(*field, '"', error);
        } else {
          quoted = false;
        }
      } else {
        append_unless_failed(*field, static_cast<char>(c), error);
      }
      continue;
    }
    if (c == '"' && field->empty() && !was_quoted) {
      quoted = was_quoted = true;
    } else if (c == ',') {
      field = start_field();
      was_quoted = false;
    } else if (c == '\n') {
      break;
    } else if (c != '\r') {
      append_unless_failed(*field, static_cast<char>(c), error);
    }
  }
  fields.resize(count);
  return true;
}

int assign_story_file(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.size() != 1) {
    err << "usage: newsdesk --stories FILE.csv  (columns ID,TITLE,URL,HOSTNAME,TIMESTAMP)\n";
    return 2;
  }
  const auto& path = args[0];
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    err << "newsdesk --stories: cannot read " << path << "\n";
    return 2;
  }
  csv_reader reader(in);
  std::vector<std::string> fields;
  std::string error;
  if (!reader.next(fields, error) || !error.empty()) {
    err << path << ":1: no header" << (error.empty() ? "" : ": " + error) << "\n";
    return 2;
  }
  const auto at = find_columns(fields, error);
  if (!at) {
    err << path << ":1: " << error << "\n";
    return 2;
  }

  // An optional LANG column declares each row's language, as a site declares its own.
  std::optional<std::size_t> lang_at;
  for (std::size_t i = 0; i < fields.size(); ++i)
    if (fields[i] == "LANG")
      lang_at = i;

  // Rows are numbered 1, 2, ... as the assigner's headline ids; a story is named by the ID of
  // the row that started it. The whole stream's merges are applied before printing.
  story_assigner assigner;
  std::string language;
  std::vector<std::string> ids;
  std::vector<std::int64_t> story_of;
  std::unordered_map<std::int64_t, std::int64_t> merged_into;
  std::vector<story_merge> merges;
  int status = 0;
  while (reader.next(fields, error)) {
    auto row = error.empty() ? read_row(fields, *at, error) : std::nullopt;
    if (!row) {
      err << path << ":" << reader.line() << ": row left out: " << error << "\n";
      status = 1;
      continue;
    }
    row->id = static_cast<std::int64_t>(ids.size()) + 1;
    const auto declared =
        lang_at && *lang_at < fields.size() ? std::string_view(fields[*lang_at]) : "";
    language = words::headline_language(declared, row->title, row->url);
    row->language = language;
    merges.clear();
    story_of.push_back(assigner.assign(*row, merges));
    for (const auto& m : merges)
      merged_into[m.from] = m.into;
    ids.push_back(std::move(fields[(*at)[id_column]]));
  }
  // Written in large blocks: `out` may be line-buffered (the process's stdout is), and a write
  // per line cost more than the rest of printing.
  std::string block;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    auto story = story_of[i];
    for (auto it = merged_into.find(story); it != merged_into.end(); it = merged_into.find(story))
      story = it->second;
    block.append(ids[i])
        .append(1, '\t')
        .append(ids[static_cast<std::size_t>(story) - 1])
        .append(1, '\n');
    if (block.size() >= 64 * 1024 || i + 1 == ids.size()) {
      out.write(block.data(), static_cast<std::streamsize>(block.size()));
      block.clear();
    }
  }
  out.flush();
  return status;
}

} // namespace newsdesk::server::stories

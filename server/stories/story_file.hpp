// `newsdesk --stories FILE.csv`: the service's story assignment run on any headlines, to judge
// it on labelled data. The file is CSV (RFC 4180: quoted fields may hold commas, quotes and line
// breaks) with a header naming at least the columns ID, TITLE, URL, HOSTNAME and TIMESTAMP
// (milliseconds since the epoch), and optionally LANG (the language the row's site declares, as
// a tag: "de", "pt-BR"; empty or absent: detected from the title); other columns are ignored.
// Rows arrive in file order, each assigned as the service assigns a headline first seen at
// TIMESTAMP on site HOSTNAME.
//
// Prints one line per accepted row, in file order, once the whole file is read: ID, a tab, and
// the row's story, named by the ID of the row that started it (after the merges the whole
// stream made).
//
// A row that cannot be read (a missing field, a TITLE or URL that is not UTF-8, a TIMESTAMP that
// is not a number, a record over max_record_bytes) is left out with a message on `err` naming
// its line; the other rows are assigned as if it had not been there. Exit status: 0 when every
// row was read, 1 when some were left out, 2 when the file cannot be used at all (unreadable,
// no header, a required column missing).
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

namespace newsdesk::server::stories {

inline constexpr std::size_t max_record_bytes = 64 * 1024;

// One CSV record at a time from a stream (RFC 4180), with the line it started on.
class csv_reader {
 public:
  explicit csv_reader(std::istream& in)
      : in_(in) {}

  // The next record's fields; false at the end of the input. A record over max_record_bytes or
  // with a quote never closed sets `error` (its fields are then not to be used).
  bool next(std::vector<std::string>& fields, std::string& error);

  std::size_t line() const { return start_line_; }

 private:
  std::istream& in_;
  std::size_t line_ = 1;
  std::size_t start_line_ = 1;
};

int assign_story_file(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

} // namespace newsdesk::server::stories
